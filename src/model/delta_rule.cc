#include "model/delta_rule.h"

#include <algorithm>

#include "model/layers.h"
#include "runtime/matmul.h"

namespace tenzro::model {

void DeltaRuleStepScalar(float* __restrict S, const float* __restrict q, const float* __restrict k,
                         const float* __restrict v, float decay, float beta, int d_k, int d_v, float* __restrict o) {
  float m[kMaxDeltaDv];
  std::fill_n(m, d_v, 0.0f);
  for (int i = 0; i < d_k; ++i) {
    float* __restrict row = S + static_cast<int64_t>(i) * d_v;
    const float ki = k[i];
    for (int j = 0; j < d_v; ++j) {
      row[j] *= decay;
      m[j] += row[j] * ki;
    }
  }
  for (int j = 0; j < d_v; ++j) m[j] = (v[j] - m[j]) * beta;
  std::fill_n(o, d_v, 0.0f);
  for (int i = 0; i < d_k; ++i) {
    float* __restrict row = S + static_cast<int64_t>(i) * d_v;
    const float ki = k[i], qi = q[i];
    for (int j = 0; j < d_v; ++j) {
      row[j] += ki * m[j];
      o[j] += row[j] * qi;
    }
  }
}

// The AVX2 step exists on x86-64 only (delta_rule_avx2.cc); other targets
// run the scalar step.
runtime::KernelIsa DeltaRuleIsa(int d_v) {
  static const bool avx2 = runtime::BestKernelIsa() >= runtime::KernelIsa::kAvx2 &&
                           runtime::BestKernelIsa() <= runtime::KernelIsa::kAvx512;
  return avx2 && d_v % 32 == 0 ? runtime::KernelIsa::kAvx2 : runtime::KernelIsa::kScalar;
}

void DeltaRuleStep(float* S, const float* q, const float* k, const float* v, float decay, float beta, int d_k, int d_v,
                   float* o) {
#if defined(__x86_64__)
  if (DeltaRuleIsa(d_v) == runtime::KernelIsa::kAvx2) {
    DeltaRuleStepAvx2(S, q, k, v, decay, beta, d_k, d_v, o);
    return;
  }
#endif
  DeltaRuleStepScalar(S, q, k, v, decay, beta, d_k, d_v, o);
}

}  // namespace tenzro::model
