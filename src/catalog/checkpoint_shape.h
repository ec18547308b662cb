// tenzro catalog: reading a ModelShape out of a checkpoint.
//
// The shape comes from the checkpoint's own metadata and tensors, never from
// the built-in table: GGUF keys <arch>.block_count, .embedding_length,
// .expert_count, .expert_used_count, .expert_shared_count,
// .expert_shared_feed_forward_length, .full_attention_interval,
// .leading_dense_block_count, .expert_gating_func, .expert_weights_norm,
// .expert_weights_scale, .expert_group_count, .expert_group_used_count;
// Hugging Face config.json keys num_hidden_layers, hidden_size,
// num_experts_per_tok, n_shared_experts, first_k_dense_replace, layer_types,
// full_attention_interval, scoring_func, norm_topk_prob, n_group,
// topk_group, routed_scaling_factor. Which layers are MoE, the widths
// (n_embd, n_ff_exp, n_ff_shexp), the stored projection types and every byte
// count come from the tensors actually present (format::Checkpoint's MoE
// view); metadata fills only what tensors cannot tell (top-k, routing,
// attention layout), with tensor names (ssm_* / linear_attn vs attn_q /
// self_attn) as the attention fallback.
#pragma once

#include <string>
#include <string_view>

#include "catalog/model_shape.h"
#include "core/result.h"
#include "format/checkpoint.h"

namespace tenzro::catalog {

struct CheckpointInspection {
  // false: no routed-expert tensors ("dense model"); then only id,
  // architecture, n_layer, n_embd (if known) and checkpoint are set in
  // `shape`, and the shape does not Validate().
  bool moe = false;
  ModelShape shape;
};

// Derives the shape of `ckpt`, naming it `id`; `path` is recorded (made
// absolute) in shape.checkpoint. kCorruption naming the tensor or key when
// the checkpoint contradicts itself (e.g. top-k missing or > n_expert).
Result<CheckpointInspection> InspectCheckpoint(const format::Checkpoint& ckpt, std::string_view id,
                                               const std::string& path);

// Opens `path` with format::Checkpoint::Open and inspects it.
Result<CheckpointInspection> InspectCheckpointFile(const std::string& path, std::string_view id);

// As InspectCheckpointFile, but a dense model is kInvalidArgument
// "<path>: dense model: no expert tensors".
Result<ModelShape> ShapeFromCheckpointFile(const std::string& path, std::string_view id);

}  // namespace tenzro::catalog
