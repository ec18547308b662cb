// tenzro runtime: y = W · X for a ggml-typed weight matrix and f32 tokens.
//
// W is rows x row_len (weight_matrix.h). X holds n_tok tokens of row_len
// floats, token-major (token t at x + t*row_len); Y receives n_tok rows of
// W.rows floats (token t at y + t*W.rows). Quantized W (Q8_0/Q4_K/Q5_K/Q6_K)
// is multiplied against X quantized to 8 bits in blocks of 32 (act_quant.h)
// with integer dot products; F32/F16/BF16 W with f32 FMA against X as is.
// Kernels are chosen at run time from the CPU (x86-64: AVX-512 VNNI for the
// quantized types (same bits as AVX2), AVX2; aarch64: NEON, dotprod, i8mm;
// scalar fallback).
//
// Rows are split over the pool's threads; results are bit-identical for any
// pool size (kernels.h determinism contract). Thread-safety: MatMul may run
// concurrently from several threads on the same W.
#pragma once

#include <span>

#include "core/result.h"
#include "core/thread_pool.h"
#include "runtime/act_quant.h"
#include "runtime/kernels.h"
#include "runtime/weight_matrix.h"

namespace tenzro::runtime {

// The fastest ISA this CPU supports (TENZRO_RUNTIME_ISA in the environment
// lowers it, for debugging: scalar, or a lower ISA of the same family, e.g.
// avx2 on an AVX-512 CPU, neon or dotprod on an i8mm one; anything else is
// ignored).
KernelIsa BestKernelIsa();
bool KernelIsaSupported(KernelIsa isa);
// The SIMD ISAs of this build's family, lowest first: x86-64 {avx2,
// avx512}, aarch64 {neon, dotprod, i8mm}; {scalar} on other targets. Only
// these are compiled in; the tests run each the CPU supports.
std::span<const KernelIsa> KernelIsaFamily();
const char* KernelIsaName(KernelIsa isa);

// y = W · x. REQUIRES: x has n_tok*W.row_len floats, y room for n_tok*W.rows.
// kInvalidArgument when W fails Validate() or n_tok < 0; kUnsupported for a
// type without kernel. pool may be null (single-threaded).
Result<void> MatMul(const WeightMatrix& w, const float* x, int n_tok, float* y, ThreadPool* pool = nullptr);
// As MatMul, with a chosen ISA (tests compare ISAs); kInvalidArgument when
// the CPU lacks it.
Result<void> MatMulIsa(KernelIsa isa, const WeightMatrix& w, const float* x, int n_tok, float* y,
                       ThreadPool* pool = nullptr);

// The pieces of MatMul, for callers that multiply several matrices by the
// same activations (gate and up): quantize once, run many. `q` must come
// from QuantizeActs over the same x with n == W.row_len. Any of x / q may be
// null when W's type does not use it (UsesQuantizedActs). No validation:
// REQUIRES W.Validate() succeeded.
struct MatMulJob {
  const WeightMatrix* w;
  const float* x;
  const QuantizedActs* q;
  float* y;
};
void RunMatMuls(KernelIsa isa, const MatMulJob* jobs, int n_jobs, int n_tok, ThreadPool* pool);

}  // namespace tenzro::runtime
