#include "runtime/moe_block.h"

#include <algorithm>
#include <cstring>

namespace tenzro::runtime {

Result<void> ComputeRoutedExperts(const std::vector<const ExpertWeights*>& experts,
                                  const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                                  float* out, ThreadPool* pool) {
  const int n_tok = static_cast<int>(routing.size());
  // slot_of[t] = first slot of token t in the per-(token, k) output buffer.
  std::vector<size_t> slot_of(n_tok + 1, 0);
  for (int t = 0; t < n_tok; ++t) slot_of[t + 1] = slot_of[t] + routing[t].experts.size();
  // Tokens (and their slot) per expert, in token order.
  std::vector<std::vector<std::pair<int, size_t>>> by_expert(experts.size());
  for (int t = 0; t < n_tok; ++t) {
    for (size_t k = 0; k < routing[t].experts.size(); ++k) {
      const int e = routing[t].experts[k].expert;
      if (e < 0 || static_cast<size_t>(e) >= experts.size() || experts[e] == nullptr)
        return Error::NotFound("token {} is routed to expert {}, which is not available", t, e);
      by_expert[e].push_back({t, slot_of[t] + k});
    }
  }
  std::vector<float> ys(slot_of[n_tok] * n_embd);
  std::vector<float> xb, yb;
  for (size_t e = 0; e < experts.size(); ++e) {
    const auto& toks = by_expert[e];
    if (toks.empty()) continue;
    const ExpertWeights& w = *experts[e];
    if (w.n_embd() != n_embd)
      return Error::InvalidArgument("expert {} has n_embd {}, the block {}", e, w.n_embd(), n_embd);
    const int nb = static_cast<int>(toks.size());
    xb.resize(static_cast<size_t>(nb) * n_embd);
    yb.resize(xb.size());
    for (int i = 0; i < nb; ++i)
      std::memcpy(xb.data() + i * n_embd, x + toks[i].first * n_embd, n_embd * sizeof(float));
    auto st = ExpertFfn(w, xb.data(), nb, yb.data(), pool);
    if (!st) return st.error().WithContext(fmt::format("expert {}", e));
    for (int i = 0; i < nb; ++i)
      std::memcpy(ys.data() + toks[i].second * n_embd, yb.data() + i * n_embd, n_embd * sizeof(float));
  }
  for (int t = 0; t < n_tok; ++t) {
    float* o = out + t * n_embd;
    std::fill(o, o + n_embd, 0.0f);
    for (size_t k = 0; k < routing[t].experts.size(); ++k) {
      const float wk = routing[t].experts[k].weight;
      const float* y = ys.data() + (slot_of[t] + k) * n_embd;
      for (int64_t i = 0; i < n_embd; ++i) o[i] += wk * y[i];
    }
  }
  return Ok();
}

Result<std::vector<TokenRouting>> ComputeMoeBlock(const MoeBlockWeights& w, const float* x, int n_tok, float* out,
                                                  ThreadPool* pool, const MoeBlockOptions& options) {
  if (static_cast<int>(w.experts.size()) != w.router.n_expert())
    return Error::InvalidArgument("block has {} expert entries, router {} experts", w.experts.size(),
                                  w.router.n_expert());
  TENZRO_TRY(std::vector<TokenRouting> routing, Route(w.router, w.routing, x, n_tok, pool));
  const int64_t n_embd = w.router.n_embd();
  TENZRO_CHECK_OK(ComputeRoutedExperts(w.experts, routing, x, n_embd, out, pool));
  if (options.include_shared && w.shared && n_tok > 0) {
    if (w.shared->ffn.n_embd() != n_embd)
      return Error::InvalidArgument("shared expert has n_embd {}, the block {}", w.shared->ffn.n_embd(), n_embd);
    std::vector<float> sh(static_cast<size_t>(n_tok) * n_embd);
    TENZRO_CHECK_OK(SharedExpertFfn(*w.shared, x, n_tok, sh.data(), pool));
    for (size_t i = 0; i < sh.size(); ++i) out[i] += sh[i];
  }
  return routing;
}

}  // namespace tenzro::runtime
