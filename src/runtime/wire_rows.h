// tenzro runtime: the formats activation rows travel in between a forward and
// an expert holder (the exec frame's dtype, docs/formats/exec-frame.md "Row
// types"), and the one rounding both the wire and the all-local path apply.
//
//   f32   4 bytes a value, exact
//   bf16  2 bytes, quant/fp16.h Fp32ToBf16 (ggml's round to nearest even)
//   f16   2 bytes, quant/fp16.h Fp32ToFp16 (overflow to Inf)
//   q8_0  34 bytes per 32 values: ggml's block_q8_0 (quant/blocks.h), fp16
//         scale d = amax / 127 and 32 int8, encoded by quant's Q8_0 codec
//         (bit-exact with ggml's quantize_row_q8_0_ref)
//
// Rows are row-major; a q8_0 block never crosses a row because q8_0 needs the
// row length (n_embd) to be a multiple of 32 (CheckWireRow), so a flat run of
// whole rows is also a flat run of whole blocks: Encode / Decode / Round take
// `n` values, REQUIRES n % 32 == 0 for q8_0.
//
// RoundWireRows(t, x, n) is exactly DecodeWireRows(EncodeWireRows(x)): the
// local MoE path (runtime::LocalExperts with a wire dtype set) rounds each
// routed expert's input and output rows through it, so local generation is
// bit for bit what a distributed forward computes with the same dtype.
// Pure functions; thread-safe. Little-endian hosts (as every frame field).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/result.h"

namespace tenzro::runtime {

enum class WireDtype : uint8_t { kF32 = 0, kBf16 = 1, kF16 = 2, kQ8_0 = 3 };

// The default of distributed forwards, generation and serving.
inline constexpr WireDtype kDefaultWireDtype = WireDtype::kBf16;
inline constexpr int64_t kWireQ8Block = 32;  // values per q8_0 block
inline constexpr int64_t kWireQ8BlockBytes = 34;

std::string_view WireDtypeName(WireDtype t);  // "f32" | "bf16" | "f16" | "q8_0"
// kInvalidArgument naming the choices for anything else.
Result<WireDtype> ParseWireDtype(std::string_view name);

// kInvalidArgument when rows of `n_embd` values cannot travel as `t`
// (q8_0: n_embd not a multiple of 32). There is no fallback to another dtype.
Result<void> CheckWireRow(WireDtype t, int64_t n_embd);

// Bytes of `n` values as `t`. REQUIRES: q8_0 -> n % 32 == 0.
uint64_t WireBytes(WireDtype t, uint64_t n);

// Writes WireBytes(t, n) bytes to `out`. Non-finite values are encoded as
// they come (a q8_0 block holding one gets a non-finite scale, which
// DecodeWireRows refuses).
void EncodeWireRows(WireDtype t, const float* x, size_t n, uint8_t* out);

// Reads WireBytes(t, n) bytes from `src` (any alignment) into `out`.
// kCorruption naming the block when a q8_0 scale is NaN or Inf; the float
// dtypes decode every bit pattern (the caller checks finiteness).
Result<void> DecodeWireRows(WireDtype t, const uint8_t* src, size_t n, float* out);

// x[i] := Decode(Encode(x))[i] in place (f32: unchanged).
void RoundWireRows(WireDtype t, float* x, size_t n);

}  // namespace tenzro::runtime
