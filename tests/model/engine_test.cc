// The model engine against the float64 reference of the tiny Qwen3.5-MoE
// (tests/data/model/README.md: computed by an implementation of llama.cpp's
// qwen35moe graph that is not ours), plus the engine's own contracts:
// prefill == token-by-token, batch independence, threads, the session budget.
#include "model/engine.h"

#include <gtest/gtest.h>

#include "model/model_reference.h"

namespace tenzro::model {
namespace {

using namespace testref;

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
