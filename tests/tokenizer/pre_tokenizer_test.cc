// The hand-written splits against the regexes they transcribe, on the cases
// where the alternatives and their backtracking matter.
#include "tokenizer/pre_tokenizer.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tenzro::tokenizer {
namespace {

std::vector<std::string> Split(PreTokenizerKind k, std::string_view s) {
  std::vector<std::string> out;
  for (auto p : PreTokenizeToVector(k, s)) out.emplace_back(p);
  return out;
}

using V = std::vector<std::string>;
constexpr auto kQ = PreTokenizerKind::kQwen2;

TEST(PreTokenizer, Qwen2Words) {
  EXPECT_EQ(Split(kQ, "Hello world"), V({"Hello", " world"}));
  EXPECT_EQ(Split(kQ, "don't stop"), V({"don", "'t", " stop"}));
  EXPECT_EQ(Split(kQ, "I'M WE'LL they'Re"), V({"I", "'M", " WE", "'LL", " they", "'Re"}));
  EXPECT_EQ(Split(kQ, "'stop"), V({"'s", "top"}));
  EXPECT_EQ(Split(kQ, "x'y"), V({"x", "'y"}));
  // ASCII case folding only: 'ſ is not the contraction 's (llama.cpp,
  // transformers.js); Hugging Face's Rust regex would split "'ſt" as "'ſ" "t".
  EXPECT_EQ(Split(kQ, "'\xC5\xBFt"), V({"'\xC5\xBFt"}));
}

TEST(PreTokenizer, Qwen2DigitsPunctuation) {
  EXPECT_EQ(Split(kQ, "x = 12345;"), V({"x", " =", " ", "1", "2", "3", "4", "5", ";"}));
  EXPECT_EQ(Split(kQ, "a.\n\nb"), V({"a", ".\n\n", "b"}));
  EXPECT_EQ(Split(kQ, " (x) {}"), V({" (", "x", ")", " {}"}));
  EXPECT_EQ(Split(kQ, "$100"), V({"$", "1", "0", "0"}));
  EXPECT_EQ(Split(kQ, "\t(x"), V({"\t", "(x"}));  // [^\r\n\p{L}\p{N}]?\p{L}+
}

TEST(PreTokenizer, Qwen2Whitespace) {
  EXPECT_EQ(Split(kQ, "  two  spaces\n\n"), V({" ", " two", " ", " spaces", "\n\n"}));
  EXPECT_EQ(Split(kQ, "a   b"), V({"a", "  ", " b"}));
  EXPECT_EQ(Split(kQ, "a \n \n  b"), V({"a", " \n \n", " ", " b"}));
  EXPECT_EQ(Split(kQ, "a   "), V({"a", "   "}));
  EXPECT_EQ(Split(kQ, "x\n\tif"), V({"x", "\n", "\tif"}));
  // U+3000 (ideographic space) is White_Space, 3 bytes; the run less it.
  EXPECT_EQ(Split(kQ, "a \xE3\x80\x80 1"), V({"a", " \xE3\x80\x80", " ", "1"}));
}

TEST(PreTokenizer, Qwen2Unicode) {
  EXPECT_EQ(Split(kQ, "Привет, мир"), V({"Привет", ",", " мир"}));
  EXPECT_EQ(Split(kQ, "日本語と中文"), V({"日本語と中文"}));
  EXPECT_EQ(Split(kQ, "😀😀 x"), V({"😀😀", " x"}));
  // A combining mark is not \p{L}: it ends the word in qwen2, not in qwen35.
  EXPECT_EQ(Split(kQ, "e\xCC\x81t"), V({"e", "\xCC\x81t"}));
  EXPECT_EQ(Split(PreTokenizerKind::kQwen35, "e\xCC\x81t"), V({"e\xCC\x81t"}));
  // Invalid bytes are characters of no class (never dropped).
  EXPECT_EQ(Split(kQ, "a\xFF\xFE b"), V({"a", "\xFF\xFE", " b"}));
  EXPECT_EQ(Split(kQ, "\xFFword"), V({"\xFFword"}));
}

TEST(PreTokenizer, Gpt2) {
  constexpr auto kG = PreTokenizerKind::kGpt2;
  EXPECT_EQ(Split(kG, "Hello world 12345!! 'S"), V({"Hello", " world", " 12345", "!!", " '", "S"}));
  EXPECT_EQ(Split(kG, "a   b\n\nc"), V({"a", "  ", " b", "\n", "\n", "c"}));
  EXPECT_EQ(Split(kG, "it's"), V({"it", "'s"}));
}

TEST(PreTokenizer, PiecesCoverTheInput) {
  std::string s;
  for (int i = 0; i < 4000; ++i) s += static_cast<char>((i * 7919 + i / 3) & 0xFF);
  for (auto k : {PreTokenizerKind::kQwen2, PreTokenizerKind::kQwen35, PreTokenizerKind::kGpt2}) {
    std::string joined;
    for (auto p : PreTokenizeToVector(k, s)) {
      ASSERT_FALSE(p.empty());
      joined += p;
    }
    EXPECT_EQ(joined, s);
  }
}

}  // namespace
}  // namespace tenzro::tokenizer
