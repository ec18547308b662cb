// qwen3moe (Qwen3-30B-A3B / 235B-A22B), as llama.cpp's src/models/qwen3moe.cpp
// reads it: every layer is GQA softmax attention with per-head Q/K RMSNorm
// and NEOX rotary over the whole head, then ffn_norm and the MoE block
// (softmax top-k renormalised, no shared expert).
#include "model/arch.h"

namespace tenzro::model {

namespace {

Result<HParams> ReadHParams(const format::Checkpoint& c) {
  HParams hp;
  hp.arch = "qwen3moe";
  TENZRO_CHECK_OK(ReadCommonHParams(c, hp));
  hp.layers.assign(hp.n_layer, LayerKind::kAttention);
  TENZRO_CHECK_OK(hp.Validate());
  return hp;
}

Result<ModelWeights> LoadWeights(const format::Checkpoint& c, const HParams& hp) {
  ModelWeights w;
  TENZRO_CHECK_OK(LoadHeadAndEmbeddings(c, hp, w));
  for (int il = 0; il < hp.n_layer; ++il) {
    LayerWeights l;
    l.kind = LayerKind::kAttention;
    TENZRO_TRY(l.attn_norm, LoadVector(c, BlockTensor(il, "attn_norm.weight"), hp.n_embd));
    TENZRO_TRY(l.ffn_norm, LoadVector(c, BlockTensor(il, "ffn_norm.weight"), hp.n_embd));
    TENZRO_TRY(l.attn, LoadAttention(c, hp, il, /*gated=*/false));
    w.layers.push_back(std::move(l));
  }
  return w;
}

}  // namespace

const ArchDef kQwen3Moe = {"qwen3moe", ReadHParams, LoadWeights};

}  // namespace tenzro::model
