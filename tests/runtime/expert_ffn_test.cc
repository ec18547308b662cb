#include "runtime/expert_ffn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "runtime/matmul.h"
#include "runtime/moe_block.h"
#include "test_weights.h"

namespace tenzro::runtime {
namespace {

using quant::GgmlType;

constexpr int64_t kEmbd = 512, kFf = 256;

ExpertWeights MakeExpert(GgmlType gu, GgmlType down, uint32_t seed) {
  ExpertWeights e;
  e.gate = testing::RandomMatrix(gu, kFf, kEmbd, seed);
  e.up = testing::RandomMatrix(gu, kFf, kEmbd, seed + 1);
  e.down = testing::RandomMatrix(down, kEmbd, kFf, seed + 2);
  return e;
}

std::vector<double> Deq(const WeightMatrix& w) {
  std::vector<float> f(w.rows * w.row_len);
  EXPECT_TRUE(quant::DequantizeRows(w.type, w.data.data(), f.data(), w.rows, w.row_len));
  return {f.begin(), f.end()};
}

// f64 SwiGLU on the dequantized weights.
std::vector<double> RefFfn(const ExpertWeights& e, const std::vector<float>& x, int n_tok) {
  const auto g = Deq(e.gate), u = Deq(e.up), d = Deq(e.down);
  std::vector<double> y(n_tok * kEmbd);
  for (int t = 0; t < n_tok; ++t) {
    std::vector<double> h(kFf);
    for (int64_t f = 0; f < kFf; ++f) {
      double gs = 0, us = 0;
      for (int64_t k = 0; k < kEmbd; ++k) { gs += g[f * kEmbd + k] * x[t * kEmbd + k]; us += u[f * kEmbd + k] * x[t * kEmbd + k]; }
      h[f] = gs / (1 + std::exp(-gs)) * us;
    }
    for (int64_t o = 0; o < kEmbd; ++o) {
      double s = 0;
      for (int64_t f = 0; f < kFf; ++f) s += d[o * kFf + f] * h[f];
      y[t * kEmbd + o] = s;
    }
  }
  return y;
}

double RelL2(const std::vector<float>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) { num += (a[i] - ref[i]) * (a[i] - ref[i]); den += ref[i] * ref[i]; }
  return std::sqrt(num / den);
}

struct FfnCase { GgmlType gu, down; double tol; };

class ExpertFfnTest : public ::testing::TestWithParam<FfnCase> {};

TEST_P(ExpertFfnTest, MatchesF64Reference) {
  const FfnCase c = GetParam();
  const ExpertWeights e = MakeExpert(c.gu, c.down, 10);
  const int n_tok = 5;
  const auto x = testing::RandomActs(n_tok * kEmbd, 3);
  std::vector<float> y(n_tok * kEmbd);
  ASSERT_TRUE(ExpertFfn(e, x.data(), n_tok, y.data()));
  EXPECT_LT(RelL2(y, RefFfn(e, x, n_tok)), c.tol);
}

TEST_P(ExpertFfnTest, BatchThreadsAndSingleTokensAgreeBitwise) {
  const FfnCase c = GetParam();
  const ExpertWeights e = MakeExpert(c.gu, c.down, 20);
  const int n_tok = 9;
  const auto x = testing::RandomActs(n_tok * kEmbd, 4);
  std::vector<float> yb(n_tok * kEmbd), yt(yb.size()), y1(kEmbd);
  ThreadPool pool(2);
  ASSERT_TRUE(ExpertFfn(e, x.data(), n_tok, yb.data()));
  ASSERT_TRUE(ExpertFfn(e, x.data(), n_tok, yt.data(), &pool));
  EXPECT_EQ(0, std::memcmp(yb.data(), yt.data(), yb.size() * 4));
  for (int t = 0; t < n_tok; ++t) {
    ASSERT_TRUE(ExpertFfn(e, x.data() + t * kEmbd, 1, y1.data(), &pool));
    EXPECT_EQ(0, std::memcmp(y1.data(), yb.data() + t * kEmbd, kEmbd * 4)) << "token " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, ExpertFfnTest,
    ::testing::Values(FfnCase{GgmlType::BF16, GgmlType::BF16, 1e-5}, FfnCase{GgmlType::F16, GgmlType::F32, 1e-5},
                      FfnCase{GgmlType::Q4_K, GgmlType::Q6_K, 2e-2}, FfnCase{GgmlType::Q5_K, GgmlType::Q4_K, 2e-2},
                      FfnCase{GgmlType::Q8_0, GgmlType::Q8_0, 2e-2}),
    [](const auto& info) {
      return fmt::format("{}_{}", quant::TypeName(info.param.gu), quant::TypeName(info.param.down));
    });

TEST(SharedExpertTest, SigmoidGate) {
  SharedExpertWeights s;
  s.ffn = MakeExpert(GgmlType::BF16, GgmlType::BF16, 30);
  s.gate_inp = testing::RandomMatrix(GgmlType::F32, 1, kEmbd, 31);
  const int n_tok = 3;
  const auto x = testing::RandomActs(n_tok * kEmbd, 5);
  std::vector<float> y(n_tok * kEmbd), plain(y.size()), logit(n_tok);
  ASSERT_TRUE(SharedExpertFfn(s, x.data(), n_tok, y.data()));
  ASSERT_TRUE(ExpertFfn(s.ffn, x.data(), n_tok, plain.data()));
  ASSERT_TRUE(MatMul(*s.gate_inp, x.data(), n_tok, logit.data()));
  for (int t = 0; t < n_tok; ++t)
    for (int64_t i = 0; i < kEmbd; i += 37)
      EXPECT_FLOAT_EQ(y[t * kEmbd + i], plain[t * kEmbd + i] / (1 + std::exp(-logit[t])));
  s.gate_inp = testing::RandomMatrix(GgmlType::F32, 2, kEmbd, 31);
  EXPECT_FALSE(SharedExpertFfn(s, x.data(), n_tok, y.data()));
}

TEST(MoeBlockTest, GroupsTokensByExpertAndSumsInRoutingOrder) {
  std::vector<ExpertWeights> experts;
  for (int e = 0; e < 4; ++e) experts.push_back(MakeExpert(GgmlType::Q4_K, GgmlType::Q6_K, 100 + 3 * e));
  std::vector<const ExpertWeights*> ptrs;
  for (const auto& e : experts) ptrs.push_back(&e);
  const int n_tok = 6;
  const auto x = testing::RandomActs(n_tok * kEmbd, 6);
  std::vector<TokenRouting> routing(n_tok);
  for (int t = 0; t < n_tok; ++t)
    routing[t].experts = {{(t * 3) % 4, 0.75f}, {(t + 1) % 4, 0.25f}};
  std::vector<float> out(n_tok * kEmbd);
  ThreadPool pool(2);
  ASSERT_TRUE(ComputeRoutedExperts(ptrs, routing, x.data(), kEmbd, out.data(), &pool));
  std::vector<float> y0(kEmbd), y1(kEmbd);
  for (int t = 0; t < n_tok; ++t) {
    ASSERT_TRUE(ExpertFfn(experts[routing[t].experts[0].expert], x.data() + t * kEmbd, 1, y0.data()));
    ASSERT_TRUE(ExpertFfn(experts[routing[t].experts[1].expert], x.data() + t * kEmbd, 1, y1.data()));
    for (int64_t i = 0; i < kEmbd; ++i) {
      float expect = 0.0f;
      expect += 0.75f * y0[i];
      expect += 0.25f * y1[i];
      ASSERT_EQ(out[t * kEmbd + i], expect) << t << " " << i;
    }
  }
  ptrs[2] = nullptr;
  auto missing = ComputeRoutedExperts(ptrs, routing, x.data(), kEmbd, out.data());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace tenzro::runtime
