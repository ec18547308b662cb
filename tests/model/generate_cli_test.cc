// `tenzro generate` as a user runs it: a real child process on the bundled
// tiny model, checked against the float64 reference (tokens, prompt ids and
// --logits-out rows, with --wire-dtype f32: the exact path; the default bf16
// rounds each routed expert's rows, WireAccuracyTest measures that), plus its
// errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/model_reference.h"
#include "testutil/testutil.h"

namespace tenzro::model {
namespace {

using namespace testref;

std::string Join(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

TEST(GenerateCliTest, ChatPromptMatchesReferenceTokensAndLogits) {
  Ref ref = LoadRef("chat-hi");
  testing::TempDir dir;
  std::string logits = dir.Join("logits.f32");
  auto r = testing::RunTenzro({"--data-dir", dir.path(), "generate", "--model", testing::DataPath(kModel), "--chat",
                               "Hi", "--max-tokens", "16", "--ignore-eos", "--threads", "2", "--logits-out", logits,
                               "--json", "--wire-dtype", "f32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_ids"].get<std::vector<int32_t>>(), ref.prompt);
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), ref.greedy);
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_EQ(j["wire_dtype"], "f32");
  std::vector<float> got = testing::ReadF32(logits);
  ASSERT_EQ(got.size(), ref.logits.size());
  for (int row = 0; row < ref.rows; ++row)
    EXPECT_LT(RelL2(got.data() + row * 1024, ref.logits.data() + row * 1024, 1024), 1e-5) << row;
}

// Streaming text mode: the generated text on stdout is the decode of the
// reference's greedy ids (as detokenize prints it).
TEST(GenerateCliTest, StreamsTheDecodedText) {
  Ref ref = LoadRef("plain-license");
  testing::TempDir dir;
  auto r = testing::RunTenzro({"--data-dir", dir.path(), "generate", "--model", testing::DataPath(kModel),
                               "--prompt-tokens", Join(ref.prompt), "--max-tokens", "16", "--ignore-eos",
                               "--wire-dtype", "f32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto d = testing::RunTenzro({"--data-dir", dir.path(), "detokenize", "--model", testing::DataPath(kModel),
                               "--tokens", Join(ref.greedy)});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(r.out, d.out);
  EXPECT_NE(r.err.find("finish: length"), std::string::npos) << r.err;
}

// A stop string ends generation before it and is not printed.
TEST(GenerateCliTest, StopStringIsNotPrinted) {
  Ref ref = LoadRef("plain-license");
  testing::TempDir dir;
  auto full = testing::RunTenzro({"--data-dir", dir.path(), "generate", "--model", testing::DataPath(kModel),
                                  "--prompt-tokens", Join(ref.prompt), "--max-tokens", "16", "--ignore-eos", "--json"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  std::string text = nlohmann::json::parse(full.out)["text"];
  ASSERT_GT(text.size(), 12u);
  std::string stop = text.substr(8, 3);
  auto r = testing::RunTenzro({"--data-dir", dir.path(), "generate", "--model", testing::DataPath(kModel),
                               "--prompt-tokens", Join(ref.prompt), "--max-tokens", "16", "--ignore-eos", "--stop",
                               stop, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["finish_reason"], "stop");
  EXPECT_EQ(j["text"], text.substr(0, text.find(stop)));
}

TEST(GenerateCliTest, BadInputsAreClearErrors) {
  testing::TempDir dir;
  const std::string m = testing::DataPath(kModel);
  auto none = testing::RunTenzro({"--data-dir", dir.path(), "generate", "--model", m});
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("exactly one of"), std::string::npos) << none.err;
  auto bad_id = testing::RunTenzro({"--data-dir", dir.path(), "generate", "--model", m, "--prompt-tokens", "1,99999"});
  EXPECT_EQ(bad_id.exit_code, 2) << bad_id.err;
  auto bad_t = testing::RunTenzro({"--data-dir", dir.path(), "generate", "--model", m, "--prompt", "x",
                                   "--temperature", "-1"});
  EXPECT_EQ(bad_t.exit_code, 2) << bad_t.err;
  auto bad_wire = testing::RunTenzro({"--data-dir", dir.path(), "generate", "--model", m, "--prompt", "x",
                                      "--wire-dtype", "fp8"});
  EXPECT_EQ(bad_wire.exit_code, 2) << bad_wire.err;
  auto missing = testing::RunTenzro({"--data-dir", dir.path(), "generate", "--model", "no-such-model", "--prompt", "x"});
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  auto not_model = testing::RunTenzro({"--data-dir", dir.path(), "generate", "--model",
                                       testing::DataPath("quant/input.f32"), "--prompt", "x"});
  EXPECT_NE(not_model.exit_code, 0);
}

}  // namespace
}  // namespace tenzro::model
