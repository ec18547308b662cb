// Engine::Rollback (speculative decoding): a step fed with rollback on and
// then cut back to its first j tokens leaves the session exactly as if only
// those j had been fed — logits compared bit for bit with a fresh session —
// on the tiny Qwen3.5-MoE, whose delta-net and attention layers both hold
// state.
#include <gtest/gtest.h>

#include "model/engine.h"
#include "model/model_reference.h"

namespace tenzro::model {
namespace {

using namespace testref;

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Prompt, then t0..t4 in one rollback step, keep 2, feed t'2: the logits of
// t'2 (and of the next token) equal those of a fresh session fed
// prompt, t0, t1, t'2 the ordinary way; for every keep in 0..5.
TEST(RollbackTest, KeepFirstEqualsFeedingOnlyThose) {
  Ref ref = LoadRef("long-mixed");
  auto e = OpenTiny();
  ASSERT_TRUE(e);
  const std::vector<int32_t> drafted = {17, 400, 33, 901, 5};
  const int32_t other = 222, next = 64;
  for (int keep = 0; keep <= 5; ++keep) {
    auto spec = e->NewSession(256, 5), plain = e->NewSession(256);
    ASSERT_TRUE(spec && plain);
    std::vector<float> a, b, all;
    Engine::SeqInput p1{spec->get(), ref.prompt, false}, p2{plain->get(), ref.prompt, false};
    ASSERT_TRUE(e->Step({&p1, 1}, a));
    ASSERT_TRUE(e->Step({&p2, 1}, b));
    Engine::SeqInput d{spec->get(), drafted, true, true};
    ASSERT_TRUE(e->Step({&d, 1}, all));
    ASSERT_EQ((*spec)->rollback_tokens(), 5);
    ASSERT_TRUE(e->Rollback(spec->get(), keep));
    EXPECT_EQ((*spec)->n_past(), static_cast<int>(ref.prompt.size()) + keep);
    EXPECT_EQ((*spec)->rollback_tokens(), 0);
    if (keep > 0) {  // the plain session: the kept tokens in one ordinary step
      Engine::SeqInput k{plain->get(), {drafted.data(), static_cast<size_t>(keep)}, true};
      std::vector<float> kept;
      ASSERT_TRUE(e->Step({&k, 1}, kept));
      // The rows the rollback step gave for those tokens are the same bits.
      EXPECT_EQ(0, std::memcmp(kept.data(), all.data(), kept.size() * sizeof(float))) << "keep " << keep;
    }
    for (int32_t t : {other, next}) {
      Engine::SeqInput s1{spec->get(), {&t, 1}, false}, s2{plain->get(), {&t, 1}, false};
      ASSERT_TRUE(e->Step({&s1, 1}, a));
      ASSERT_TRUE(e->Step({&s2, 1}, b));
      EXPECT_TRUE(SameBits(a, b)) << "keep " << keep << " token " << t;
    }
    EXPECT_EQ((*spec)->tokens(), (*plain)->tokens());
  }
}

// Rollback is once per rollback step and bounded: misuse is refused without
// changing the session; a session refuses rollback steps longer than it was
// created for (none without rollback), and the extra bytes, which grow with
// that length, are reserved with the session.
TEST(RollbackTest, MisuseIsRefused) {
  auto e = OpenTiny(1);
  ASSERT_TRUE(e);
  auto plain = e->NewSession(128), spec = e->NewSession(128, 4);
  ASSERT_TRUE(plain && spec);
  EXPECT_EQ((*spec)->reserved_bytes(),
            Session::BytesFor(e->hparams(), 128) + Session::RollbackBytes(e->hparams(), 4));
  EXPECT_GT(Session::RollbackBytes(e->hparams(), 8), Session::RollbackBytes(e->hparams(), 4));
  EXPECT_FALSE(e->NewSession(128, Session::kMaxRollbackTokens + 1));
  std::vector<int32_t> toks = {1, 2, 3};
  std::vector<float> logits;
  Engine::SeqInput bad{plain->get(), toks, true, true};
  auto r = e->Step({&bad, 1}, logits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ((*plain)->n_past(), 0);
  std::vector<int32_t> many(5, 7);  // more than the session's 4
  Engine::SeqInput big{spec->get(), many, true, true};
  EXPECT_FALSE(e->Step({&big, 1}, logits));
  EXPECT_FALSE(e->Rollback(spec->get(), 0));  // no rollback step yet
  Engine::SeqInput ok{spec->get(), toks, true, true};
  ASSERT_TRUE(e->Step({&ok, 1}, logits));
  EXPECT_FALSE(e->Rollback(spec->get(), 4));
  EXPECT_FALSE(e->Rollback(spec->get(), -1));
  EXPECT_EQ((*spec)->n_past(), 3);
  ASSERT_TRUE(e->Rollback(spec->get(), 1));
  EXPECT_FALSE(e->Rollback(spec->get(), 1));  // once per step
  EXPECT_EQ((*spec)->n_past(), 1);
  // An ordinary step after a rollback step ends what it kept.
  ASSERT_TRUE(e->Step({&ok, 1}, logits));
  Engine::SeqInput one{spec->get(), {toks.data(), 1}, false};
  ASSERT_TRUE(e->Step({&one, 1}, logits));
  EXPECT_FALSE(e->Rollback(spec->get(), 0));
}

}  // namespace
}  // namespace tenzro::model
