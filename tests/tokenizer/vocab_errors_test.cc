// Malformed vocabularies are refused with the field named; unsupported ones
// with kUnsupported. Also holds the helpers of vocab_test_util.h.
#include <gtest/gtest.h>

#include "format/gguf_reader.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/fixture.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_vocab.h"
#include "tokenizer/vocab_test_util.h"

namespace tenzro::tokenizer {
namespace testing {

Bytes FixtureGgufWith(const std::function<void(format::GgufWriter&)>& edit) {
  auto f = format::GgufFile::Open(FixturePath());
  if (!f) std::abort();
  format::GgufWriter w;
  for (const auto& [k, v] : (*f)->kv())
    if (k != "general.alignment") w.Set(k, v);
  edit(w);
  auto b = w.Serialize();
  if (!b) std::abort();
  return std::move(*b);
}

nlohmann::json FixtureTokenizerJson(bool pairs, bool nfc) {
  auto f = format::GgufFile::Open(FixturePath());
  if (!f) std::abort();
  auto tokens = *(*f)->Find("tokenizer.ggml.tokens")->AsStringArray();
  auto merges = *(*f)->Find("tokenizer.ggml.merges")->AsStringArray();
  nlohmann::json j;
  j["version"] = "1.0";
  j["normalizer"] = nfc ? nlohmann::json{{"type", "NFC"}} : nlohmann::json();
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern",
          {{"Regex",
            R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
  j["added_tokens"] = nlohmann::json::array();
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i >= 1021) j["added_tokens"].push_back({{"id", i}, {"content", tokens[i]}, {"special", true}});
    else vocab[tokens[i]] = i;
  }
  nlohmann::json m = nlohmann::json::array();
  for (const auto& s : merges) {
    if (!pairs) {
      m.push_back(s);
      continue;
    }
    size_t sp = s.find(' ', 1);
    m.push_back({s.substr(0, sp), s.substr(sp + 1)});
  }
  j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"byte_fallback", false},
                {"ignore_merges", false}, {"vocab", vocab}, {"merges", m}};
  j["decoder"] = {{"type", "ByteLevel"}};
  return j;
}

}  // namespace testing

namespace {

using testing::FixtureGgufWith;
using testing::FixtureTokenizerJson;

Error GgufError(const std::function<void(format::GgufWriter&)>& edit) {
  Bytes image = FixtureGgufWith(edit);
  auto f = format::GgufFile::Parse(ByteSpan(image.data(), image.size()), "bad.gguf");
  EXPECT_TRUE(f);
  auto t = TokenizerFromGguf(**f);
  EXPECT_FALSE(t);
  return t ? Error::Internal("loaded") : t.error();
}

std::vector<std::string> FixtureTokens() {
  auto f = format::GgufFile::Open(testing::FixturePath());
  return *(*f)->Find("tokenizer.ggml.tokens")->AsStringArray();
}

TEST(VocabErrors, GgufRoundTripLoads) {
  Bytes image = FixtureGgufWith([](format::GgufWriter&) {});
  auto f = format::GgufFile::Parse(ByteSpan(image.data(), image.size()), "ok.gguf");
  ASSERT_TRUE(f);
  auto t = TokenizerFromGguf(**f);
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ((*t)->Encode("Hello world"), std::vector<int32_t>({39, 68, 372, 78, 303, 264, 923}));
}

TEST(VocabErrors, GgufDuplicateToken) {
  auto tokens = FixtureTokens();
  tokens[300] = tokens[5];
  Error e = GgufError([&](format::GgufWriter& w) {
    w.Set("tokenizer.ggml.tokens", format::GgufValue::StringArray(tokens));
  });
  EXPECT_EQ(e.code(), ErrorCode::kCorruption);
  EXPECT_NE(e.message().find("tokenizer.ggml.tokens[300] duplicates tokenizer.ggml.tokens[5]"), std::string::npos) << e.message();
}

TEST(VocabErrors, GgufMergeNamesMissingToken) {
  Error e = GgufError([&](format::GgufWriter& w) {
    w.Set("tokenizer.ggml.merges", format::GgufValue::StringArray({"zzzq e"}));
  });
  EXPECT_EQ(e.code(), ErrorCode::kCorruption);
  EXPECT_NE(e.message().find("tokenizer.ggml.merges[0]: \"zzzq\""), std::string::npos) << e.message();
  e = GgufError([&](format::GgufWriter& w) {
    w.Set("tokenizer.ggml.merges", format::GgufValue::StringArray({"nospace"}));
  });
  EXPECT_NE(e.message().find("tokenizer.ggml.merges[0]"), std::string::npos) << e.message();
  // Both parts exist but their concatenation does not.
  e = GgufError([&](format::GgufWriter& w) {
    w.Set("tokenizer.ggml.merges", format::GgufValue::StringArray({"Q Q"}));
  });
  EXPECT_NE(e.message().find("merged token"), std::string::npos) << e.message();
}

TEST(VocabErrors, GgufIdsAndTypes) {
  Error e = GgufError([](format::GgufWriter& w) { w.Set("tokenizer.ggml.eos_token_id", format::GgufValue::U32(1024)); });
  EXPECT_EQ(e.code(), ErrorCode::kCorruption);
  EXPECT_NE(e.message().find("eos_token_id"), std::string::npos) << e.message();
  e = GgufError([](format::GgufWriter& w) {
    w.Set("tokenizer.ggml.token_type", format::GgufValue::IntArray(format::GgufType::kInt32, {1, 1, 1}));
  });
  EXPECT_NE(e.message().find("token_type"), std::string::npos) << e.message();
  std::vector<int64_t> types(1024, 1);
  types[7] = 42;
  e = GgufError([&](format::GgufWriter& w) {
    w.Set("tokenizer.ggml.token_type", format::GgufValue::IntArray(format::GgufType::kInt32, types));
  });
  EXPECT_NE(e.message().find("token_type[7]"), std::string::npos) << e.message();
  e = GgufError([](format::GgufWriter& w) { w.Set("tokenizer.ggml.tokens", format::GgufValue::U32(3)); });
  EXPECT_NE(e.message().find("tokenizer.ggml.tokens is not an array of strings"), std::string::npos);
}

TEST(VocabErrors, GgufMissingByteSymbol) {
  auto tokens = FixtureTokens();
  tokens[0] = "not-a-byte";  // '!' (0x21) loses its symbol
  Error e = GgufError([&](format::GgufWriter& w) {
    w.Set("tokenizer.ggml.tokens", format::GgufValue::StringArray(tokens));
    w.Set("tokenizer.ggml.merges", format::GgufValue::StringArray({}));
  });
  EXPECT_EQ(e.code(), ErrorCode::kCorruption);
  EXPECT_NE(e.message().find("byte 0x21"), std::string::npos) << e.message();
}

TEST(VocabErrors, GgufUnsupported) {
  Error e = GgufError([](format::GgufWriter& w) { w.Set("tokenizer.ggml.model", format::GgufValue::Str("llama")); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  e = GgufError([](format::GgufWriter& w) { w.Set("tokenizer.ggml.pre", format::GgufValue::Str("llama-bpe")); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_NE(e.message().find("llama-bpe"), std::string::npos);
}

Error HfError(const std::string& text) {
  auto t = TokenizerFromHfJson(text, "", "bad.json");
  EXPECT_FALSE(t);
  return t ? Error::Internal("loaded") : t.error();
}

TEST(VocabErrors, HfMalformed) {
  EXPECT_EQ(HfError("{").code(), ErrorCode::kCorruption);
  EXPECT_EQ(HfError("[]").code(), ErrorCode::kCorruption);
  auto j = FixtureTokenizerJson(false, true);
  j["model"]["vocab"]["Ġzzz"] = -4;
  EXPECT_NE(HfError(j.dump()).message().find("id -4"), std::string::npos);
  j = FixtureTokenizerJson(false, true);
  j["model"]["vocab"]["Ġzzz"] = 5000;
  EXPECT_NE(HfError(j.dump()).message().find("dense"), std::string::npos);
  j = FixtureTokenizerJson(false, true);
  j["model"]["merges"][3] = 17;
  EXPECT_NE(HfError(j.dump()).message().find("model.merges[3]"), std::string::npos);
  j = FixtureTokenizerJson(true, true);
  j["model"]["merges"][2] = {"Ġ", "nonexistent"};
  EXPECT_NE(HfError(j.dump()).message().find("model.merges[2]"), std::string::npos);
  j = FixtureTokenizerJson(false, true);
  j["added_tokens"][0]["id"] = 5;  // clashes with vocab id 5
  EXPECT_NE(HfError(j.dump()).message().find("id 5 is both"), std::string::npos);
  j = FixtureTokenizerJson(false, true);
  j["model"]["vocab"] = "x";
  EXPECT_EQ(HfError(j.dump()).code(), ErrorCode::kCorruption);
  j = FixtureTokenizerJson(false, true);
  j["added_tokens"][0]["special"] = "yes";  // a type nlohmann would throw on
  EXPECT_EQ(HfError(j.dump()).code(), ErrorCode::kCorruption);
}

TEST(VocabErrors, HfUnsupported) {
  auto j = FixtureTokenizerJson(false, true);
  j["model"]["type"] = "WordPiece";
  EXPECT_EQ(HfError(j.dump()).code(), ErrorCode::kUnsupported);
  j = FixtureTokenizerJson(false, true);
  j["normalizer"] = {{"type", "NFKC"}};
  EXPECT_EQ(HfError(j.dump()).code(), ErrorCode::kUnsupported);
  j = FixtureTokenizerJson(false, true);
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
  EXPECT_EQ(HfError(j.dump()).code(), ErrorCode::kUnsupported);
  j = FixtureTokenizerJson(false, true);
  j["model"]["byte_fallback"] = true;
  EXPECT_EQ(HfError(j.dump()).code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace tenzro::tokenizer
