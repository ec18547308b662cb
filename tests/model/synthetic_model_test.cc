// The engine on random-weight models at other shapes (synthetic.h).
#include "model/synthetic.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <unistd.h>

#include "model/model_reference.h"

namespace tenzro::model {
namespace {

using namespace testref;

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".gguf")).string();
}

// The engine on a random-weight qwen3moe (plain attention, ffn_norm, no
// shared expert): the second architecture of the table runs, prefill equals
// token-by-token, and the logits are finite.
TEST(SyntheticModelTest, Qwen3MoeRuns) {
  auto shape = FindSyntheticShape("tiny-qwen3moe");
  ASSERT_TRUE(shape);
  SyntheticOptions o;
  o.dense_type = quant::GgmlType::BF16;
  o.expert_type = quant::GgmlType::Q8_0;
  std::string path = TempPath("qwen3moe");
  ASSERT_TRUE(WriteSyntheticModel(*shape, o, path));
  EngineOptions eo;
  eo.threads = 2;
  auto e = Engine::Open(path, eo);
  std::filesystem::remove(path);  // the mapping stays valid
  ASSERT_TRUE(e) << e.error().ToString();
  EXPECT_EQ((*e)->hparams().arch, "qwen3moe");
  std::vector<int32_t> prompt = {5, 17, 300, 999, 2, 2, 2, 41};
  auto a = (*e)->NewSession(32), b = (*e)->NewSession(32);
  std::vector<float> pre, one;
  Engine::SeqInput in{a->get(), prompt, true};
  ASSERT_TRUE((*e)->Step({&in, 1}, pre));
  for (float v : pre) ASSERT_TRUE(std::isfinite(v));
  for (size_t i = 0; i < prompt.size(); ++i) {
    Engine::SeqInput st{b->get(), {&prompt[i], 1}, false};
    ASSERT_TRUE((*e)->Step({&st, 1}, one));
    ASSERT_EQ(0, std::memcmp(one.data(), pre.data() + i * 1024, 1024 * sizeof(float))) << i;
  }
}

// The Qwen3.5-122B-A10B shape (random weights, 4 layers so that one is
// gated attention, 4 of its 256 experts, a cut vocabulary; dense matrices
// Q8_0 and experts Q4_K to keep the file quick to write): no overflow, no NaN
// over a prompt and a few decode steps.
TEST(SyntheticModelTest, RealShapeQwen35_122bHasNoNan) {
  auto shape = FindSyntheticShape("qwen3.5-122b-a10b");
  ASSERT_TRUE(shape);
  SyntheticOptions o;
  o.layers = 4;
  o.experts = 4;
  o.n_vocab = 1024;
  o.dense_type = quant::GgmlType::Q8_0;
  std::string path = TempPath("q35-122b");
  ASSERT_TRUE(WriteSyntheticModel(*shape, o, path));
  EngineOptions eo;
  eo.threads = 2;
  auto e = Engine::Open(path, eo);
  std::filesystem::remove(path);
  ASSERT_TRUE(e) << e.error().ToString();
  const HParams& hp = (*e)->hparams();
  EXPECT_EQ(hp.layers[3], LayerKind::kGatedAttention);
  EXPECT_EQ(hp.ssm_d_v(), 128);
  auto s = (*e)->NewSession(64);
  std::vector<int32_t> prompt(12);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 37) % 1024);
  std::vector<float> logits;
  Engine::SeqInput in{s->get(), prompt, true};
  ASSERT_TRUE((*e)->Step({&in, 1}, logits));
  for (int step = 0; step < 4; ++step) {
    for (float v : logits) ASSERT_TRUE(std::isfinite(v));
    int32_t next = Argmax(logits.data() + logits.size() - 1024, 1024);
    Engine::SeqInput st{s->get(), {&next, 1}, false};
    ASSERT_TRUE((*e)->Step({&st, 1}, logits));
  }
}

}  // namespace
}  // namespace tenzro::model

