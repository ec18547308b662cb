// The fixture's tokenizer against tests/data/model/README.md's example
// encodings and ref/*.json prompt_ids, round trips, the token accessors.
#include "tokenizer/tokenizer.h"

#include <cstdlib>
#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "format/gguf_reader.h"
#include "tokenizer/fixture.h"
#include "tokenizer/chat_format.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/load.h"

namespace tenzro::tokenizer {
namespace testing {

const Tokenizer& Fixture() {
  static const Tokenizer* t = [] {
    auto r = LoadTokenizer(FixturePath());
    if (!r) {
      fprintf(stderr, "fixture tokenizer: %s\n", r.error().ToString().c_str());
      std::abort();
    }
    return r->release();
  }();
  return *t;
}

}  // namespace testing

namespace {

using testing::Fixture;

std::vector<int32_t> Ids(std::initializer_list<int32_t> l) { return l; }

struct Example {
  const char* text;
  std::vector<int32_t> ids;
};

TEST(Tokenizer, FixtureMetadata) {
  const Tokenizer& t = Fixture();
  EXPECT_EQ(t.vocab_size(), 1024);
  EXPECT_EQ(t.merge_count(), 765u);
  EXPECT_EQ(t.bos(), 1021);
  EXPECT_EQ(t.eos(), 1023);
  EXPECT_EQ(t.pad(), 1021);
  EXPECT_FALSE(t.add_bos());
  EXPECT_FALSE(t.nfc());
  EXPECT_EQ(t.pre_tokenizer(), PreTokenizerKind::kQwen2);
  EXPECT_TRUE(t.IsControl(1021) && t.IsControl(1022) && t.IsControl(1023));
  EXPECT_FALSE(t.IsControl(1020));
  EXPECT_FALSE(t.IsControl(5000));
  EXPECT_EQ(t.TokenId("<|im_start|>"), 1022);
  EXPECT_EQ(t.TokenId("Ġ"), 220);
  EXPECT_EQ(t.TokenId("no such token"), std::nullopt);
  EXPECT_EQ(t.TokenBytes(220), " ");
  EXPECT_EQ(t.TokenBytes(198), "\n");
  EXPECT_EQ(t.TokenBytes(197), "\t");
  EXPECT_EQ(t.TokenBytes(1023), "<|im_end|>");
  EXPECT_EQ(t.TokenBytes(-1), "");
  EXPECT_TRUE(t.IsEndOfGeneration(1023));
  EXPECT_TRUE(t.IsEndOfGeneration(1021));
  EXPECT_FALSE(t.IsEndOfGeneration(1022));
  EXPECT_EQ(t.end_of_generation().size(), 2u);
  EXPECT_TRUE(CheckChatTemplate(t.chat_template()));
}

TEST(Tokenizer, ReadmeExampleEncodings) {
  const Example examples[] = {
      {"Hello world", {39, 68, 372, 78, 303, 264, 923}},
      {"The Software is provided \"as is\".", {51, 71, 68, 472, 400, 735, 489, 396, 400, 1, 13}},
      {"don't stop", {67, 261, 6, 83, 919, 285}},
      {"x = 12345;\n\tif (x) {}", {87, 220, 28, 220, 16, 17, 18, 19, 20, 26, 198, 197, 377, 336, 87, 8, 220, 90, 92}},
      {"  two  spaces\n\n", {220, 258, 86, 78, 220, 913, 470, 275, 313}},
      {"Привет, мир", {140, 253, 428, 390, 690, 350, 375, 11, 322, 120, 390, 428}},
      {"日本語と中文", {706, 98, 764, 105, 164, 103, 252, 278, 101, 429, 255, 717}},
      {"😀", {172, 253, 246, 222}},
      {"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
       {1022, 442, 259, 198, 39, 72, 1023, 198, 1022, 396, 82, 341, 454, 198}},
  };
  for (const Example& e : examples) {
    EXPECT_EQ(Fixture().Encode(e.text), e.ids) << e.text;
    EXPECT_EQ(Fixture().Decode(e.ids), e.text);
  }
}

TEST(Tokenizer, ReadmePieces) {
  // Pieces of "Привет, мир": [D0] [9F] р и в е т , [20 D0] [BC] и р
  EXPECT_EQ(Fixture().TokenBytes(140), "\xD0");
  EXPECT_EQ(Fixture().TokenBytes(322), "\x20\xD0");
  EXPECT_EQ(Fixture().TokenBytes(278), "\xE3\x81");
  EXPECT_EQ(Fixture().TokenBytes(429), "\xE4\xB8");
  EXPECT_EQ(Fixture().TokenBytes(717), "文");
}

TEST(Tokenizer, RefPromptIds) {
  for (const char* name : {"chat-hi", "plain-license", "long-mixed"}) {
    std::ifstream f(::tenzro::testing::DataPath(std::string("model/ref/") + name + ".json"));
    ASSERT_TRUE(f) << name;
    auto j = nlohmann::json::parse(f);
    std::vector<int32_t> want = j["prompt_ids"].get<std::vector<int32_t>>();
    std::string rendered = j["rendered"];
    if (j["kind"] == "chat") {
      std::string again = RenderChatMl({{"user", j["text"].get<std::string>()}}, true);
      EXPECT_EQ(again, rendered) << name;
    } else {
      EXPECT_EQ(rendered, j["text"].get<std::string>());
    }
    EXPECT_EQ(Fixture().Encode(rendered), want) << name;
    EXPECT_EQ(Fixture().Decode(want), rendered) << name;
  }
}

TEST(Tokenizer, ParseSpecialOffSplitsControlTokensAsText) {
  const Tokenizer& t = Fixture();
  auto ids = t.Encode("<|im_end|>", false);
  EXPECT_GT(ids.size(), 1u);
  for (int32_t id : ids) EXPECT_FALSE(t.IsControl(id));
  EXPECT_EQ(t.Decode(ids), "<|im_end|>");
  EXPECT_EQ(t.Encode("<|im_end|>", true), Ids({1023}));
  EXPECT_EQ(t.Encode("a<|im_end|><|im_end|>b"), Ids({64, 1023, 1023, 65}));
  EXPECT_TRUE(t.Encode("").empty());
}

TEST(Tokenizer, DecodeInvalidUtf8AndBadIds) {
  const Tokenizer& t = Fixture();
  EXPECT_EQ(t.Decode({140}), "\xEF\xBF\xBD");          // a lone lead byte D0
  EXPECT_EQ(t.Decode({429}), "\xEF\xBF\xBD");          // E4 B8: one maximal subpart
  EXPECT_EQ(t.Decode({39, 5000, -3}), "H\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(t.Decode({1021}), "<|endoftext|>");
}

// Deterministic strings of every kind the pre-tokenizer distinguishes,
// including bytes that are not UTF-8.
std::string RandomString(std::mt19937& rng, bool allow_invalid) {
  static const char* parts[] = {"Hello", " world", "'s", "'LL", "don't", "  ", "\t", "\r\n", "\n\n", " \n ", "123",
                                "4", "!!", " (x)", "{}", ";", "é", "e\xCC\x81", "Привет", "日本語", "と", "😀",
                                "👩‍💻", "👍🏽", "ſ", "'ſ", "\xE3\x80\x80", "\xC2\xA0", "مرحبا", "<|im_start|>",
                                "<|im_end|>", "<|endoftext|>", "<|im", "x", " ", "A1b2"};
  std::string s;
  int n = std::uniform_int_distribution<int>(0, 12)(rng);
  for (int i = 0; i < n; ++i) {
    int k = std::uniform_int_distribution<int>(0, allow_invalid ? 40 : 35)(rng);
    if (k < 36) s += parts[k];
    else s += static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
  }
  return s;
}

TEST(Tokenizer, RoundTripManyStringsIncludingInvalidUtf8) {
  std::mt19937 rng(1234);
  const Tokenizer& t = Fixture();
  for (int i = 0; i < 5000; ++i) {
    std::string s = RandomString(rng, true);
    for (bool special : {true, false}) {
      auto ids = t.Encode(s, special);
      std::string joined;
      for (int32_t id : ids) joined += t.TokenBytes(id);
      ASSERT_EQ(joined, s) << "i=" << i;  // byte-exact, even for invalid UTF-8
    }
  }
  // Every single byte and a long run stay byte-exact.
  for (int b = 0; b < 256; ++b) {
    std::string s(1, static_cast<char>(b));
    auto ids = t.Encode(s);
    ASSERT_EQ(ids.size(), 1u);
    EXPECT_EQ(t.TokenBytes(ids[0]), s);
  }
  std::string spaces(100000, ' ');
  std::string joined;
  for (int32_t id : t.Encode(spaces + "x")) joined += t.TokenBytes(id);
  EXPECT_EQ(joined, spaces + "x");
}

TEST(Tokenizer, ValidUtf8DecodesExactly) {
  std::mt19937 rng(99);
  for (int i = 0; i < 2000; ++i) {
    std::string s = RandomString(rng, false);
    EXPECT_EQ(Fixture().Decode(Fixture().Encode(s)), s);
  }
}

TEST(Tokenizer, GgufRefusesOtherModels) {
  auto f = format::GgufFile::Open(::tenzro::testing::DataPath("moe/tiny-qwen35moe-BF16.gguf"));
  ASSERT_TRUE(f);
  auto t = TokenizerFromGguf(**f);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(PreTokenizerForName("default"));
  EXPECT_EQ(PreTokenizerForName("default").error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(*PreTokenizerForName("qwen35"), PreTokenizerKind::kQwen35);
}

}  // namespace
}  // namespace tenzro::tokenizer
