// The forward wire format's base64 (node/runtime_service.h): RFC 4648
// vectors, round trips, malformed text.
#include <gtest/gtest.h>

#include "node/runtime_service.h"

namespace tenzro::node {
namespace {

TEST(RuntimeServiceTest, Base64RoundTrip) {
  for (size_t n : {0, 1, 2, 3, 4, 5, 100}) {
    Bytes b(n);
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 37 + 5);
    const std::string s = Base64Encode(ByteSpan(b));
    EXPECT_EQ(s.size() % 4, 0u);
    auto d = Base64Decode(s);
    ASSERT_TRUE(d) << s;
    EXPECT_EQ(*d, b);
  }
  EXPECT_EQ(Base64Encode(ByteSpan(reinterpret_cast<const uint8_t*>("foobar"), 6)), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode(ByteSpan(reinterpret_cast<const uint8_t*>("fo"), 2)), "Zm8=");
  EXPECT_FALSE(Base64Decode("Zm8"));
  EXPECT_FALSE(Base64Decode("Zm=8"));
  EXPECT_FALSE(Base64Decode("Z!8="));
}

}  // namespace
}  // namespace tenzro::node
