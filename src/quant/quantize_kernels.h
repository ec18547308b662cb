// tenzro quant: the per-ISA codec kernels behind the traits table.
//
// Each kernel converts one row of `n` values (REQUIRES: n a multiple of the
// type's block_elems; src/dst hold a whole row) with the signatures of
// types.h ToFloatFn / FromFloatFn. ref:: is the scalar reference, a line-by-
// line transcription of ggml's quantize_row_*_ref / dequantize_row_*
// (ggml-quants.c, ggml.c); avx2:: and avx512:: compute the same bytes with
// SIMD (each lane performs the reference's float operations in the
// reference's order, so results are bit-identical, never "close").
// Most callers want types.h QuantizeRows / DequantizeRows instead, which pick
// the best ISA this CPU supports; tests use GetCodec to run every ISA.
#pragma once

#include <cstdint>

#include "core/result.h"
#include "quant/types.h"

namespace tenzro::quant {

enum class Isa : uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// "scalar", "avx2", "avx512".
const char* IsaName(Isa isa);
// True when this CPU can execute kernels compiled for `isa`.
bool IsaSupported(Isa isa);
// The fastest ISA this CPU supports (TENZRO_QUANT_ISA=scalar|avx2|avx512 in
// the environment lowers it, for debugging; it never raises it).
Isa BestIsa();

struct Codec {
  ToFloatFn to_float = nullptr;      // null: cannot decode
  FromFloatFn from_float = nullptr;  // null: cannot encode
};

// The kernels for `type` compiled for `isa`, falling back to the next lower
// ISA where `isa` has no variant of its own. REQUIRES: IsaSupported(isa)
// before calling what it returns.
Codec GetCodec(GgmlType type, Isa isa);

// QuantizeRows / DequantizeRows (types.h) with an explicit ISA.
// kInvalidArgument when the ISA is not supported here or n_per_row does not
// fit the block size; kUnsupported when the type has no kernel.
Result<void> QuantizeRowsIsa(Isa isa, GgmlType type, const float* src, void* dst, int64_t n_rows,
                             int64_t n_per_row);
Result<void> DequantizeRowsIsa(Isa isa, GgmlType type, const void* src, float* dst, int64_t n_rows,
                               int64_t n_per_row);

namespace ref {
void QuantizeRowF32(const float* x, void* y, int64_t n);
void DequantizeRowF32(const void* x, float* y, int64_t n);
void QuantizeRowF16(const float* x, void* y, int64_t n);
void DequantizeRowF16(const void* x, float* y, int64_t n);
void QuantizeRowBf16(const float* x, void* y, int64_t n);
void DequantizeRowBf16(const void* x, float* y, int64_t n);
void QuantizeRowQ8_0(const float* x, void* y, int64_t n);
void DequantizeRowQ8_0(const void* x, float* y, int64_t n);
void DequantizeRowQ4_0(const void* x, float* y, int64_t n);
void DequantizeRowMxfp4(const void* x, float* y, int64_t n);
void QuantizeRowQ4_K(const float* x, void* y, int64_t n);
void DequantizeRowQ4_K(const void* x, float* y, int64_t n);
void QuantizeRowQ5_K(const float* x, void* y, int64_t n);
void DequantizeRowQ5_K(const void* x, float* y, int64_t n);
void QuantizeRowQ6_K(const float* x, void* y, int64_t n);
void DequantizeRowQ6_K(const void* x, float* y, int64_t n);
}  // namespace ref

// Compiled with AVX2+FMA+F16C (call only when IsaSupported(Isa::kAvx2)).
namespace avx2 {
void QuantizeRowF16(const float* x, void* y, int64_t n);
void DequantizeRowF16(const void* x, float* y, int64_t n);
void QuantizeRowBf16(const float* x, void* y, int64_t n);
void DequantizeRowBf16(const void* x, float* y, int64_t n);
void QuantizeRowQ8_0(const float* x, void* y, int64_t n);
void DequantizeRowQ8_0(const void* x, float* y, int64_t n);
void DequantizeRowQ4_0(const void* x, float* y, int64_t n);
void DequantizeRowMxfp4(const void* x, float* y, int64_t n);
void QuantizeRowQ4_K(const float* x, void* y, int64_t n);
void DequantizeRowQ4_K(const void* x, float* y, int64_t n);
void QuantizeRowQ5_K(const float* x, void* y, int64_t n);
void DequantizeRowQ5_K(const void* x, float* y, int64_t n);
void QuantizeRowQ6_K(const float* x, void* y, int64_t n);
void DequantizeRowQ6_K(const void* x, float* y, int64_t n);
}  // namespace avx2

// Compiled with AVX-512 F/BW/VL/DQ/VNNI (call only when IsaSupported(Isa::kAvx512)).
namespace avx512 {
void DequantizeRowF16(const void* x, float* y, int64_t n);
void DequantizeRowBf16(const void* x, float* y, int64_t n);
void DequantizeRowQ8_0(const void* x, float* y, int64_t n);
void DequantizeRowQ4_K(const void* x, float* y, int64_t n);
}  // namespace avx512

}  // namespace tenzro::quant
