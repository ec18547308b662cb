#include "runtime/cached_moe.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "runtime/expert_ffn.h"
#include "runtime/routed_batches.h"

namespace tenzro::runtime {

namespace {

// The routed experts from the cache, then CombineMoeBlock with `shared`.
Result<void> RoutedCachedBlock(ExpertCache& cache, const std::string& model, int layer,
                               const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                               const float* shared, float* out, ThreadPool* pool, bool prefetch) {
  const int n_tok = static_cast<int>(routing.size());
  const std::vector<size_t> slot_of = RoutingSlots(routing);
  // Tokens (and their slot) per expert, in token order; experts ascending.
  std::map<int, ExpertTokens> by_expert;
  for (int t = 0; t < n_tok; ++t)
    for (size_t k = 0; k < routing[t].experts.size(); ++k) {
      const int e = routing[t].experts[k].expert;
      if (e < 0) return Error::InvalidArgument("token {} is routed to expert {}", t, e);
      by_expert[e].push_back({t, slot_of[t] + k});
    }
  std::vector<ExpertKey> keys;
  for (const auto& [e, toks] : by_expert) {
    ExpertKey key{model, layer, e};
    if (!cache.Contains(key))
      return Error::NotFound("token {} is routed to expert {} of {} layer {}, which this node does not hold",
                             toks.front().first, e, model, layer);
    keys.push_back(std::move(key));
  }
  if (prefetch) cache.Prefetch(keys);

  std::vector<float> ys(slot_of[n_tok] * n_embd);
  std::vector<float> xb, yb;
  size_t i_key = 0;
  for (const auto& [e, toks] : by_expert) {
    TENZRO_TRY(PinnedExpert pin, cache.Pin(keys[i_key++]));
    TENZRO_CHECK_OK(RunExpertBatch(pin.weights(), e, toks, x, n_embd, ys.data(), pool, xb, yb));
  }
  // Same summation as ComputeMoeBlock (moe_block.cc): routing order, then shared.
  CombineMoeBlock(routing, slot_of, ys.data(), shared, n_embd, out);
  return Ok();
}

}  // namespace

Result<void> ComputeRoutedCached(ExpertCache& cache, const std::string& model, int layer,
                                 const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                                 float* out, ThreadPool* pool, bool prefetch) {
  return RoutedCachedBlock(cache, model, layer, routing, x, n_embd, /*shared=*/nullptr, out, pool, prefetch);
}

Result<std::vector<TokenRouting>> ForwardMoeLayer(ExpertCache& cache, const std::string& model, int layer,
                                                  const GateWeights& gate, const RoutingConfig& routing,
                                                  const float* x, int n_tok, float* out, ThreadPool* pool,
                                                  const CachedForwardOptions& options) {
  if (n_tok < 0) return Error::InvalidArgument("n_tok {} is negative", n_tok);
  TENZRO_TRY(std::vector<TokenRouting> r, Route(gate.router, routing, x, n_tok, pool));
  const int64_t n_embd = gate.router.n_embd();
  std::vector<float> sh;
  if (options.include_shared && gate.shared && n_tok > 0) {
    sh.resize(static_cast<size_t>(n_tok) * n_embd);
    TENZRO_CHECK_OK(SharedExpertFfn(*gate.shared, x, n_tok, sh.data(), pool));
  }
  TENZRO_CHECK_OK(RoutedCachedBlock(cache, model, layer, r, x, n_embd, sh.empty() ? nullptr : sh.data(), out, pool,
                                    options.prefetch));
  return r;
}

}  // namespace tenzro::runtime
