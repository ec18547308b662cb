// tenzro model: whole models with random weights at a real model's shape.
//
// For tests and benchmarks that need a model no one can download here: a
// llama.cpp-style GGUF (the architecture's tensor names and metadata keys,
// as arch_*.cc reads them) holding `layers` layers of the named shape with
// random weights of weight-like magnitude (uniform, scaled by 1/sqrt(fan
// in); norms 1; delta-net decay constants in llama.cpp's ranges), dense
// matrices in `dense_type`, routed and shared experts in `expert_type`.
// The vocabulary may be cut (`n_vocab`) since it only sizes the embedding
// and the output head. Deterministic in `seed`; written atomically.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "quant/types.h"

namespace tenzro::model {

struct SyntheticShape {
  std::string id;    // "qwen3.5-122b-a10b", ...
  std::string arch;  // "qwen35moe" | "qwen3moe"
  int n_layer = 0;
  int64_t n_embd = 0;
  int n_vocab = 0;
  int n_head = 0, n_head_kv = 0, head_dim = 0, n_rot = 0;
  double rope_base = 1e7;
  int n_expert = 0, n_expert_used = 0;
  int64_t n_ff_exp = 0, n_ff_shexp = 0;  // n_ff_shexp 0: no shared expert
  int ssm_conv_kernel = 0, ssm_d_state = 0, ssm_n_k_heads = 0, ssm_n_v_heads = 0;
  int64_t ssm_d_inner = 0;
  int full_attention_interval = 0;
};

// Built-in shapes: "qwen3.5-122b-a10b", "qwen3.5-35b-a3b", "qwen3-30b-a3b",
// "tiny-qwen3moe" (a qwen3moe as small as the tiny fixture). kNotFound with
// the list otherwise.
Result<SyntheticShape> FindSyntheticShape(std::string_view id);
std::vector<std::string_view> SyntheticShapeIds();

struct SyntheticOptions {
  int layers = 0;        // <= 0: the shape's n_layer
  int n_vocab = 0;       // <= 0: the shape's
  int experts = 0;       // <= 0: the shape's (fewer keep files small; top-k is clamped)
  quant::GgmlType dense_type = quant::GgmlType::Q4_K;
  quant::GgmlType expert_type = quant::GgmlType::Q4_K;
  uint64_t seed = 1;
  // Also write a placeholder byte-level BPE tokenizer ("gpt2", pre "qwen2",
  // no merges): the 256 byte tokens, then "t256", "t257", ... up to n_vocab,
  // so that the model
  // can be served (serve/ loads the checkpoint's tokenizer); prompts are
  // then given as token ids.
  bool tokenizer = false;
};

// Writes the GGUF; returns its size in bytes. kInvalidArgument for options
// the shape cannot take (widths not a multiple of the type's block size).
Result<uint64_t> WriteSyntheticModel(const SyntheticShape& shape, const SyntheticOptions& options,
                                     const std::string& path);

}  // namespace tenzro::model
