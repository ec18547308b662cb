#include "runtime/cached_moe.h"

#include "runtime/moe_block.h"

namespace tenzro::runtime {

Result<void> CachedExperts::CheckChoice(int t, int e) {
  if (e < 0) return Error::InvalidArgument("token {} is routed to expert {}", t, e);
  return Ok();
}

Result<void> CachedExperts::Prepare(const std::map<int, ExpertTokens>& by_expert) {
  std::vector<ExpertKey> keys;
  for (const auto& [e, toks] : by_expert) {
    ExpertKey key{model_, layer_, e};
    if (!cache_.Contains(key))
      return Error::NotFound("token {} is routed to expert {} of {} layer {}, which this node does not hold",
                             toks.front().first, e, model_, layer_);
    keys.push_back(std::move(key));
  }
  if (prefetch_) cache_.Prefetch(keys);
  return Ok();
}

Result<void> CachedExperts::RunExpert(int e, const ExpertTokens& toks, const float* x, int64_t n_embd, float* ys) {
  TENZRO_TRY(PinnedExpert pin, cache_.Pin(ExpertKey{model_, layer_, e}));
  return RunBatch(pin.weights(), e, toks, x, n_embd, ys);
}

Result<void> ComputeRoutedCached(ExpertCache& cache, const std::string& model, int layer,
                                 const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                                 float* out, ThreadPool* pool, bool prefetch) {
  CachedExperts routed(cache, model, layer, pool, prefetch);
  return routed.Run(routing, x, n_embd, out);
}

Result<std::vector<TokenRouting>> ForwardMoeLayer(ExpertCache& cache, const std::string& model, int layer,
                                                  const GateWeights& gate, const RoutingConfig& routing,
                                                  const float* x, int n_tok, float* out, ThreadPool* pool,
                                                  const CachedForwardOptions& options) {
  if (n_tok < 0) return Error::InvalidArgument("n_tok {} is negative", n_tok);
  const MoeBlockGate block{&gate.router, routing, options.include_shared && gate.shared ? &*gate.shared : nullptr};
  CachedExperts routed(cache, model, layer, pool, options.prefetch);
  MoeBlockRun run;
  TENZRO_CHECK_OK(RunMoeBlock(block, x, n_tok, routed, out, run, pool));
  return std::move(run.routing);
}

}  // namespace tenzro::runtime
