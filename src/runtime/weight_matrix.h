// tenzro runtime: weight matrices and expert weights as the compute kernels
// see them.
//
// A WeightMatrix is `rows` rows of `row_len` values stored back to back in a
// ggml type (quant/types.h, layouts in quant/blocks.h): exactly what a GGUF
// tensor slab, a prepared mini-GGUF expert blob or format::ExpertSlab holds.
// The bytes are either borrowed (a span into an mmap'ed file the caller keeps
// alive) or owned (the matrix keeps a shared buffer alive). Matrices are
// immutable once built, so one may be used by any number of threads at once.
//
// Supported compute types (kernels.h): F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/bytes.h"
#include "core/result.h"
#include "quant/types.h"

namespace tenzro::runtime {

struct WeightMatrix {
  quant::GgmlType type = quant::GgmlType::F32;
  int64_t row_len = 0;  // values per row (ggml ne[0])
  int64_t rows = 0;     // number of rows (ggml ne[1])
  ByteSpan data;        // rows * RowBytes(type, row_len) bytes
  // Keeps `data` alive when the matrix owns its bytes; null when borrowed.
  std::shared_ptr<const void> owner;

  // Borrows `data` (the caller keeps it alive for the matrix's lifetime).
  // Errors: see Validate().
  static Result<WeightMatrix> Borrow(quant::GgmlType type, int64_t row_len, int64_t rows, ByteSpan data);
  // Takes ownership of `data`.
  static Result<WeightMatrix> Own(quant::GgmlType type, int64_t row_len, int64_t rows, Bytes data);

  // Bytes per row. REQUIRES: Validate() succeeded.
  uint64_t row_bytes() const;
  const uint8_t* row(int64_t r) const { return data.data() + r * row_bytes(); }

  // kUnsupported when `type` has no compute kernel; kInvalidArgument when
  // row_len/rows are not positive, row_len is not a multiple of the type's
  // block size, or data.size() != rows * row_bytes. `what` names the matrix
  // in messages ("gate", "blk.3.ffn_up_exps[7]", ...).
  Result<void> Validate(std::string_view what = "weight") const;
};

// True for the types the runtime kernels can multiply.
bool IsComputeType(quant::GgmlType type);

// One expert FFN: y = down · (silu(gate · x) ⊙ (up · x)).
//   gate, up: n_ff rows of n_embd values;  down: n_embd rows of n_ff values.
struct ExpertWeights {
  WeightMatrix gate;
  WeightMatrix up;
  WeightMatrix down;

  int64_t n_embd() const { return gate.row_len; }
  int64_t n_ff() const { return gate.rows; }
  // Bytes of weights streamed per call (all three projections).
  uint64_t bytes() const { return gate.data.size() + up.data.size() + down.data.size(); }

  // Validates each projection and that the shapes fit together; messages
  // name the projection and the mismatched dimension.
  Result<void> Validate() const;
};

}  // namespace tenzro::runtime
