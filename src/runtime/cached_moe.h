// tenzro runtime: the MoE block computed with experts from the ExpertCache.
//
// The per-layer forward entry point of a holder node:
//   route (gate) -> Prefetch(routed experts) -> for each routed expert in
//   ascending id: Pin, ExpertFfn on its tokens, unpin -> per-token weighted
//   sum in routing order -> + sigmoid-gated shared expert.
// Pinning one expert at a time means a layer whose routed experts do not all
// fit in the memory budget still runs (experts cycle through warm), and the
// arithmetic is exactly runtime::ComputeMoeBlock's, so the result is bit for
// bit the same whatever the tiers, the budget or the thread count.
// Thread-safe as the cache is: several forwards may run at once.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "runtime/expert_cache.h"
#include "runtime/expert_loader.h"
#include "runtime/gating.h"

namespace tenzro::runtime {

struct CachedForwardOptions {
  bool include_shared = true;  // add the gate's shared expert when it has one
  bool prefetch = true;        // Prefetch the routed experts before computing
};

// out[t] = sum_k w_k * FFN_{e_k}(x[t]) for a routing decided elsewhere,
// experts (model, layer, e_k) taken from `cache`. x/out: n_tok x n_embd
// floats (n_tok = routing.size()). kNotFound naming the token and expert when
// the cache does not hold a routed expert; the cache's errors otherwise.
Result<void> ComputeRoutedCached(ExpertCache& cache, const std::string& model, int layer,
                                 const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                                 float* out, ThreadPool* pool = nullptr, bool prefetch = true);

// The whole block: routes x with `gate`/`routing`, then as above, plus the
// shared expert. Returns the routing used. kInvalidArgument for n_tok < 0.
Result<std::vector<TokenRouting>> ForwardMoeLayer(ExpertCache& cache, const std::string& model, int layer,
                                                  const GateWeights& gate, const RoutingConfig& routing,
                                                  const float* x, int n_tok, float* out, ThreadPool* pool = nullptr,
                                                  const CachedForwardOptions& options = {});

}  // namespace tenzro::runtime
