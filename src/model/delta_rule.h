// tenzro model: the recurrent gated delta-rule step of one value head, per
// ISA (scalar reference, AVX2), chosen at run time like the runtime kernels
// (runtime::BestKernelIsa, TENZRO_RUNTIME_ISA lowers it).
//
//   S (d_k x d_v, row i contiguous) *= decay
//   m = S^T k ;  delta = beta (v - m) ;  S += k delta^T ;  o = S^T q
//
// Both variants perform the same operations in the same order per element
// except that AVX2 fuses multiply-adds, so their results may differ in the
// last bits; one process always uses one variant, so a prompt step and a
// one-token step agree bit for bit. REQUIRES: d_v <= 1024.
#pragma once

#include "runtime/kernels.h"

namespace tenzro::model {

inline constexpr int kMaxDeltaDv = 1024;

void DeltaRuleStepScalar(float* S, const float* q, const float* k, const float* v, float decay, float beta, int d_k,
                         int d_v, float* o);
// REQUIRES: d_v % 32 == 0 and the CPU has AVX2 + FMA.
void DeltaRuleStepAvx2(float* S, const float* q, const float* k, const float* v, float decay, float beta, int d_k,
                       int d_v, float* o);

// The variant DeltaRuleStep uses for a head width (AVX2 when the CPU and
// TENZRO_RUNTIME_ISA allow and d_v % 32 == 0).
runtime::KernelIsa DeltaRuleIsa(int d_v);

}  // namespace tenzro::model
