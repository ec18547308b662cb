// tenzro runtime (internal): the per-ISA matrix kernels behind MatMul.
//
// A kernel computes y[t*ldy + r] = sum_k W[r][k] * x[t][k] for the rows
// [r0, r1) of W and every token t < n_tok. Float weights (F32/F16/BF16) read
// the f32 activations `x`; quantized weights read `q` (act_quant.h).
//
// Determinism contract (all ISAs): each output element is produced by one
// fixed sequence of operations that depends only on the weights, the
// activations and the ISA, never on r0/r1, the token count or the tiling, so
// any split of rows over threads gives bit-identical results.
//
// Cross-ISA contract: avx512:: (x86-64) and neon::, dotprod:: and i8mm::
// (aarch64) give output bit-identical to avx2:: for every type and batch:
// the same exact integer sums and the same f32 operations per output element
// (the comment blocks of kernels_avx2.cc and kquant_avx2.cc; kquant_avx512.cc
// and kernels_arm.h for the others), so a holder's answer does not depend on
// its CPU (tests/runtime/matmul_isa_test.cc compares avx512 with avx2 by
// memcmp; tests/runtime/matmul_golden_test.cc checks every ISA against
// recorded AVX2 bits).
//
// scalar:: is the reference (double accumulation); the SIMD ISAs agree with
// it to float rounding. Most callers want matmul.h instead.
#pragma once

#include <cstdint>

#include "quant/types.h"
#include "runtime/act_quant.h"
#include "runtime/weight_matrix.h"

namespace tenzro::runtime {

// Two families above scalar: x86-64 (kAvx2 < kAvx512) and aarch64 (kNeon <
// kDotprod < kI8mm); each ISA falls back to the next lower one of its family
// for a type it has no kernel of its own for (matmul.cc KernelFor).
enum class KernelIsa : uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kNeon = 3, kDotprod = 4, kI8mm = 5 };

struct KernelArgs {
  const WeightMatrix* w = nullptr;
  const float* x = nullptr;            // n_tok x w->row_len (float weight types)
  const QuantizedActs* q = nullptr;    // quantized weight types
  int n_tok = 0;
  uint64_t row_bytes = 0;              // w->row_bytes(), computed once
  float* y = nullptr;                  // n_tok x ldy
  int64_t ldy = 0;
};

using RowsKernel = void (*)(const KernelArgs& a, int64_t r0, int64_t r1);

// True when `type` multiplies against QuantizedActs (else against f32).
bool UsesQuantizedActs(quant::GgmlType type);
// True when `type`'s batch kernels read QuantizedActs' token tiles (the
// k-quants; Q8_0 reads the token-major layout only).
bool UsesTokenTiles(quant::GgmlType type);

namespace scalar { RowsKernel GetKernel(quant::GgmlType type); }
namespace avx2 {
RowsKernel GetKernel(quant::GgmlType type);
RowsKernel GetKQuantKernel(quant::GgmlType type);  // kquant_avx2.cc; GetKernel defers to it
}  // namespace avx2
namespace avx512 {
// nullptr for the types it does not cover (float weights): MatMul then uses avx2::.
RowsKernel GetKernel(quant::GgmlType type);
RowsKernel GetKQuantKernel(quant::GgmlType type);  // kquant_avx512.cc; GetKernel defers to it
}  // namespace avx512
// aarch64 only (REQUIRES the matching CpuFeatures set). Null: no kernel of
// that ISA's own (the caller falls back).
namespace neon { RowsKernel GetKernel(quant::GgmlType type); }     // kernels_neon.cc
namespace dotprod { RowsKernel GetKernel(quant::GgmlType type); }  // kernels_dotprod.cc
namespace i8mm { RowsKernel GetKernel(quant::GgmlType type); }     // kernels_i8mm.cc

}  // namespace tenzro::runtime
