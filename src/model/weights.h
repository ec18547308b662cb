// tenzro model: the dense ("spine") weights of a model, as views into its
// checkpoint.
//
// Matrices are runtime::WeightMatrix views borrowed from the mmap'ed
// checkpoint (any compute type: F32/F16/BF16/Q8_0/Q4_K/Q5_K/Q6_K), so the
// spine costs no copy; the Checkpoint must outlive the weights. Small vectors
// (norm weights, conv kernels, decay constants) are decoded once to f32.
// The routed experts are not here: the MoE block is behind moe_executor.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "format/checkpoint.h"
#include "model/hparams.h"
#include "runtime/weight_matrix.h"

namespace tenzro::model {

// Softmax attention (kAttention, kGatedAttention).
struct AttentionWeights {
  runtime::WeightMatrix q;  // n_head * head_dim rows (x2 with the output gate: per head [query | gate])
  runtime::WeightMatrix k;  // n_head_kv * head_dim rows
  runtime::WeightMatrix v;  // n_head_kv * head_dim rows
  runtime::WeightMatrix o;  // n_embd rows of n_head * head_dim
  std::vector<float> q_norm, k_norm;  // head_dim each (per-head RMSNorm)
};

// Gated delta net (kDeltaNet).
struct DeltaNetWeights {
  runtime::WeightMatrix qkv;    // conv channels rows: q | k | v before the conv
  runtime::WeightMatrix gate;   // d_inner rows: z, the output gate
  runtime::WeightMatrix alpha;  // n_v_heads rows: decay input
  runtime::WeightMatrix beta;   // n_v_heads rows: write strength
  runtime::WeightMatrix out;    // n_embd rows of d_inner
  std::vector<float> conv;      // channels x conv_kernel (kernel fastest)
  std::vector<float> dt_bias;   // n_v_heads
  std::vector<float> a;         // n_v_heads, negative (-exp(A_log))
  std::vector<float> norm;      // d_v (shared by the heads)
};

struct LayerWeights {
  LayerKind kind = LayerKind::kAttention;
  std::vector<float> attn_norm;  // n_embd
  std::vector<float> ffn_norm;   // n_embd (post_attention_norm / ffn_norm)
  AttentionWeights attn;         // kAttention, kGatedAttention
  DeltaNetWeights ssm;           // kDeltaNet
};

struct ModelWeights {
  runtime::WeightMatrix tok_embd;  // n_vocab rows of n_embd
  runtime::WeightMatrix output;    // n_vocab rows of n_embd (tok_embd when tied)
  std::vector<float> output_norm;  // n_embd
  std::vector<LayerWeights> layers;
  // Bytes of dense matrices read per decoded token (every layer's matrices
  // and the output head; the embedding row is negligible).
  uint64_t bytes_per_token() const;
};

// Loading helpers for architecture files. Each names the tensor in errors:
// kNotFound when absent, kInvalidArgument when its shape is not [row_len,
// rows] (ggml order) or its type cannot be computed.
Result<runtime::WeightMatrix> LoadMatrix(const format::Checkpoint& c, const std::string& name, int64_t row_len,
                                         int64_t rows);
// A tensor of exactly `n` values (any shape with that many), decoded to f32.
Result<std::vector<float>> LoadVector(const format::Checkpoint& c, const std::string& name, int64_t n);
// "blk.<layer>.<suffix>"
std::string BlockTensor(int layer, std::string_view suffix);

}  // namespace tenzro::model
