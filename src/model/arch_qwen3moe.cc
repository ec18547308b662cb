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
  const std::string& a = hp.arch;
  TENZRO_TRY(int64_t n_layer, ArchInt(c, a, "block_count", 1, 4096));
  TENZRO_TRY(hp.n_embd, ArchInt(c, a, "embedding_length", 1, 1 << 20));
  hp.n_layer = static_cast<int>(n_layer);
  TENZRO_TRY(int64_t n_head, ArchInt(c, a, "attention.head_count", 1, 4096));
  TENZRO_TRY(int64_t n_head_kv, ArchInt(c, a, "attention.head_count_kv", 1, 4096));
  int64_t head_dim = c.GetInt(a + ".attention.key_length").value_or(n_head > 0 ? hp.n_embd / n_head : 0);
  int64_t head_dim_v = c.GetInt(a + ".attention.value_length").value_or(head_dim);
  if (head_dim_v != head_dim)
    return Error::Unsupported("qwen3moe: attention.value_length {} != key_length {}", head_dim_v, head_dim);
  int64_t n_rot = c.GetInt(a + ".rope.dimension_count").value_or(head_dim);
  double base = c.GetFloat(a + ".rope.freq_base").value_or(10000.0);
  TENZRO_TRY(double eps, ArchFloat(c, a, "attention.layer_norm_rms_epsilon"));
  TENZRO_TRY(int64_t n_expert, ArchInt(c, a, "expert_count", 1, 65536));
  TENZRO_TRY(int64_t n_used, ArchInt(c, a, "expert_used_count", 1, 65536));
  hp.n_ctx_train = static_cast<int>(c.GetInt(a + ".context_length").value_or(4096));
  hp.n_head = static_cast<int>(n_head);
  hp.n_head_kv = static_cast<int>(n_head_kv);
  hp.head_dim = static_cast<int>(head_dim);
  hp.n_rot = static_cast<int>(n_rot);
  hp.rope_base = base;
  hp.rms_eps = static_cast<float>(eps);
  hp.n_expert = static_cast<int>(n_expert);
  hp.n_expert_used = static_cast<int>(n_used);
  hp.routing.kind = runtime::RoutingKind::kSoftmaxTopK;
  hp.routing.top_k = hp.n_expert_used;
  hp.routing.norm_topk_prob = true;
  hp.layers.assign(hp.n_layer, LayerKind::kAttention);
  TENZRO_TRY(hp.n_vocab, VocabFromEmbeddings(c, hp.n_embd));
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
