#include "tokenizer/stream_decoder.h"

#include <random>

#include <gtest/gtest.h>

#include "tokenizer/fixture.h"

namespace tenzro::tokenizer {
namespace {

using testing::Fixture;

TEST(StreamDecoder, HoldsBackPartialCharacters) {
  const Tokenizer& t = Fixture();
  StreamDecoder d(t);
  // 日本語: [E6 97] [A5] [E6 9C] [AC] [E8] [AA] [9E]
  EXPECT_EQ(d.Feed(706), "");
  EXPECT_EQ(d.pending(), 2u);
  EXPECT_EQ(d.Feed(98), "日");
  EXPECT_EQ(d.Feed(764), "");
  EXPECT_EQ(d.Feed(105), "本");
  EXPECT_EQ(d.Feed(164), "");
  EXPECT_EQ(d.Feed(103), "");
  EXPECT_EQ(d.Feed(252), "語");
  EXPECT_EQ(d.pending(), 0u);
  EXPECT_EQ(d.Feed(1023), "<|im_end|>");
  EXPECT_EQ(d.Flush(), "");
}

TEST(StreamDecoder, InvalidBytesAndFlush) {
  const Tokenizer& t = Fixture();
  StreamDecoder d(t);
  EXPECT_EQ(d.Feed(t.Encode("\xFF")[0]), "\xEF\xBF\xBD");  // can never complete
  EXPECT_EQ(d.Feed(140), "");                              // D0, waiting
  EXPECT_EQ(d.Feed(39), "\xEF\xBF\xBDH");                  // 'H' breaks it
  EXPECT_EQ(d.Feed(429), "");                              // E4 B8
  EXPECT_EQ(d.Flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(d.pending(), 0u);
  EXPECT_EQ(d.Feed(-5), "\xEF\xBF\xBD");
}

TEST(StreamDecoder, ConcatenationEqualsDecode) {
  const Tokenizer& t = Fixture();
  std::mt19937 rng(7);
  for (int i = 0; i < 500; ++i) {
    std::vector<int32_t> ids;
    int n = std::uniform_int_distribution<int>(0, 30)(rng);
    for (int k = 0; k < n; ++k) ids.push_back(std::uniform_int_distribution<int32_t>(0, 1023)(rng));
    StreamDecoder d(t);
    std::string streamed;
    for (int32_t id : ids) streamed += d.Feed(id);
    streamed += d.Flush();
    ASSERT_EQ(streamed, t.Decode(ids)) << "i=" << i;
  }
}

}  // namespace
}  // namespace tenzro::tokenizer
