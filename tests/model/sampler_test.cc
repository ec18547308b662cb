#include "model/sampler.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace tenzro::model {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Sampler Make(const SamplingParams& p) {
  auto s = Sampler::Create(p);
  EXPECT_TRUE(s) << s.error().ToString();
  return std::move(*s);
}

int32_t SampleOk(Sampler& s, std::span<const float> logits) {
  auto t = s.Sample(logits);
  EXPECT_TRUE(t) << t.error().ToString();
  return t ? *t : -1;
}

// Empirical frequencies of `n` draws.
std::vector<double> Frequencies(Sampler& s, const std::vector<float>& logits, int n) {
  std::vector<double> f(logits.size());
  for (int i = 0; i < n; ++i) f[static_cast<size_t>(SampleOk(s, logits))] += 1.0 / n;
  return f;
}

TEST(Sampler, GreedyTiesGoToLowestIdAndNanIsMinusInf) {
  Sampler s = Make({});
  EXPECT_EQ(SampleOk(s, std::vector<float>{1, 3, 3, 2}), 1);
  EXPECT_EQ(SampleOk(s, std::vector<float>{kNan, -5, kNan, -5}), 1);
  EXPECT_EQ(SampleOk(s, std::vector<float>{-kInf, kNan, -1e30f}), 2);
  EXPECT_EQ(SampleOk(s, std::vector<float>{0, kInf, kInf}), 1);
  for (auto row : {std::vector<float>{-kInf, kNan}, std::vector<float>{}}) {
    auto t = s.Sample(row);
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().code(), ErrorCode::kInvalidArgument);
  }
  // Stochastic mode refuses an all -inf row too.
  Sampler st = Make({.temperature = 1});
  EXPECT_FALSE(st.Sample(std::vector<float>{-kInf, kNan}));
}

TEST(Sampler, SameSeedSameTokensDifferentSeedsDiffer) {
  std::vector<float> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(i * 0.37) * 3);
  auto run = [&](uint64_t seed) {
    Sampler s = Make({.temperature = 0.9f, .top_k = 200, .top_p = 0.95f, .seed = seed});
    std::vector<int32_t> out;
    for (int i = 0; i < 1000; ++i) out.push_back(SampleOk(s, logits));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, RngIsPinned) {
  // xoshiro256** over SplitMix64(0): a change of generator changes every
  // seeded sample, which must be deliberate.
  Rng a(0), b(0), c(1);
  const uint64_t first = a.Next();
  EXPECT_EQ(first, b.Next());
  EXPECT_NE(first, c.Next());
  for (int i = 0; i < 1000; ++i) {
    const double d = a.NextDouble();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
}

TEST(Sampler, FollowsSoftmaxAtTemperature) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f, 0.0f};
  const auto t0 = std::chrono::steady_clock::now();
  for (float temp : {1.0f, 0.5f, 2.0f}) {
    Sampler s = Make({.temperature = temp, .seed = 7});
    const int n = 60000;
    auto f = Frequencies(s, logits, n);
    std::vector<double> p(logits.size());
    double z = 0;
    for (size_t i = 0; i < p.size(); ++i) z += p[i] = std::exp(logits[i] / temp);
    double chi2 = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] /= z;
      if (p[i] * n < 5) continue;  // too rare for the chi-square approximation
      chi2 += (f[i] * n - p[i] * n) * (f[i] * n - p[i] * n) / (p[i] * n);
    }
    // 5 degrees of freedom: P(chi2 > 25) ~ 1.4e-4 (and the seed is fixed).
    EXPECT_LT(chi2, 25.0) << "temperature " << temp;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(Sampler, TopKOneIsGreedy) {
  std::vector<float> logits(151936);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::cos(i * 0.001) + i % 7);
  Sampler greedy = Make({});
  Sampler k1 = Make({.temperature = 1.5f, .top_k = 1, .seed = 3});
  for (int i = 0; i < 20; ++i) {
    logits[static_cast<size_t>(i * 997)] = 50.0f + i;  // move the max around
    EXPECT_EQ(SampleOk(k1, logits), SampleOk(greedy, logits));
  }
}

TEST(Sampler, TopKKeepsTheKBest) {
  const std::vector<float> logits = {0, 5, 1, 4, 2, 3};
  Sampler s = Make({.temperature = 100, .top_k = 3, .seed = 1});  // nearly uniform over the kept
  auto f = Frequencies(s, logits, 3000);
  EXPECT_EQ(f[0] + f[2] + f[4], 0.0);
  EXPECT_GT(f[1], 0.25);
  EXPECT_GT(f[3], 0.25);
  EXPECT_GT(f[5], 0.25);
}

TEST(Sampler, TopPKeepsSmallestSetReachingP) {
  // Probabilities 0.5, 0.25, 0.125, 0.125 (ids 2, 0, 1, 3).
  const std::vector<float> logits = {std::log(0.25f), std::log(0.125f), std::log(0.5f), std::log(0.125f)};
  {
    Sampler s = Make({.temperature = 1, .top_p = 0.7f, .seed = 5});  // 0.5 < 0.7 <= 0.75: {2, 0}
    auto f = Frequencies(s, logits, 6000);
    EXPECT_EQ(f[1] + f[3], 0.0);
    EXPECT_NEAR(f[2], 2.0 / 3, 0.03);
  }
  {
    Sampler s = Make({.temperature = 1, .top_p = 0.45f, .seed = 5});  // the top token alone reaches it: {2}
    auto f = Frequencies(s, logits, 500);
    EXPECT_EQ(f[0] + f[1] + f[3], 0.0);
  }
  {
    Sampler s = Make({.temperature = 1, .top_p = 0.8f, .seed = 5});  // 0.75 < 0.8: {2, 0, 1} (tie to lower id)
    auto f = Frequencies(s, logits, 6000);
    EXPECT_EQ(f[3], 0.0);
    EXPECT_GT(f[1], 0.1);
  }
}

TEST(Sampler, TopPOnLargeVocabularyMatchesFullSort) {
  // top_k = V forces a full sort; without top_k only a prefix is sorted. A
  // flat distribution needs several rounds of the partial sort.
  for (float scale : {8.0f, 0.01f}) {
    std::vector<float> logits(151936);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(i * 0.731) * scale);
    Sampler partial = Make({.temperature = 1, .top_p = 0.9f, .seed = 11});
    Sampler full = Make({.temperature = 1, .top_k = 151936, .top_p = 0.9f, .seed = 11});
    for (int i = 0; i < 5; ++i) ASSERT_EQ(SampleOk(partial, logits), SampleOk(full, logits)) << scale << " " << i;
  }
}

TEST(Sampler, MinPDropsTokensBelowFractionOfMax) {
  // p relative to max: 1, 0.5, 0.25, 0.1.
  const std::vector<float> logits = {0, std::log(0.5f), std::log(0.25f), std::log(0.1f)};
  Sampler s = Make({.temperature = 1, .min_p = 0.3f, .seed = 9});
  auto f = Frequencies(s, logits, 6000);
  EXPECT_EQ(f[2] + f[3], 0.0);
  EXPECT_NEAR(f[0], 2.0 / 3, 0.03);
  Sampler s2 = Make({.temperature = 1, .min_p = 0.2f, .seed = 9});  // keeps 0.25, drops 0.1
  auto f2 = Frequencies(s2, logits, 6000);
  EXPECT_GT(f2[2], 0.0);
  EXPECT_EQ(f2[3], 0.0);
}

// Penalties are observed through greedy: the winner is the token whose
// penalized logit is highest, so each case pins the exact amount.
TEST(Sampler, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  SamplingParams p{.repetition_penalty = 2};
  {
    Sampler s = Make(p);
    s.Accept(0);
    // 4/2 = 2 < 2.1: token 1 wins; 4/2 = 2 > 1.9: token 0 would win.
    EXPECT_EQ(SampleOk(s, std::vector<float>{4, 2.1f}), 1);
    EXPECT_EQ(SampleOk(s, std::vector<float>{4, 1.9f}), 0);
  }
  {
    Sampler s = Make(p);
    s.Accept(0);
    // -1 * 2 = -2 < -1.9: token 1 wins; but -2 > -2.1.
    EXPECT_EQ(SampleOk(s, std::vector<float>{-1, -1.9f}), 1);
    EXPECT_EQ(SampleOk(s, std::vector<float>{-1, -2.1f}), 0);
    // Counted once however often it appears.
    s.Accept(0);
    s.Accept(0);
    EXPECT_EQ(SampleOk(s, std::vector<float>{-1, -2.1f}), 0);
  }
}

TEST(Sampler, PresenceAndFrequencyPenaltiesFollowOpenAi) {
  Sampler s = Make({.presence_penalty = 0.5f, .frequency_penalty = 0.25f});
  s.Accept(1);
  s.Accept(1);
  s.Accept(1);  // count 3: 10 - 0.5 - 0.75 = 8.75
  EXPECT_EQ(SampleOk(s, std::vector<float>{8.7f, 10, 0}), 1);
  EXPECT_EQ(SampleOk(s, std::vector<float>{8.8f, 10, 0}), 0);
  s.Accept(2);  // count 1: 9.5 - 0.5 - 0.25 = 8.75; token 1 unchanged
  EXPECT_EQ(SampleOk(s, std::vector<float>{8.76f, 10, 9.5f}), 0);
  EXPECT_EQ(SampleOk(s, std::vector<float>{8.74f, 10, 9.5f}), 1);
  // Negative penalties raise a token.
  Sampler up = Make({.presence_penalty = -1});
  up.Accept(0);
  EXPECT_EQ(SampleOk(up, std::vector<float>{1, 1.9f}), 0);
}

TEST(Sampler, PenaltyWindowIsLastN) {
  Sampler s = Make({.presence_penalty = 2, .penalty_last_n = 2});
  s.Accept(0);
  s.Accept(5);
  s.Accept(6);  // 0 has left the window
  EXPECT_EQ(s.History(), (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(SampleOk(s, std::vector<float>{1, 0.5f}), 0);
  Sampler off = Make({.presence_penalty = 2, .penalty_last_n = 0});
  off.Accept(0);
  EXPECT_EQ(SampleOk(off, std::vector<float>{1, 0.5f}), 0);
  // Ids beyond this row's vocabulary are ignored.
  Sampler big = Make({.presence_penalty = 2});
  big.Accept(100);
  EXPECT_EQ(SampleOk(big, std::vector<float>{1, 0.5f}), 0);
}

TEST(Sampler, ValidateNamesTheField) {
  struct Case {
    SamplingParams p;
    const char* field;
  } cases[] = {
      {{.temperature = -0.1f}, "temperature"},
      {{.temperature = kNan}, "temperature"},
      {{.temperature = kInf}, "temperature"},
      {{.top_k = -1}, "top_k"},
      {{.top_p = 0}, "top_p"},
      {{.top_p = 1.01f}, "top_p"},
      {{.top_p = kNan}, "top_p"},
      {{.min_p = 1}, "min_p"},
      {{.min_p = -0.1f}, "min_p"},
      {{.repetition_penalty = 0}, "repetition_penalty"},
      {{.presence_penalty = 2.5f}, "presence_penalty"},
      {{.frequency_penalty = kNan}, "frequency_penalty"},
      {{.penalty_last_n = -1}, "penalty_last_n"},
  };
  for (const auto& c : cases) {
    auto r = c.p.Validate();
    ASSERT_FALSE(r) << c.field;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(c.field), std::string::npos) << r.error().message();
    EXPECT_FALSE(Sampler::Create(c.p));
  }
  EXPECT_TRUE(SamplingParams{}.Validate());
  EXPECT_TRUE((SamplingParams{.temperature = 0.7f, .top_k = 40, .top_p = 0.9f, .min_p = 0.05f}.Validate()));
}

TEST(Sampler, LargeVocabularyIsFast) {
  std::vector<float> logits(151936);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(i * 0.01) * 8);
  Sampler s = Make({.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                    .repetition_penalty = 1.1f, .seed = 1});
  for (int i = 0; i < 64; ++i) s.Accept(i * 31);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) s.Accept(SampleOk(s, logits));
  // About 1 ms a call on a busy core; the bound only catches something gone quadratic.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(Logprobs, ChosenAndTopAreLogSoftmax) {
  const std::vector<float> logits = {1, 3, 3, kNan, 0};
  auto r = Logprobs(logits, 4, 3);
  ASSERT_TRUE(r) << r.error().ToString();
  const double z = std::log(std::exp(1.0) + 2 * std::exp(3.0) + 1.0);
  EXPECT_EQ(r->chosen.id, 4);
  EXPECT_NEAR(r->chosen.logprob, 0 - z, 1e-6);
  ASSERT_EQ(r->top.size(), 3u);
  EXPECT_EQ(r->top[0].id, 1);
  EXPECT_EQ(r->top[1].id, 2);
  EXPECT_EQ(r->top[2].id, 0);
  EXPECT_NEAR(r->top[0].logprob, 3 - z, 1e-6);
  EXPECT_NEAR(r->top[2].logprob, 1 - z, 1e-6);
  // Huge logits stay finite thanks to the max subtraction.
  auto big = Logprobs(std::vector<float>{1e30f, 1e30f}, 0, 0);
  ASSERT_TRUE(big);
  EXPECT_NEAR(big->chosen.logprob, -std::log(2.0), 1e-6);
  EXPECT_TRUE(big->top.empty());
  EXPECT_EQ(Logprobs(logits, 3, 1)->chosen.logprob, -kInf);
  EXPECT_EQ(Logprobs(logits, 0, 99)->top.size(), 5u);
  EXPECT_FALSE(Logprobs(logits, 5, 1));
  EXPECT_FALSE(Logprobs(logits, -1, 1));
  EXPECT_FALSE(Logprobs(logits, 0, -1));
  EXPECT_FALSE(Logprobs(std::vector<float>{kNan}, 0, 1));
}

// Speculative sampling's rule for a deterministic draft (accept x with
// probability p(x), else draw from p without x) yields tokens distributed as
// Sample's, whichever token is drafted — one likely, one unlikely, one
// outside top-k (p = 0) — with top-k and a temperature in the chain.
TEST(Sampler, SampleDraftKeepsTheDistribution) {
  const std::vector<float> logits = {2.0f, 1.0f, 0.5f, -1.0f, 0.0f};
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 4;  // drops id 3
  std::vector<double> want(5, 0.0);
  double z = 0;
  for (int i : {0, 1, 2, 4}) z += want[i] = std::exp(logits[i] / 0.8);
  for (double& w : want) w /= z;
  const int n = 200000;
  for (int32_t draft : {0, 2, 3}) {
    p.seed = 11 + draft;
    auto s = Sampler::Create(p);
    ASSERT_TRUE(s);
    std::vector<int> count(5, 0);
    int accepted = 0;
    for (int i = 0; i < n; ++i) {
      auto t = s->SampleDraft(logits, draft);
      ASSERT_TRUE(t);
      count[*t]++;
      accepted += *t == draft;
    }
    for (int i = 0; i < 5; ++i)
      EXPECT_NEAR(count[i] / static_cast<double>(n), want[i], 0.005) << "draft " << draft << " token " << i;
    EXPECT_NEAR(accepted / static_cast<double>(n), want[draft], 0.005);
  }
  // Greedy: the argmax, whatever the draft.
  auto g = Sampler::Create(SamplingParams{});
  ASSERT_TRUE(g);
  EXPECT_EQ(*g->SampleDraft(logits, 3), 0);
}

}  // namespace
}  // namespace tenzro::model
