#include "model/arch.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tenzro::model {

namespace {
const ArchDef* const kArchs[] = {&kQwen35Moe, &kQwen3Moe};
}  // namespace

const ArchDef* FindArch(std::string_view name) {
  for (const ArchDef* a : kArchs)
    if (a->name == name) return a;
  return nullptr;
}

std::vector<std::string_view> ArchNames() {
  std::vector<std::string_view> v;
  for (const ArchDef* a : kArchs) v.push_back(a->name);
  return v;
}

Result<void> ReadCommonHParams(const format::Checkpoint& c, HParams& hp) {
  const std::string& a = hp.arch;
  TENZRO_TRY(int64_t n_layer, ArchInt(c, a, "block_count", 1, 4096));
  TENZRO_TRY(hp.n_embd, ArchInt(c, a, "embedding_length", 1, 1 << 20));
  TENZRO_TRY(int64_t n_head, ArchInt(c, a, "attention.head_count", 1, 4096));
  TENZRO_TRY(int64_t n_head_kv, ArchInt(c, a, "attention.head_count_kv", 1, 4096));
  const int64_t head_dim = c.GetInt(a + ".attention.key_length").value_or(hp.n_embd / n_head);
  const int64_t head_dim_v = c.GetInt(a + ".attention.value_length").value_or(head_dim);
  if (head_dim_v != head_dim)
    return Error::Unsupported("{}: attention.value_length {} != key_length {}", a, head_dim_v, head_dim);
  TENZRO_TRY(double eps, ArchFloat(c, a, "attention.layer_norm_rms_epsilon"));
  TENZRO_TRY(int64_t n_expert, ArchInt(c, a, "expert_count", 1, 65536));
  TENZRO_TRY(int64_t n_used, ArchInt(c, a, "expert_used_count", 1, 65536));
  hp.n_layer = static_cast<int>(n_layer);
  hp.n_ctx_train = static_cast<int>(std::clamp<int64_t>(c.GetInt(a + ".context_length").value_or(4096), 1, 1 << 24));
  hp.n_head = static_cast<int>(n_head);
  hp.n_head_kv = static_cast<int>(n_head_kv);
  hp.head_dim = static_cast<int>(head_dim);
  hp.n_rot = static_cast<int>(c.GetInt(a + ".rope.dimension_count").value_or(head_dim));
  hp.rope_base = c.GetFloat(a + ".rope.freq_base").value_or(10000.0);
  hp.rms_eps = static_cast<float>(eps);
  hp.n_expert = static_cast<int>(n_expert);
  hp.n_expert_used = static_cast<int>(n_used);
  hp.routing.kind = runtime::RoutingKind::kSoftmaxTopK;
  hp.routing.top_k = hp.n_expert_used;
  hp.routing.norm_topk_prob = true;
  TENZRO_TRY(hp.n_vocab, VocabFromEmbeddings(c, hp.n_embd));
  return Ok();
}

Result<int> VocabFromEmbeddings(const format::Checkpoint& c, int64_t n_embd) {
  const format::TensorRef* t = c.FindTensor("token_embd.weight");
  if (!t) return Error::NotFound("tensor token_embd.weight is missing");
  if (t->ne.size() != 2 || t->ne[0] != n_embd || t->ne[1] <= 0 || t->ne[1] > (1 << 24))
    return Error::InvalidArgument("tensor token_embd.weight has shape [{}], expected [{}, n_vocab]",
                                  fmt::join(t->ne, ", "), n_embd);
  return static_cast<int>(t->ne[1]);
}

Result<void> LoadHeadAndEmbeddings(const format::Checkpoint& c, const HParams& hp, ModelWeights& w) {
  TENZRO_TRY(w.tok_embd, LoadMatrix(c, "token_embd.weight", hp.n_embd, hp.n_vocab));
  TENZRO_TRY(w.output_norm, LoadVector(c, "output_norm.weight", hp.n_embd));
  if (c.FindTensor("output.weight")) {
    TENZRO_TRY(w.output, LoadMatrix(c, "output.weight", hp.n_embd, hp.n_vocab));
  } else {
    w.output = w.tok_embd;  // tied embeddings
  }
  return Ok();
}

Result<AttentionWeights> LoadAttention(const format::Checkpoint& c, const HParams& hp, int il, bool gated) {
  AttentionWeights a;
  int64_t qd = static_cast<int64_t>(hp.n_head) * hp.head_dim;
  int64_t kvd = static_cast<int64_t>(hp.n_head_kv) * hp.head_dim;
  TENZRO_TRY(a.q, LoadMatrix(c, BlockTensor(il, "attn_q.weight"), hp.n_embd, gated ? 2 * qd : qd));
  TENZRO_TRY(a.k, LoadMatrix(c, BlockTensor(il, "attn_k.weight"), hp.n_embd, kvd));
  TENZRO_TRY(a.v, LoadMatrix(c, BlockTensor(il, "attn_v.weight"), hp.n_embd, kvd));
  TENZRO_TRY(a.o, LoadMatrix(c, BlockTensor(il, "attn_output.weight"), qd, hp.n_embd));
  TENZRO_TRY(a.q_norm, LoadVector(c, BlockTensor(il, "attn_q_norm.weight"), hp.head_dim));
  TENZRO_TRY(a.k_norm, LoadVector(c, BlockTensor(il, "attn_k_norm.weight"), hp.head_dim));
  return a;
}

}  // namespace tenzro::model
