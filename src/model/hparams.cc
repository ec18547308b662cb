#include "model/hparams.h"

#include <cmath>

#include <fmt/format.h>

namespace tenzro::model {

const char* LayerKindName(LayerKind k) {
  switch (k) {
    case LayerKind::kAttention: return "attention";
    case LayerKind::kGatedAttention: return "gated-attention";
    case LayerKind::kDeltaNet: return "delta-net";
  }
  return "?";
}

bool HParams::has_kind(LayerKind k) const {
  for (LayerKind l : layers)
    if (l == k) return true;
  return false;
}

Result<void> HParams::Validate() const {
  auto bad = [&](std::string_view field, auto value) {
    return Error::InvalidArgument("{}: {} = {} does not hold", arch, field, value);
  };
  if (n_layer <= 0 || n_layer > 4096) return bad("block_count", n_layer);
  if (static_cast<int>(layers.size()) != n_layer) return bad("layer kinds", layers.size());
  if (n_embd <= 0 || n_embd > (1 << 20)) return bad("embedding_length", n_embd);
  if (n_vocab <= 0 || n_vocab > (1 << 24)) return bad("vocabulary size", n_vocab);
  if (!(rms_eps > 0.0f) || !std::isfinite(rms_eps)) return bad("layer_norm_rms_epsilon", rms_eps);
  bool attn = has_kind(LayerKind::kAttention) || has_kind(LayerKind::kGatedAttention);
  if (attn) {
    if (n_head <= 0 || n_head > 4096) return bad("attention.head_count", n_head);
    if (n_head_kv <= 0 || n_head % n_head_kv != 0) return bad("attention.head_count_kv", n_head_kv);
    if (head_dim <= 0 || head_dim > 4096) return bad("attention.key_length", head_dim);
    if (n_rot < 0 || n_rot > head_dim || n_rot % 2 != 0) return bad("rope.dimension_count", n_rot);
    if (!(rope_base > 0.0) || !std::isfinite(rope_base)) return bad("rope.freq_base", rope_base);
  }
  if (has_kind(LayerKind::kDeltaNet)) {
    if (ssm_conv_kernel < 1 || ssm_conv_kernel > 64) return bad("ssm.conv_kernel", ssm_conv_kernel);
    if (ssm_d_state <= 0 || ssm_d_state > 4096) return bad("ssm.state_size", ssm_d_state);
    if (ssm_n_k_heads <= 0 || ssm_n_k_heads > 4096) return bad("ssm.group_count", ssm_n_k_heads);
    if (ssm_n_v_heads <= 0 || ssm_n_v_heads > 4096) return bad("ssm.time_step_rank", ssm_n_v_heads);
    if (ssm_d_inner <= 0 || ssm_d_inner % ssm_n_v_heads != 0 || ssm_d_v() > 1024) return bad("ssm.inner_size", ssm_d_inner);
    if (ssm_n_v_heads % ssm_n_k_heads != 0) return bad("ssm.time_step_rank (a multiple of group_count)", ssm_n_v_heads);
  }
  if (n_expert <= 0 || n_expert > 65536) return bad("expert_count", n_expert);
  if (n_expert_used <= 0 || n_expert_used > n_expert) return bad("expert_used_count", n_expert_used);
  return Ok();
}

Result<int64_t> ArchInt(const format::Checkpoint& c, const std::string& arch, std::string_view key, int64_t lo,
                        int64_t hi) {
  std::string full = fmt::format("{}.{}", arch, key);
  auto v = c.GetInt(full);
  if (!v) return Error::NotFound("metadata key {} is missing", full);
  if (*v < lo || *v > hi) return Error::InvalidArgument("metadata key {} = {} is outside [{}, {}]", full, *v, lo, hi);
  return *v;
}

Result<double> ArchFloat(const format::Checkpoint& c, const std::string& arch, std::string_view key) {
  std::string full = fmt::format("{}.{}", arch, key);
  auto v = c.GetFloat(full);
  if (!v) return Error::NotFound("metadata key {} is missing", full);
  if (!std::isfinite(*v)) return Error::InvalidArgument("metadata key {} is not finite", full);
  return *v;
}

}  // namespace tenzro::model
