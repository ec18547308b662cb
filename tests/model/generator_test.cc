// Generation (prefill, sample, feed) on the tiny model against the
// reference's greedy continuation.
#include "model/generator.h"

#include <gtest/gtest.h>

#include "model/model_reference.h"

namespace tenzro::model {
namespace {

using namespace testref;

// Greedy generation reproduces the reference's 16 greedy tokens and its
// logits rows (prompt + 15 fed tokens).
TEST(GeneratorTest, GreedyMatchesReference) {
  Ref ref = LoadRef("plain-license");
  auto e = OpenTiny();
  ASSERT_TRUE(e);
  auto s = e->NewSession(128);
  GenerateOptions o;
  o.max_tokens = 16;
  o.ignore_eog = true;
  o.collect_logits = true;
  int streamed = 0;
  auto r = Generate(*e, **s, ref.prompt, o, [&](int32_t) { return ++streamed > 0; });
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->tokens, ref.greedy);
  EXPECT_EQ(streamed, 16);
  EXPECT_EQ(r->finish, FinishReason::kLength);
  ASSERT_EQ(r->logits.size(), ref.logits.size());
  for (int row = 0; row < ref.rows; ++row) EXPECT_LT(RelL2(r->logits.data() + row * 1024, ref.logits.data() + row * 1024, 1024), 1e-5);
}

TEST(GeneratorTest, StopsOnEogAndOnCallback) {
  Ref ref = LoadRef("chat-hi");
  auto e = OpenTiny();
  ASSERT_TRUE(e);
  GenerateOptions o;
  o.max_tokens = 16;
  o.eog = {ref.greedy[3]};  // pretend the 4th greedy token ends generation
  auto s1 = e->NewSession(64);
  auto r = Generate(*e, **s1, ref.prompt, o, nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->finish, FinishReason::kEog);
  EXPECT_EQ(r->tokens, std::vector<int32_t>(ref.greedy.begin(), ref.greedy.begin() + 3));
  o.eog.clear();
  auto s2 = e->NewSession(64);
  r = Generate(*e, **s2, ref.prompt, o, [&](int32_t t) { return t != ref.greedy[1]; });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->finish, FinishReason::kStop);
  EXPECT_EQ(r->tokens.size(), 2u);
}

// The same seed gives the same tokens; sampling at a temperature differs
// from greedy somewhere over 32 tokens of a random model.
TEST(GeneratorTest, SeededSamplingIsReproducible) {
  Ref ref = LoadRef("chat-hi");
  auto e = OpenTiny();
  ASSERT_TRUE(e);
  GenerateOptions o;
  o.max_tokens = 32;
  o.ignore_eog = true;
  o.sampling.temperature = 1.0f;
  o.sampling.top_k = 40;
  o.sampling.seed = 42;
  auto a = e->NewSession(64), b = e->NewSession(64), c = e->NewSession(64);
  auto ra = Generate(*e, **a, ref.prompt, o, nullptr);
  auto rb = Generate(*e, **b, ref.prompt, o, nullptr);
  o.sampling.seed = 43;
  auto rc = Generate(*e, **c, ref.prompt, o, nullptr);
  ASSERT_TRUE(ra && rb && rc);
  EXPECT_EQ(ra->tokens, rb->tokens);
  EXPECT_NE(ra->tokens, rc->tokens);
}

GenerateOptions Speculative(int k) {
  GenerateOptions o;
  o.draft.draft_max = k;
  o.draft.ngram_min = 1;
  o.draft.ngram_max = 3;
  return o;
}

// Speculative greedy generation (drafts verified in one step, rollback of
// the rejected ones) reproduces the reference's greedy tokens, and its
// logits rows pass the same f64 comparison: with prompt-lookup drafts (on
// this random model, mostly rejected) and with an oracle drafter (the
// reference's tokens, every 5th one wrong: multi-row verify steps kept).
TEST(GeneratorTest, SpeculativeGreedyMatchesReference) {
  for (const char* name : {"plain-license", "long-mixed", "oracle:plain-license", "oracle:long-mixed"}) {
    const bool oracle = std::string(name).starts_with("oracle:");
    Ref ref = LoadRef(oracle ? name + 7 : name);
    auto e = OpenTiny();
    ASSERT_TRUE(e);
    auto s = e->NewSession(256, 9);
    GenerateOptions o = Speculative(4);
    if (oracle)
      o.drafter = [&](std::span<const int32_t> h, int max) {
        std::vector<int32_t> d;
        for (size_t g = h.size() - ref.prompt.size(); g < ref.greedy.size() && static_cast<int>(d.size()) < max; ++g)
          d.push_back(g % 5 == 2 ? (ref.greedy[g] + 1) % 1024 : ref.greedy[g]);
        return d;
      };
    o.max_tokens = static_cast<int>(ref.greedy.size());
    o.ignore_eog = true;
    o.collect_logits = true;
    auto r = Generate(*e, **s, ref.prompt, o, nullptr);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->tokens, ref.greedy) << name;
    ASSERT_EQ(r->logits.size(), ref.logits.size()) << name;
    for (int row = 0; row < ref.rows; ++row)
      EXPECT_LT(RelL2(r->logits.data() + row * 1024, ref.logits.data() + row * 1024, 1024), 1e-5) << name;
    std::printf("%s: %d steps for %zu tokens, %d drafted, %d accepted\n", name, r->steps, r->tokens.size(),
                r->drafted, r->accepted);
  }
}

// Greedy with drafts == greedy without, token for token and logits bit for
// bit, with a repetition penalty (the verifier's history must be the
// accepted tokens') and with stops inside a verified draft. The random tiny
// model rarely repeats itself, so prompt-lookup drafts are mostly rejected;
// an oracle drafter (the plain run's tokens, every 7th one wrong) makes
// drafts accepted in full, in part and not at all.
TEST(GeneratorTest, SpeculativeGreedyEqualsPlainGreedy) {
  Ref ref = LoadRef("long-mixed");
  auto e = OpenTiny();
  ASSERT_TRUE(e);
  for (float penalty : {1.0f, 1.3f}) {
    GenerateOptions plain;
    plain.max_tokens = 96;
    plain.ignore_eog = true;
    plain.collect_logits = true;
    plain.sampling.repetition_penalty = penalty;
    auto base_s = e->NewSession(256);
    auto base = Generate(*e, **base_s, ref.prompt, plain, nullptr);
    ASSERT_TRUE(base);
    const std::vector<int32_t> truth = base->tokens;
    const size_t n_prompt = ref.prompt.size();
    for (int k : {1, 3, 8}) {
      GenerateOptions spec = plain;
      spec.draft = Speculative(k).draft;
      spec.drafter = [&](std::span<const int32_t> h, int max) {
        std::vector<int32_t> d;
        for (size_t g = h.size() - n_prompt; g < truth.size() && static_cast<int>(d.size()) < max; ++g)
          d.push_back(g % 7 == 3 ? (truth[g] + 1) % 1024 : truth[g]);
        return d;
      };
      auto a = e->NewSession(256), b = e->NewSession(256, 9);
      auto ra = Generate(*e, **a, ref.prompt, plain, nullptr);
      auto rb = Generate(*e, **b, ref.prompt, spec, nullptr);
      ASSERT_TRUE(ra && rb);
      EXPECT_EQ(ra->tokens, rb->tokens) << "k " << k << " penalty " << penalty;
      ASSERT_EQ(ra->logits.size(), rb->logits.size());
      EXPECT_EQ(0, std::memcmp(ra->logits.data(), rb->logits.data(), ra->logits.size() * sizeof(float)));
      EXPECT_EQ(ra->steps, 95);
      EXPECT_GT(rb->accepted, 0) << "k " << k << ": no draft accepted, the test shows nothing";
      EXPECT_LT(rb->accepted, rb->drafted);
      EXPECT_EQ(rb->steps + rb->accepted, 95);  // each step: one token plus the accepted drafts
      // Prompt lookup (mostly rejected here): the same tokens and bits too.
      GenerateOptions lookup = spec;
      lookup.drafter = nullptr;
      auto l = e->NewSession(256, 9);
      auto rl = Generate(*e, **l, ref.prompt, lookup, nullptr);
      ASSERT_TRUE(rl);
      EXPECT_EQ(rl->tokens, truth);
      ASSERT_EQ(rl->logits.size(), ra->logits.size());
      EXPECT_EQ(0, std::memcmp(ra->logits.data(), rl->logits.data(), ra->logits.size() * sizeof(float)));
      EXPECT_GT(rl->drafted, 0);
      std::printf("k %d penalty %.1f: %d steps for %zu tokens, %d drafted, %d accepted\n", k, penalty, rb->steps,
                  rb->tokens.size(), rb->drafted, rb->accepted);
      // Stopping at every position: the same tokens and rows as without drafts.
      for (int stop_at : {5, 17, 40}) {
        auto c = e->NewSession(256), d = e->NewSession(256, 9);
        auto stop = [&](int32_t) { return --stop_at > 0; };
        int saved = stop_at;
        auto rc = Generate(*e, **c, ref.prompt, plain, stop);
        stop_at = saved;
        auto rd = Generate(*e, **d, ref.prompt, spec, stop);
        ASSERT_TRUE(rc && rd);
        EXPECT_EQ(rc->tokens, rd->tokens);
        EXPECT_EQ(rd->finish, FinishReason::kStop);
        EXPECT_EQ(rc->logits.size(), rd->logits.size());
        EXPECT_EQ((*c)->tokens(), (*d)->tokens());
      }
    }
  }
}

// An end-of-generation token inside an accepted draft ends generation there.
TEST(GeneratorTest, SpeculativeStopsOnEog) {
  Ref ref = LoadRef("long-mixed");
  auto e = OpenTiny();
  ASSERT_TRUE(e);
  GenerateOptions plain;
  plain.max_tokens = 64;
  auto a = e->NewSession(256);
  auto base = Generate(*e, **a, ref.prompt, plain, nullptr);
  ASSERT_TRUE(base);
  for (int at : {10, 30, 50}) {
    GenerateOptions o = plain;
    o.eog = {base->tokens[at]};
    GenerateOptions spec = o;
    spec.draft = Speculative(6).draft;
    auto b = e->NewSession(256), c = e->NewSession(256, 9);
    auto rb = Generate(*e, **b, ref.prompt, o, nullptr);
    auto rc = Generate(*e, **c, ref.prompt, spec, nullptr);
    ASSERT_TRUE(rb && rc);
    EXPECT_EQ(rb->tokens, rc->tokens);
    EXPECT_EQ(rc->finish, FinishReason::kEog);
  }
}

// A session too small for the generation: drafts never feed past it.
TEST(GeneratorTest, SpeculativeRespectsSessionCapacity) {
  Ref ref = LoadRef("long-mixed");
  auto e = OpenTiny();
  ASSERT_TRUE(e);
  const int cap = static_cast<int>(ref.prompt.size()) + 20;
  GenerateOptions o = Speculative(8);
  o.max_tokens = 100;
  o.ignore_eog = true;
  auto a = e->NewSession(cap), b = e->NewSession(cap, 9);
  GenerateOptions plain = o;
  plain.draft.draft_max = 0;
  auto ra = Generate(*e, **a, ref.prompt, plain, nullptr);
  auto rb = Generate(*e, **b, ref.prompt, o, nullptr);
  ASSERT_TRUE(ra && rb) << (rb ? "" : rb.error().ToString());
  EXPECT_EQ(ra->tokens, rb->tokens);
  EXPECT_EQ(rb->finish, FinishReason::kLength);
  auto c = e->NewSession(cap);  // drafts on a session without rollback: refused
  EXPECT_FALSE(Generate(*e, **c, ref.prompt, o, nullptr));
}

// At a temperature: seeded speculative sampling is reproducible.
TEST(GeneratorTest, SpeculativeSamplingIsReproducible) {
  Ref ref = LoadRef("chat-hi");
  auto e = OpenTiny();
  ASSERT_TRUE(e);
  GenerateOptions o = Speculative(4);
  o.max_tokens = 48;
  o.ignore_eog = true;
  o.sampling.temperature = 0.7f;
  o.sampling.seed = 7;
  auto a = e->NewSession(128, 9), b = e->NewSession(128, 9);
  auto ra = Generate(*e, **a, ref.prompt, o, nullptr);
  auto rb = Generate(*e, **b, ref.prompt, o, nullptr);
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(ra->tokens, rb->tokens);
  EXPECT_EQ(ra->tokens.size(), 48u);
}

}  // namespace
}  // namespace tenzro::model
