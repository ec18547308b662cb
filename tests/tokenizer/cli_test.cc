// `tenzro tokenize` / `detokenize` as a user runs them (real child process).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testutil/testutil.h"
#include "tokenizer/fixture.h"

namespace tenzro::tokenizer {
namespace {

using tenzro::testing::RunTenzro;

TEST(TokenizeCli, PathAndCatalogId) {
  tenzro::testing::TempDir dir;
  std::string gguf = testing::FixturePath();
  auto r = RunTenzro({"--data-dir", dir.path(), "tokenize", "--model", gguf, "--text", "Hello world"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "39,68,372,78,303,264,923\n");
  r = RunTenzro({"--data-dir", dir.path(), "moe", "catalog-add", "--model", "tiny-tok", "--checkpoint", gguf});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunTenzro({"--data-dir", dir.path(), "detokenize", "--model", "tiny-tok", "--tokens", "39,68,372,78,303,264,923"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world\n");
  r = RunTenzro({"--data-dir", dir.path(), "tokenize", "--model", "tiny-tok", "--text", "<|im_end|>x", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ids"], nlohmann::json({1023, 87}));
  EXPECT_EQ(j["pieces"], nlohmann::json({"<|im_end|>", "x"}));
  r = RunTenzro({"--data-dir", dir.path(), "tokenize", "--model", "tiny-tok", "--text", "<|im_end|>", "--no-special"});
  EXPECT_EQ(r.out, "27,91,358,62,726,91,29\n");
}

TEST(TokenizeCli, Errors) {
  tenzro::testing::TempDir dir;
  std::string gguf = testing::FixturePath();
  auto r = RunTenzro({"--data-dir", dir.path(), "detokenize", "--model", gguf, "--tokens", "1,5000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("5000"), std::string::npos);
  r = RunTenzro({"--data-dir", dir.path(), "detokenize", "--model", gguf, "--tokens", "1,x"});
  EXPECT_EQ(r.exit_code, 2);
  r = RunTenzro({"--data-dir", dir.path(), "tokenize", "--model", "no-such-model", "--text", "x"});
  EXPECT_EQ(r.exit_code, 3);
  r = RunTenzro({"--data-dir", dir.path(), "tokenize", "--model",
                 ::tenzro::testing::DataPath("moe/tiny-qwen35moe-BF16.gguf"), "--text", "x"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no tokenizer"), std::string::npos);
}

}  // namespace
}  // namespace tenzro::tokenizer
