// tenzro catalog: the shape of a Mixture-of-Experts model.
//
// A ModelShape says everything the rest of tenzro needs to know about a model
// before touching its weights: how many layers, which of them are MoE, which
// attention each uses, how many experts each MoE layer has and how many fire
// per token, how the router picks them (RoutingKind + group fields), and the
// widths that fix an expert's byte size in every block format. The runtime's
// gate and the preparation jobs read these fields; they never guess from the
// architecture string. Shapes come from a checkpoint (checkpoint_shape.h), a
// catalog entry (catalog.h) or the built-in table (builtin_shapes.h).
// JSON encoding: shape_json.h, spec in docs/formats/catalog.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "quant/types.h"

namespace tenzro::catalog {

enum class AttentionKind : uint8_t { kUnknown = 0, kFull, kLinear, kSliding };
// "unknown", "full", "linear", "sliding".
std::string_view AttentionKindName(AttentionKind k);
std::optional<AttentionKind> ParseAttentionKind(std::string_view name);

// How the router turns logits into the top-k experts and their weights.
enum class RoutingKind : uint8_t {
  // softmax over all experts, top-k, weights renormalised to sum 1
  // (Qwen3-MoE, Qwen3-Next, Qwen3.5: norm_topk_prob = true).
  kSoftmaxTopkRenorm = 0,
  // softmax over all experts, top-k, weights used as they are (Qwen2-MoE).
  kSoftmaxTopk,
  // top-k on the raw logits, softmax over the k chosen (Mixtral, gpt-oss).
  // Mathematically equal to kSoftmaxTopkRenorm; kept apart because the
  // reference implementations compute it this way.
  kTopkSoftmax,
  // DeepSeek-V3: s = sigmoid(logits); choose with s + selection bias
  // (e_score_correction_bias), restricted to the topk_group best of n_group
  // expert groups (a group scores the sum of its best two); weights are the
  // unbiased s of the chosen, renormalised if norm_topk_prob, times
  // routed_scaling_factor.
  kSigmoidGroupTopk,
};
// "softmax-topk-renorm", "softmax-topk", "topk-softmax", "sigmoid-group-topk".
std::string_view RoutingKindName(RoutingKind k);
std::optional<RoutingKind> ParseRoutingKind(std::string_view name);

struct Routing {
  RoutingKind kind = RoutingKind::kSoftmaxTopkRenorm;
  int n_group = 1;                   // expert groups (group-limited top-k); 1 = none
  int topk_group = 1;                // groups the top-k may draw from
  bool norm_topk_prob = true;        // renormalise the chosen weights
  bool selection_bias = false;       // a per-expert bias added for selection only
  double routed_scaling_factor = 1.0;
};

struct LayerShape {
  bool moe = false;                    // has routed experts
  AttentionKind attention = AttentionKind::kUnknown;
  int n_expert = 0;                    // routed experts (0 on dense layers)
  // Down-projection type of this layer under llama.cpp's Q4_K_M rule
  // (Q6_K where UseMoreBits(i, n_layer), else Q4_K). Gate/up are Q4_K.
  quant::GgmlType q4_k_m_down_type = quant::GgmlType::Q4_K;
  // Only for shapes read from a checkpoint: the stored types of the routed
  // expert projections, and the bytes of one expert (gate + up + down) there.
  std::optional<quant::GgmlType> gate_type, up_type, down_type;
  uint64_t stored_expert_bytes = 0;
};

// Facts only a checkpoint can give (absent for built-in shapes).
struct CheckpointFacts {
  std::string path;              // absolute
  std::string format;            // "gguf" | "safetensors"
  uint64_t total_tensor_bytes = 0;   // all tensors
  uint64_t expert_tensor_bytes = 0;  // routed-expert tensors only
};

struct ModelShape {
  std::string id;                // lower-case model id ("qwen3.5-122b-a10b")
  std::string architecture;      // llama.cpp / GGUF arch name ("qwen35moe", "deepseek2", ...)
  int n_layer = 0;
  int64_t n_embd = 0;            // hidden size: row length of gate/up, rows of down
  int n_expert = 0;              // routed experts per MoE layer (the largest, if they differ)
  int n_expert_used = 0;         // top-k
  int64_t n_ff_exp = 0;          // one routed expert's FFN width
  int n_shared_expert = 0;       // shared experts per MoE layer
  int64_t n_ff_shexp = 0;        // width of the shared FFN (all shared experts together)
  bool shared_expert_gated = false;  // sigmoid gate on the shared expert output (Qwen)
  int64_t n_ff_dense = 0;        // FFN width of dense layers (0: none or unknown)
  int full_attention_interval = 0;   // layer i is full when (i+1) % interval == 0; 0: n/a
  Routing routing;
  std::vector<LayerShape> layers;    // n_layer entries
  // Nominal total parameter count from the model card (built-ins only; 0 =
  // unknown). Used only to *estimate* the experts' share of the model.
  uint64_t nominal_params = 0;
  std::optional<CheckpointFacts> checkpoint;

  int n_moe_layers() const;
  // Routed experts in the whole model (sum of layers[i].n_expert).
  uint64_t total_experts() const;
  // Checks the invariants (sizes positive, layers.size() == n_layer,
  // n_expert_used <= n_expert, ...). kInvalidArgument naming the field.
  Result<void> Validate() const;
};

// llama.cpp's use_more_bits(i, n): i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2
// (integer division).
bool UseMoreBits(int i, int n);
// Q6_K if UseMoreBits(layer, n_layer) else Q4_K.
quant::GgmlType Q4KMDownType(int layer, int n_layer);

// One line summarising the layer layout, e.g.
// "60 layers: 45 x linear-attention MoE, 15 x full-attention MoE (pattern 3 linear + 1 full)".
std::string DescribeLayout(const ModelShape& s);

}  // namespace tenzro::catalog
