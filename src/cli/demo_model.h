// tenzro cli: a random-weight MoE checkpoint at a real model's shape, for
// `tenzro demo --shape ID` (realistic timings without a 100 GB download).
//
// WriteRandomMoeCheckpoint writes a llama.cpp-style GGUF (architecture of
// the built-in shape, its tensor names and metadata keys) holding the first
// `layers` MoE layers of `shape` with `experts` routed experts each, stored
// as Q4_K_M stores them: gate/up Q4_K, down Q6_K or Q4_K by llama.cpp's
// use_more_bits rule over `layers`, router and shared-expert gate F32, the
// shared expert like the routed ones. Quantized blocks are random but valid
// (finite f16 scales of weight-like magnitude), so every kernel path runs on
// them exactly as on a real release. Deterministic in `seed`; written
// atomically. Errors: kInvalidArgument (shape not a MoE shape, widths not
// multiples of 256, layers/experts out of range), I/O errors.
#pragma once

#include <cstdint>
#include <string>

#include "catalog/model_shape.h"
#include "core/result.h"

namespace tenzro::cli {

struct RandomCheckpointInfo {
  uint64_t file_bytes = 0;
  uint64_t expert_bytes = 0;  // one routed expert's gate + up + down
};

Result<RandomCheckpointInfo> WriteRandomMoeCheckpoint(const catalog::ModelShape& shape, int layers, int experts,
                                                      const std::string& path, uint64_t seed = 1);

}  // namespace tenzro::cli
