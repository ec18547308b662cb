#include "model/arch.h"

#include <fmt/format.h>

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
