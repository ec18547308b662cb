// runtime/wire_rows.h: the one rounding the exec frame and the all-local MoE
// path share. RoundWireRows is exactly Decode(Encode()); sizes; q8_0's row
// length rule; non-finite q8_0 scales refused; and the bytes per token per
// layer quoted in docs/dispatch.md for the Qwen3.5-122B shape.
#include "runtime/wire_rows.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace tenzro::runtime {
namespace {

constexpr WireDtype kAll[] = {WireDtype::kF32, WireDtype::kBf16, WireDtype::kF16, WireDtype::kQ8_0};

std::vector<float> Rows(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = nd(rng);
  x[7] = 40.0f;  // an outlier, as hidden states have
  return x;
}

TEST(WireRowsTest, RoundIsExactlyEncodeThenDecode) {
  for (WireDtype t : kAll) {
    const std::vector<float> x = Rows(3 * 256, 5);
    std::vector<uint8_t> wire(WireBytes(t, x.size()));
    EncodeWireRows(t, x.data(), x.size(), wire.data());
    std::vector<float> decoded(x.size());
    ASSERT_TRUE(DecodeWireRows(t, wire.data(), x.size(), decoded.data()));
    std::vector<float> rounded = x;
    RoundWireRows(t, rounded.data(), rounded.size());
    EXPECT_EQ(std::memcmp(rounded.data(), decoded.data(), x.size() * 4), 0) << WireDtypeName(t);
    if (t == WireDtype::kF32) EXPECT_EQ(rounded, x);
    else EXPECT_NE(rounded, x) << WireDtypeName(t);
  }
}

TEST(WireRowsTest, NamesSizesAndTheQ8RowRule) {
  for (WireDtype t : kAll) EXPECT_EQ(*ParseWireDtype(WireDtypeName(t)), t);
  EXPECT_FALSE(ParseWireDtype("Q8_0"));
  EXPECT_EQ(kDefaultWireDtype, WireDtype::kBf16);
  EXPECT_TRUE(CheckWireRow(WireDtype::kQ8_0, 256));
  auto bad = CheckWireRow(WireDtype::kQ8_0, 100);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(CheckWireRow(WireDtype::kBf16, 100));
  // Qwen3.5-122B-A10B: n_embd 3072, top-8 routed experts. Per token per MoE
  // layer the request carries 8 rows and the answer 8 rows.
  const uint64_t n = 8 * 3072;
  EXPECT_EQ(2 * WireBytes(WireDtype::kF32, n), 196608u);
  EXPECT_EQ(2 * WireBytes(WireDtype::kBf16, n), 98304u);
  EXPECT_EQ(2 * WireBytes(WireDtype::kF16, n), 98304u);
  EXPECT_EQ(2 * WireBytes(WireDtype::kQ8_0, n), 52224u);
}

TEST(WireRowsTest, Q8NonFiniteScalesAreRefused) {
  const std::vector<float> x = Rows(64, 9);
  std::vector<uint8_t> wire(WireBytes(WireDtype::kQ8_0, x.size()));
  EncodeWireRows(WireDtype::kQ8_0, x.data(), x.size(), wire.data());
  std::vector<float> out(x.size());
  for (uint16_t s : {0x7C00, 0xFC00, 0x7E00}) {
    std::vector<uint8_t> b = wire;
    b[34] = static_cast<uint8_t>(s);
    b[35] = static_cast<uint8_t>(s >> 8);
    auto d = DecodeWireRows(WireDtype::kQ8_0, b.data(), x.size(), out.data());
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code(), ErrorCode::kCorruption);
    EXPECT_NE(d.error().message().find("block 1"), std::string::npos) << d.error().message();
  }
  // Unaligned input decodes the same (frames put rows at any offset).
  std::vector<uint8_t> shifted(wire.size() + 1);
  std::memcpy(shifted.data() + 1, wire.data(), wire.size());
  std::vector<float> a(x.size()), b(x.size());
  ASSERT_TRUE(DecodeWireRows(WireDtype::kQ8_0, wire.data(), x.size(), a.data()));
  ASSERT_TRUE(DecodeWireRows(WireDtype::kQ8_0, shifted.data() + 1, x.size(), b.data()));
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace tenzro::runtime
