#include "runtime/moe_block.h"

#include <algorithm>
#include <cstring>

#include "runtime/routed_batches.h"

namespace tenzro::runtime {

namespace {

// The routed experts, then CombineMoeBlock with `shared` (may be null).
Result<void> RoutedBlock(const std::vector<const ExpertWeights*>& experts, const std::vector<TokenRouting>& routing,
                         const float* x, int64_t n_embd, const float* shared, float* out, ThreadPool* pool) {
  const int n_tok = static_cast<int>(routing.size());
  // slot_of[t] = first slot of token t in the per-(token, k) output buffer.
  const std::vector<size_t> slot_of = RoutingSlots(routing);
  // Tokens (and their slot) per expert, in token order.
  std::vector<ExpertTokens> by_expert(experts.size());
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
    if (by_expert[e].empty()) continue;
    TENZRO_CHECK_OK(RunExpertBatch(*experts[e], static_cast<int>(e), by_expert[e], x, n_embd, ys.data(), pool, xb, yb));
  }
  CombineMoeBlock(routing, slot_of, ys.data(), shared, n_embd, out);
  return Ok();
}

}  // namespace

Result<void> ComputeRoutedExperts(const std::vector<const ExpertWeights*>& experts,
                                  const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                                  float* out, ThreadPool* pool) {
  return RoutedBlock(experts, routing, x, n_embd, /*shared=*/nullptr, out, pool);
}

Result<std::vector<TokenRouting>> ComputeMoeBlock(const MoeBlockWeights& w, const float* x, int n_tok, float* out,
                                                  ThreadPool* pool, const MoeBlockOptions& options) {
  if (static_cast<int>(w.experts.size()) != w.router.n_expert())
    return Error::InvalidArgument("block has {} expert entries, router {} experts", w.experts.size(),
                                  w.router.n_expert());
  TENZRO_TRY(std::vector<TokenRouting> routing, Route(w.router, w.routing, x, n_tok, pool));
  const int64_t n_embd = w.router.n_embd();
  std::vector<float> sh;
  if (options.include_shared && w.shared && n_tok > 0) {
    if (w.shared->ffn.n_embd() != n_embd)
      return Error::InvalidArgument("shared expert has n_embd {}, the block {}", w.shared->ffn.n_embd(), n_embd);
    sh.resize(static_cast<size_t>(n_tok) * n_embd);
    TENZRO_CHECK_OK(SharedExpertFfn(*w.shared, x, n_tok, sh.data(), pool));
  }
  TENZRO_CHECK_OK(RoutedBlock(w.experts, routing, x, n_embd, sh.empty() ? nullptr : sh.data(), out, pool));
  return routing;
}

}  // namespace tenzro::runtime
