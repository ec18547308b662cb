// The fixture's vocabulary as tokenizer.json encodes as the GGUF does, with
// NFC applied first; the checkpoint loader finds tokenizer.json files.
#include "tokenizer/hf_vocab.h"

#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "testutil/testutil.h"
#include "tokenizer/fixture.h"
#include "tokenizer/load.h"
#include "tokenizer/vocab_test_util.h"

namespace tenzro::tokenizer {
namespace {

using testing::Fixture;
using testing::FixtureTokenizerJson;

TEST(HfVocab, SameIdsAsGguf) {
  for (bool pairs : {false, true}) {
    auto t = TokenizerFromHfJson(FixtureTokenizerJson(pairs, false).dump(), "", "fixture.json");
    ASSERT_TRUE(t) << t.error().ToString();
    EXPECT_EQ((*t)->vocab_size(), 1024);
    EXPECT_EQ((*t)->merge_count(), 765u);
    EXPECT_TRUE((*t)->IsControl(1022));
    EXPECT_EQ((*t)->eos(), 1021);  // no tokenizer_config.json: <|endoftext|>
    for (const char* s : {"Hello world", "x = 12345;\n\tif (x) {}", "日本語と中文", "<|im_start|>user\nHi<|im_end|>\n"})
      EXPECT_EQ((*t)->Encode(s), Fixture().Encode(s)) << s;
  }
}

TEST(HfVocab, NfcIsApplied) {
  auto t = TokenizerFromHfJson(FixtureTokenizerJson(false, true).dump(), "", "fixture.json");
  ASSERT_TRUE(t);
  EXPECT_TRUE((*t)->nfc());
  // e + COMBINING ACUTE is é after NFC; the GGUF path (llama.cpp) keeps both.
  EXPECT_EQ((*t)->Encode("caf" "e\xCC\x81"), Fixture().Encode("café"));
  EXPECT_NE(Fixture().Encode("caf" "e\xCC\x81"), Fixture().Encode("café"));
  EXPECT_EQ((*t)->Decode((*t)->Encode("caf" "e\xCC\x81")), "café");
  // Ill-formed bytes pass through normalization untouched.
  std::string bad = "a\xFF" "e\xCC\x81\xC3";
  std::string joined;
  for (int32_t id : (*t)->Encode(bad)) joined += (*t)->TokenBytes(id);
  EXPECT_EQ(joined, "a\xFF" "é\xC3");
}

TEST(HfVocab, ConfigGivesSpecialIdsAndTemplate) {
  std::string cfg = R"({"eos_token": "<|im_end|>", "pad_token": {"content": "<|endoftext|>"}, "bos_token": null,
                        "add_bos_token": false, "chat_template": "{{'<|im_start|>'}}"})";
  auto t = TokenizerFromHfJson(FixtureTokenizerJson(false, true).dump(), cfg, "fixture.json");
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ((*t)->eos(), 1023);
  EXPECT_EQ((*t)->pad(), 1021);
  EXPECT_EQ((*t)->bos(), kNoToken);
  EXPECT_EQ((*t)->chat_template(), "{{'<|im_start|>'}}");
  auto bad = TokenizerFromHfJson(FixtureTokenizerJson(false, true).dump(), R"({"eos_token": "<nope>"})", "f.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("eos_token"), std::string::npos);
}

TEST(HfVocab, LoaderFindsTokenizerJson) {
  tenzro::testing::TempDir dir;
  std::ofstream(dir.Join("tokenizer.json")) << FixtureTokenizerJson(false, true).dump();
  std::ofstream(dir.Join("model.safetensors")) << "";
  for (const std::string& p : {dir.path(), dir.Join("tokenizer.json"), dir.Join("model.safetensors")}) {
    auto t = LoadTokenizer(p);
    ASSERT_TRUE(t) << p << ": " << t.error().ToString();
    EXPECT_EQ((*t)->Encode("Hello world"), Fixture().Encode("Hello world"));
  }
  EXPECT_EQ(LoadTokenizer(dir.Join("missing.gguf")).error().code(), ErrorCode::kNotFound);
  tenzro::testing::TempDir empty;
  EXPECT_EQ(LoadTokenizer(empty.path()).error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace tenzro::tokenizer
