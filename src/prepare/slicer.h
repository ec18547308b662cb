// tenzro prepare: cutting one expert projection out of a checkpoint.
//
// An expert projection is one contiguous slab of its tensor (expert index is
// ggml ne[2]). When the slab's type already equals the target, the result is
// a byte-range view of the checkpoint (no copy, bit-faithful); otherwise the
// slab is dequantized with ggml-exact codecs and requantized to the target.
#pragma once

#include <string>

#include "core/bytes.h"
#include "core/result.h"
#include "format/checkpoint.h"
#include "format/expert_gguf.h"
#include "quant/types.h"

namespace tenzro::prepare {

struct SliceSource {
  std::string file;
  std::string tensor;
  uint64_t offset = 0;  // absolute byte offset in `file`
  uint64_t bytes = 0;
  quant::GgmlType type = quant::GgmlType::F32;
  bool copied = false;  // true: byte-range copy; false: requantized
};

struct SlicedMatrix {
  format::Matrix matrix;   // the result; bytes view into `owned` or the checkpoint
  Bytes owned;     // empty for a byte-range copy
  SliceSource source;
};

// Converts `slab` to `target` using up to `threads` threads.
// kInvalidArgument naming `what` when the target's block does not divide the
// row length; kUnsupported when the source type cannot be decoded.
// The result may borrow the checkpoint's memory (copy case).
Result<SlicedMatrix> ConvertSlab(const format::ExpertSlab& slab, quant::GgmlType target, int threads,
                                 std::string_view what);

// The model's layer count: <arch>.block_count / num_hidden_layers metadata,
// else the checkpoint's n_layers().
int ModelLayerCount(const format::Checkpoint& ckpt);

}  // namespace tenzro::prepare
