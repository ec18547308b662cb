#include "runtime/gating.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace tenzro::runtime {
namespace {

std::vector<int> Experts(const TokenRouting& r) {
  std::vector<int> e;
  for (const auto& c : r.experts) e.push_back(c.expert);
  return e;
}

TEST(GatingTest, SoftmaxTopKRenormalises) {
  const float logits[6] = {0.1f, 2.0f, -1.0f, 1.5f, 2.0f, 0.0f};
  RoutingConfig c;
  c.top_k = 3;
  auto r = SelectExperts(logits, 6, c);
  ASSERT_TRUE(r);
  EXPECT_EQ(Experts(*r), (std::vector<int>{1, 4, 3}));  // tie 1 vs 4: lower index first
  const double e2 = std::exp(2.0), e15 = std::exp(1.5);
  EXPECT_NEAR(r->experts[0].weight, e2 / (2 * e2 + e15), 1e-6);
  EXPECT_NEAR(r->experts[2].weight, e15 / (2 * e2 + e15), 1e-6);
  c.norm_topk_prob = false;
  auto u = SelectExperts(logits, 6, c);
  double z = 0;
  for (float l : logits) z += std::exp(double(l));
  EXPECT_NEAR(u->experts[0].weight, e2 / z, 1e-6);
}

TEST(GatingTest, TopKThenSoftmax) {
  const float logits[4] = {1.0f, 3.0f, 2.0f, -5.0f};
  RoutingConfig c;
  c.kind = RoutingKind::kTopKSoftmax;
  c.top_k = 2;
  auto r = SelectExperts(logits, 4, c);
  ASSERT_TRUE(r);
  EXPECT_EQ(Experts(*r), (std::vector<int>{1, 2}));
  EXPECT_NEAR(r->experts[0].weight, 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(r->experts[0].weight + r->experts[1].weight, 1.0, 1e-6);
}

TEST(GatingTest, DeepSeekGroupLimitedSelection) {
  // 8 experts in 4 groups of 2; keep the best 2 groups, then top 2 by biased score.
  const float logits[8] = {3.0f, -3.0f, 1.0f, 1.0f, 2.5f, 2.4f, -1.0f, 0.5f};
  std::vector<float> bias = {0, 0, 0, 0, 0, 0, 0, 2.0f};
  RoutingConfig c;
  c.kind = RoutingKind::kSigmoidGroupTopK;
  c.top_k = 2;
  c.n_group = 4;
  c.topk_group = 2;
  c.routed_scaling_factor = 2.5f;
  auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  // Biased group scores: g0 = s(3)+s(-3) = 1.0, g1 = 2 s(1) = 1.46, g2 = s(2.5)+s(2.4) = 1.84,
  // g3 = s(-1)+s(.5)+2 = 2.89. Groups 3 and 2 win; top 2 biased: 7 (2.62), 4 (0.924).
  auto r = SelectExperts(logits, 8, c, bias);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(Experts(*r), (std::vector<int>{7, 4}));
  // Weights use the unbiased sigmoid, renormalised, times the scaling factor.
  const double s7 = sig(0.5), s4 = sig(2.5);
  EXPECT_NEAR(r->experts[0].weight, 2.5 * s7 / (s7 + s4), 1e-6);
  EXPECT_NEAR(r->experts[1].weight, 2.5 * s4 / (s7 + s4), 1e-6);
  // Without groups expert 0 (s = .953) beats 4.
  c.n_group = 1;
  c.topk_group = 1;
  auto flat = SelectExperts(logits, 8, c, bias);
  EXPECT_EQ(Experts(*flat), (std::vector<int>{7, 0}));
}

TEST(GatingTest, RejectsBadConfig) {
  const float logits[8] = {};
  RoutingConfig c;
  c.top_k = 9;
  EXPECT_EQ(SelectExperts(logits, 8, c).error().code(), ErrorCode::kInvalidArgument);
  c.top_k = 0;
  EXPECT_FALSE(SelectExperts(logits, 8, c));
  c = {};
  c.kind = RoutingKind::kSigmoidGroupTopK;
  c.top_k = 4;
  c.n_group = 3;  // does not divide 8
  EXPECT_FALSE(SelectExperts(logits, 8, c));
  c.n_group = 4;
  c.topk_group = 1;  // one group of 2 cannot supply 4
  EXPECT_FALSE(SelectExperts(logits, 8, c));
}

TEST(GatingTest, AllEqualLogitsPickLowestIndices) {
  const float logits[8] = {};
  RoutingConfig c;
  c.top_k = 3;
  auto r = SelectExperts(logits, 8, c);
  EXPECT_EQ(Experts(*r), (std::vector<int>{0, 1, 2}));
}

TEST(GatingTest, RouteComputesLogitsWithRouterMatrix) {
  const int n_expert = 4, n_embd = 8;
  std::vector<float> w(n_expert * n_embd, 0.0f);
  for (int e = 0; e < n_expert; ++e) w[e * n_embd + e] = 1.0f;  // logit e = x[e]
  RouterWeights router;
  router.w = *WeightMatrix::Borrow(quant::GgmlType::F32, n_embd, n_expert,
                                   ByteSpan(reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4));
  router.logit_bias = {0, 0, 0, 10.0f};
  RoutingConfig c;
  c.top_k = 2;
  std::vector<float> x = {0.5f, 3.0f, 1.0f, -20.0f, 0, 0, 0, 0,  // token 0
                          2.0f, 0.0f, 1.0f, -8.5f, 0, 0, 0, 0};  // token 1
  auto r = Route(router, c, x.data(), 2);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(Experts((*r)[0]), (std::vector<int>{1, 2}));
  EXPECT_EQ(Experts((*r)[1]), (std::vector<int>{0, 3}));  // 1.5 after bias, below 2.0
  router.logit_bias = {1.0f};
  EXPECT_FALSE(Route(router, c, x.data(), 2));
}

}  // namespace
}  // namespace tenzro::runtime
