// qwen35moe (Qwen3.5-35B-A3B / 122B-A10B / 397B-A17B), as llama.cpp's
// src/models/qwen35moe.cpp reads it: layer i is a gated delta net unless
// (i + 1) % full_attention_interval == 0, then gated softmax attention; every
// layer ends in the MoE block with a sigmoid-gated shared expert.
#include <fmt/format.h>

#include "model/arch.h"

namespace tenzro::model {

namespace {

Result<HParams> ReadHParams(const format::Checkpoint& c) {
  HParams hp;
  hp.arch = "qwen35moe";
  const std::string& a = hp.arch;
  TENZRO_CHECK_OK(ReadCommonHParams(c, hp));
  // The rotary width and base have no defaults here (partial rotary).
  TENZRO_TRY(int64_t n_rot, ArchInt(c, a, "rope.dimension_count", 0, 4096));
  TENZRO_TRY(hp.rope_base, ArchFloat(c, a, "rope.freq_base"));
  hp.n_rot = static_cast<int>(n_rot);
  // rope.dimension_sections (multi-section rotary): for text every section
  // reads the token position, so it equals NEOX rotary over n_rot dims.
  if (auto sec = c.GetIntArray(a + ".rope.dimension_sections")) {
    int64_t sum = 0;
    for (int64_t s : *sec) {
      if (s < 0 || s > 4096) return Error::InvalidArgument("{}.rope.dimension_sections holds {}", a, s);
      sum += s;
    }
    if (sum * 2 != n_rot)
      return Error::InvalidArgument("{}.rope.dimension_sections sum to {}, expected rope.dimension_count / 2 = {}", a,
                                    sum, n_rot / 2);
  }
  TENZRO_TRY(int64_t conv, ArchInt(c, a, "ssm.conv_kernel", 1, 64));
  TENZRO_TRY(int64_t d_state, ArchInt(c, a, "ssm.state_size", 1, 4096));
  TENZRO_TRY(int64_t groups, ArchInt(c, a, "ssm.group_count", 1, 4096));
  TENZRO_TRY(int64_t dt_rank, ArchInt(c, a, "ssm.time_step_rank", 1, 4096));
  TENZRO_TRY(hp.ssm_d_inner, ArchInt(c, a, "ssm.inner_size", 1, 1 << 20));
  TENZRO_TRY(int64_t interval, ArchInt(c, a, "full_attention_interval", 1, 4096));
  hp.ssm_conv_kernel = static_cast<int>(conv);
  hp.ssm_d_state = static_cast<int>(d_state);
  hp.ssm_n_k_heads = static_cast<int>(groups);
  hp.ssm_n_v_heads = static_cast<int>(dt_rank);
  hp.full_attention_interval = static_cast<int>(interval);
  for (int i = 0; i < hp.n_layer; ++i)
    hp.layers.push_back((i + 1) % hp.full_attention_interval == 0 ? LayerKind::kGatedAttention : LayerKind::kDeltaNet);
  TENZRO_CHECK_OK(hp.Validate());
  return hp;
}

Result<DeltaNetWeights> LoadDeltaNet(const format::Checkpoint& c, const HParams& hp, int il) {
  DeltaNetWeights s;
  int64_t ch = hp.ssm_conv_channels();
  TENZRO_TRY(s.qkv, LoadMatrix(c, BlockTensor(il, "attn_qkv.weight"), hp.n_embd, ch));
  TENZRO_TRY(s.gate, LoadMatrix(c, BlockTensor(il, "attn_gate.weight"), hp.n_embd, hp.ssm_d_inner));
  TENZRO_TRY(s.alpha, LoadMatrix(c, BlockTensor(il, "ssm_alpha.weight"), hp.n_embd, hp.ssm_n_v_heads));
  TENZRO_TRY(s.beta, LoadMatrix(c, BlockTensor(il, "ssm_beta.weight"), hp.n_embd, hp.ssm_n_v_heads));
  TENZRO_TRY(s.out, LoadMatrix(c, BlockTensor(il, "ssm_out.weight"), hp.ssm_d_inner, hp.n_embd));
  TENZRO_TRY(s.conv, LoadVector(c, BlockTensor(il, "ssm_conv1d.weight"), ch * hp.ssm_conv_kernel));
  TENZRO_TRY(s.dt_bias, LoadVector(c, BlockTensor(il, "ssm_dt.bias"), hp.ssm_n_v_heads));
  TENZRO_TRY(s.a, LoadVector(c, BlockTensor(il, "ssm_a"), hp.ssm_n_v_heads));
  TENZRO_TRY(s.norm, LoadVector(c, BlockTensor(il, "ssm_norm.weight"), hp.ssm_d_v()));
  return s;
}

Result<ModelWeights> LoadWeights(const format::Checkpoint& c, const HParams& hp) {
  ModelWeights w;
  TENZRO_CHECK_OK(LoadHeadAndEmbeddings(c, hp, w));
  for (int il = 0; il < hp.n_layer; ++il) {
    LayerWeights l;
    l.kind = hp.layers[il];
    TENZRO_TRY(l.attn_norm, LoadVector(c, BlockTensor(il, "attn_norm.weight"), hp.n_embd));
    TENZRO_TRY(l.ffn_norm, LoadVector(c, BlockTensor(il, "post_attention_norm.weight"), hp.n_embd));
    if (l.kind == LayerKind::kDeltaNet) {
      TENZRO_TRY(l.ssm, LoadDeltaNet(c, hp, il));
    } else {
      TENZRO_TRY(l.attn, LoadAttention(c, hp, il, /*gated=*/true));
    }
    w.layers.push_back(std::move(l));
  }
  return w;
}

}  // namespace

const ArchDef kQwen35Moe = {"qwen35moe", ReadHParams, LoadWeights};

}  // namespace tenzro::model
