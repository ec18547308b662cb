// tenzro quant: the ggml type-traits table.
//
// Every consumer (GGUF reader, slicer, catalog, runtime) looks a tensor type
// up here instead of switching on it: ggml type id, name, block elements,
// block bytes, and the scalar-reference-exact codecs. Ids and sizes are
// ggml's (ggml.h enum ggml_type, ggml.c type_traits); types ggml has but
// tenzro cannot decode still have an entry (sizes only, null kernels) so a
// GGUF file containing them is read correctly.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/result.h"

namespace tenzro::quant {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

// Converts `n` values (a multiple of block_elems) of one row.
using ToFloatFn = void (*)(const void* src, float* dst, int64_t n);
using FromFloatFn = void (*)(const float* src, void* dst, int64_t n);

struct TypeTraits {
  GgmlType type;
  const char* name;      // ggml's spelling: "f32", "q4_K", "mxfp4", ...
  uint32_t block_elems;  // values per block (1 for plain floats)
  uint32_t block_bytes;  // bytes per block
  bool quantized;
  ToFloatFn to_float;      // null: tenzro cannot decode this type
  FromFloatFn from_float;  // null: tenzro cannot encode this type (byte-exact with ggml's *_ref)
};

// Entry for `type`, or nullptr when the id is not a ggml type.
const TypeTraits* FindTraits(GgmlType type);
const TypeTraits* FindTraits(uint32_t ggml_id);
// Case-insensitive lookup by ggml name ("q4_k" finds Q4_K); nullptr if unknown.
const TypeTraits* FindTraitsByName(std::string_view name);
// ggml name of a type ("?" for unknown ids).
std::string_view TypeName(GgmlType type);

// Bytes of one row of `n_per_row` values: kInvalidArgument when the block
// size does not divide n_per_row (message names the type and length) or the
// type is unknown; kInvalidArgument on overflow.
Result<uint64_t> RowBytes(GgmlType type, int64_t n_per_row);

// Quantizes / dequantizes `n_rows` rows of `n_per_row` values with the
// table's kernels (run-time-chosen SIMD variant; byte-identical to ggml's
// reference). Rows are contiguous: row r of dst starts at r * RowBytes(type,
// n_per_row). kInvalidArgument (naming type and length) when the block size
// does not divide n_per_row; kUnsupported when the type has no kernel in that
// direction. REQUIRES: src/dst hold n_rows whole rows. Thread-safe.
Result<void> QuantizeRows(GgmlType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row);
Result<void> DequantizeRows(GgmlType type, const void* src, float* dst, int64_t n_rows, int64_t n_per_row);

// The same, rows split into contiguous chunks over up to `n_threads`
// std::threads (<= 0: core/cpu.h HardwareThreads()); small inputs use fewer
// threads. Output is identical to the single-threaded call. Blocks until done.
Result<void> QuantizeRowsParallel(GgmlType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                                  int n_threads = 0);
Result<void> DequantizeRowsParallel(GgmlType type, const void* src, float* dst, int64_t n_rows, int64_t n_per_row,
                                    int n_threads = 0);

}  // namespace tenzro::quant
