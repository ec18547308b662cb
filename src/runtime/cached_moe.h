// tenzro runtime: the MoE block computed with experts from the ExpertCache.
//
// The per-layer forward entry point of a holder node: RunMoeBlock
// (moe_block.h) with CachedExperts as its routed-expert runner, which
// checks that the cache holds every routed expert, Prefetches them, then for
// each in ascending id: Pin, ExpertFfn on its tokens, unpin.
// Pinning one expert at a time means a layer whose routed experts do not all
// fit in the memory budget still runs (experts cycle through warm), and the
// arithmetic is exactly runtime::ComputeMoeBlock's, so the result is bit for
// bit the same whatever the tiers, the budget or the thread count.
// Thread-safe as the cache is: several forwards may run at once (one
// CachedExperts object per forward).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "runtime/expert_cache.h"
#include "runtime/expert_loader.h"
#include "runtime/gating.h"
#include "runtime/local_experts.h"

namespace tenzro::runtime {

// The routed experts (model, layer, e) of a block, taken from `cache` (which
// must outlive the runner). Errors of Run: kInvalidArgument for an expert
// index < 0; kNotFound naming the token and expert when the cache does not
// hold a routed expert; the cache's errors otherwise.
class CachedExperts : public LocalExperts {
 public:
  CachedExperts(ExpertCache& cache, std::string model, int layer, ThreadPool* pool, bool prefetch = true)
      : LocalExperts(pool), cache_(cache), model_(std::move(model)), layer_(layer), prefetch_(prefetch) {}

 protected:
  Result<void> CheckChoice(int t, int e) override;
  Result<void> Prepare(const std::map<int, ExpertTokens>& by_expert) override;
  Result<void> RunExpert(int e, const ExpertTokens& toks, const float* x, int64_t n_embd, float* ys) override;

 private:
  ExpertCache& cache_;
  std::string model_;
  int layer_;
  bool prefetch_;
};

struct CachedForwardOptions {
  bool include_shared = true;  // add the gate's shared expert when it has one
  bool prefetch = true;        // Prefetch the routed experts before computing
};

// out[t] = sum_k w_k * FFN_{e_k}(x[t]) for a routing decided elsewhere
// (CachedExperts::Run). x/out: n_tok x n_embd floats (n_tok = routing.size()).
Result<void> ComputeRoutedCached(ExpertCache& cache, const std::string& model, int layer,
                                 const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                                 float* out, ThreadPool* pool = nullptr, bool prefetch = true);

// The whole block: RunMoeBlock with `gate`/`routing` and CachedExperts.
// Returns the routing used. kInvalidArgument for n_tok < 0.
Result<std::vector<TokenRouting>> ForwardMoeLayer(ExpertCache& cache, const std::string& model, int layer,
                                                  const GateWeights& gate, const RoutingConfig& routing,
                                                  const float* x, int n_tok, float* out, ThreadPool* pool = nullptr,
                                                  const CachedForwardOptions& options = {});

}  // namespace tenzro::runtime
