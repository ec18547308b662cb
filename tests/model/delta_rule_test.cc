// The delta-rule step's ISA variants against a float64 transcription of the
// rule (delta_rule.h), and the dispatcher's choice.
#include "model/delta_rule.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/matmul.h"

namespace tenzro::model {
namespace {

struct Case {
  std::vector<float> S, q, k, v;
  float decay, beta;
};

Case MakeCase(int dk, int dv, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Case c;
  for (int i = 0; i < dk * dv; ++i) c.S.push_back(u(g) * 0.1f);
  for (int i = 0; i < dk; ++i) c.q.push_back(u(g) * 0.1f), c.k.push_back(u(g) * 0.1f);
  for (int i = 0; i < dv; ++i) c.v.push_back(u(g));
  c.decay = 0.9f + 0.1f * std::fabs(u(g));
  c.beta = std::fabs(u(g));
  return c;
}

// S and o in float64, from the same inputs.
void Reference(Case c, int dk, int dv, std::vector<double>& S, std::vector<double>& o) {
  S.assign(c.S.begin(), c.S.end());
  std::vector<double> m(dv, 0.0);
  for (int i = 0; i < dk; ++i)
    for (int j = 0; j < dv; ++j) {
      S[i * dv + j] *= c.decay;
      m[j] += S[i * dv + j] * c.k[i];
    }
  o.assign(dv, 0.0);
  for (int i = 0; i < dk; ++i)
    for (int j = 0; j < dv; ++j) {
      S[i * dv + j] += c.k[i] * (c.v[j] - m[j]) * c.beta;
      o[j] += S[i * dv + j] * c.q[i];
    }
}

double MaxRelErr(const std::vector<float>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

TEST(DeltaRuleTest, VariantsMatchFloat64) {
  for (auto [dk, dv] : {std::pair{128, 128}, {64, 64}, {16, 96}, {8, 8}}) {
    Case c = MakeCase(dk, dv, dk * 31 + dv);
    std::vector<double> S_ref, o_ref;
    Reference(c, dk, dv, S_ref, o_ref);
    std::vector<float> S = c.S, o(dv);
    DeltaRuleStepScalar(S.data(), c.q.data(), c.k.data(), c.v.data(), c.decay, c.beta, dk, dv, o.data());
    EXPECT_LT(MaxRelErr(S, S_ref), 1e-6) << dk << "x" << dv;
    EXPECT_LT(MaxRelErr(o, o_ref), 1e-5) << dk << "x" << dv;
#if defined(__x86_64__)  // the AVX2 step exists on x86-64 only
    if (dv % 32 != 0 || !runtime::KernelIsaSupported(runtime::KernelIsa::kAvx2)) continue;
    std::vector<float> S2 = c.S, o2(dv);
    DeltaRuleStepAvx2(S2.data(), c.q.data(), c.k.data(), c.v.data(), c.decay, c.beta, dk, dv, o2.data());
    EXPECT_LT(MaxRelErr(S2, S_ref), 1e-6) << dk << "x" << dv;
    EXPECT_LT(MaxRelErr(o2, o_ref), 1e-5) << dk << "x" << dv;
#endif
  }
  if (!runtime::KernelIsaSupported(runtime::KernelIsa::kAvx2)) GTEST_SKIP() << "AVX2 variant skipped: CPU lacks AVX2";
}

TEST(DeltaRuleTest, DispatchNeedsWidthsOfThirtyTwo) {
  EXPECT_EQ(DeltaRuleIsa(96 + 8), runtime::KernelIsa::kScalar);
  const runtime::KernelIsa best = runtime::BestKernelIsa();
  const bool x86_simd = best == runtime::KernelIsa::kAvx2 || best == runtime::KernelIsa::kAvx512;
  EXPECT_EQ(DeltaRuleIsa(128), x86_simd ? runtime::KernelIsa::kAvx2 : runtime::KernelIsa::kScalar);
}

}  // namespace
}  // namespace tenzro::model
