// The model engine against the float64 reference of the tiny Qwen3.5-MoE
// (tests/data/model/README.md: computed by an implementation of llama.cpp's
// qwen35moe graph that is not ours), plus the engine's own contracts:
// prefill == token-by-token, batch independence, the session budget.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "core/file.h"
#include "model/engine.h"
#include "model/synthetic.h"
#include "testutil/testutil.h"

namespace tenzro::model {
namespace {

const char* kModel = "model/tiny-qwen35moe-tok-BF16.gguf";

struct Ref {
  std::vector<int32_t> prompt, greedy;
  std::vector<double> margins;
  std::vector<float> logits;  // rows x 1024
  int rows = 0;
};

Ref LoadRef(const std::string& name) {
  Ref r;
  std::ifstream f(testing::DataPath("model/ref/" + name + ".json"));
  nlohmann::json j = nlohmann::json::parse(f);
  r.prompt = j["prompt_ids"].get<std::vector<int32_t>>();
  r.greedy = j["greedy_ids"].get<std::vector<int32_t>>();
  r.margins = j["greedy_top1_top2_margin"].get<std::vector<double>>();
  r.rows = j["logits_rows"].get<int>();
  std::ifstream lf(testing::DataPath("model/ref/" + name + ".logits.f32"), std::ios::binary);
  r.logits.resize(static_cast<size_t>(r.rows) * 1024);
  lf.read(reinterpret_cast<char*>(r.logits.data()), r.logits.size() * sizeof(float));
  EXPECT_TRUE(lf.good());
  return r;
}

double RelL2(const float* a, const float* ref, int n) {
  double num = 0, den = 0;
  for (int i = 0; i < n; ++i) {
    num += (static_cast<double>(a[i]) - ref[i]) * (static_cast<double>(a[i]) - ref[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

int Argmax(const float* x, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

std::unique_ptr<Engine> OpenTiny(int threads = 2) {
  EngineOptions o;
  o.threads = threads;
  auto e = Engine::Open(testing::DataPath(kModel), o);
  EXPECT_TRUE(e) << e.error().ToString();
  return e ? std::move(*e) : nullptr;
}

class ReferenceTest : public ::testing::TestWithParam<const char*> {};

// Prompt in one step (all rows), then the reference's greedy tokens one at a
// time: every logits row within 1e-5 relative L2 of the f64 reference, and
// our greedy choice equal to the reference's.
TEST_P(ReferenceTest, LogitsMatchFloat64Reference) {
  Ref ref = LoadRef(GetParam());
  auto e = OpenTiny();
  ASSERT_TRUE(e);
  ASSERT_EQ(e->hparams().n_vocab, 1024);
  auto s = e->NewSession(256);
  ASSERT_TRUE(s);
  std::vector<float> all, logits;
  Engine::SeqInput in{s->get(), ref.prompt, true};
  ASSERT_TRUE(e->Step({&in, 1}, logits));
  all = logits;
  for (size_t i = 0; i + 1 < ref.greedy.size(); ++i) {
    Engine::SeqInput step{s->get(), {&ref.greedy[i], 1}, false};
    ASSERT_TRUE(e->Step({&step, 1}, logits));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  ASSERT_EQ(static_cast<int>(all.size() / 1024), ref.rows);
  double worst = 0;
  for (int r = 0; r < ref.rows; ++r) {
    double d = RelL2(all.data() + r * 1024, ref.logits.data() + r * 1024, 1024);
    worst = std::max(worst, d);
    EXPECT_LT(d, 1e-5) << "row " << r;
  }
  RecordProperty("worst_rel_l2", std::to_string(worst));
  std::printf("%s: worst row relative L2 %.3g over %d rows\n", GetParam(), worst, ref.rows);
  const int first = static_cast<int>(ref.prompt.size()) - 1;
  for (size_t i = 0; i < ref.greedy.size(); ++i)
    EXPECT_EQ(Argmax(all.data() + (first + i) * 1024, 1024), ref.greedy[i]) << "greedy step " << i;
}

INSTANTIATE_TEST_SUITE_P(Prompts, ReferenceTest, ::testing::Values("chat-hi", "plain-license", "long-mixed"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// The whole prompt in one step and the same prompt one token at a time
// give the same logits, bit for bit.
TEST(EngineTest, PrefillEqualsTokenByToken) {
  Ref ref = LoadRef("long-mixed");
  auto e = OpenTiny();
  ASSERT_TRUE(e);
  auto a = e->NewSession(256), b = e->NewSession(256);
  ASSERT_TRUE(a && b);
  std::vector<float> pre, one;
  Engine::SeqInput in{a->get(), ref.prompt, true};
  ASSERT_TRUE(e->Step({&in, 1}, pre));
  for (size_t i = 0; i < ref.prompt.size(); ++i) {
    Engine::SeqInput st{b->get(), {&ref.prompt[i], 1}, false};
    ASSERT_TRUE(e->Step({&st, 1}, one));
    ASSERT_EQ(0, std::memcmp(one.data(), pre.data() + i * 1024, 1024 * sizeof(float))) << "position " << i;
  }
}

// Two sequences in one step get exactly the logits each gets alone, and a
// sequence's results do not depend on its neighbour's length or position.
TEST(EngineTest, BatchedSequencesAreIndependent) {
  Ref r1 = LoadRef("chat-hi"), r2 = LoadRef("plain-license");
  auto e = OpenTiny();
  ASSERT_TRUE(e);
  auto a = e->NewSession(64), b = e->NewSession(64), c = e->NewSession(64), d = e->NewSession(64);
  std::vector<float> alone1, alone2, both;
  Engine::SeqInput x{a->get(), r1.prompt, true};
  ASSERT_TRUE(e->Step({&x, 1}, alone1));
  Engine::SeqInput y{b->get(), r2.prompt, true};
  ASSERT_TRUE(e->Step({&y, 1}, alone2));
  Engine::SeqInput xy[2] = {{c->get(), r2.prompt, true}, {d->get(), r1.prompt, true}};
  ASSERT_TRUE(e->Step(xy, both));
  ASSERT_EQ(both.size(), alone1.size() + alone2.size());
  EXPECT_EQ(0, std::memcmp(both.data(), alone2.data(), alone2.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(both.data() + alone2.size(), alone1.data(), alone1.size() * sizeof(float)));
  // Decode steps mixed with a prefill: still identical.
  int32_t t1 = r1.greedy[0];
  std::vector<float> solo, mixed;
  Engine::SeqInput s1{a->get(), {&t1, 1}, false};
  ASSERT_TRUE(e->Step({&s1, 1}, solo));
  auto f = e->NewSession(64);
  Engine::SeqInput m[2] = {{f->get(), r2.prompt, false}, {d->get(), {&t1, 1}, false}};
  ASSERT_TRUE(e->Step(m, mixed));
  EXPECT_EQ(0, std::memcmp(mixed.data() + 1024, solo.data(), 1024 * sizeof(float)));
}

TEST(EngineTest, ThreadCountDoesNotChangeBits) {
  Ref ref = LoadRef("plain-license");
  auto e1 = OpenTiny(1), e2 = OpenTiny(2);
  ASSERT_TRUE(e1 && e2);
  auto s1 = e1->NewSession(64), s2 = e2->NewSession(64);
  std::vector<float> l1, l2;
  Engine::SeqInput a{s1->get(), ref.prompt, true}, b{s2->get(), ref.prompt, true};
  ASSERT_TRUE(e1->Step({&a, 1}, l1));
  ASSERT_TRUE(e2->Step({&b, 1}, l2));
  EXPECT_EQ(0, std::memcmp(l1.data(), l2.data(), l1.size() * sizeof(float)));
}

TEST(EngineTest, SessionBudgetBoundsMemory) {
  EngineOptions o;
  o.threads = 1;
  auto tiny = Engine::Open(testing::DataPath(kModel), o);
  ASSERT_TRUE(tiny);
  const HParams& hp = (*tiny)->hparams();
  uint64_t per = Session::BytesFor(hp, 1000);
  o.session_budget = per * 2 + per / 2;
  auto e = Engine::Open(testing::DataPath(kModel), o);
  ASSERT_TRUE(e);
  auto a = (*e)->NewSession(1000), b = (*e)->NewSession(1000);
  ASSERT_TRUE(a && b);
  auto c = (*e)->NewSession(1000);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ((*e)->budget().used(), 2 * per);
  a->reset();
  EXPECT_EQ((*e)->budget().used(), per);
  EXPECT_TRUE((*e)->NewSession(1000));
}

TEST(EngineTest, BadStepsAreRefusedWithoutChangingState) {
  auto e = OpenTiny(1);
  ASSERT_TRUE(e);
  auto s = e->NewSession(4);
  std::vector<float> logits;
  std::vector<int32_t> bad = {1, 5000};
  Engine::SeqInput in{s->get(), bad, false};
  auto r = e->Step({&in, 1}, logits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  std::vector<int32_t> five = {1, 2, 3, 4, 5};
  Engine::SeqInput big{s->get(), five, false};
  r = e->Step({&big, 1}, logits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted);
  Engine::SeqInput twice[2] = {{s->get(), {five.data(), 1}, false}, {s->get(), {five.data(), 1}, false}};
  EXPECT_FALSE(e->Step(twice, logits));
  EXPECT_EQ((*s)->n_past(), 0);
  Engine::SeqInput ok{s->get(), {five.data(), 4}, false};
  EXPECT_TRUE(e->Step({&ok, 1}, logits));
  EXPECT_EQ((*s)->n_past(), 4);
}

TEST(EngineTest, NotAModelIsRefused) {
  auto e = Engine::Open(testing::DataPath("quant/input.f32"));
  EXPECT_FALSE(e);
}

}  // namespace
}  // namespace tenzro::model

namespace tenzro::model {
namespace {

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
  std::vector<int32_t> prompt(40);
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
