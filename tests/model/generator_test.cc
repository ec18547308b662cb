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

}  // namespace
}  // namespace tenzro::model
