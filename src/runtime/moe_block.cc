#include "runtime/moe_block.h"

#include <chrono>

#include "runtime/local_experts.h"
#include "runtime/routed_batches.h"

namespace tenzro::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

Result<void> RunMoeBlock(const MoeBlockGate& gate, const float* x, int n_tok, RoutedExpertRunner& routed,
                         float* out, MoeBlockRun& run, ThreadPool* pool) {
  run = MoeBlockRun{};
  auto t0 = Clock::now();
  TENZRO_TRY(run.routing, Route(*gate.router, gate.routing, x, n_tok, pool));
  run.gate_ms = MsSince(t0);
  const int64_t n_embd = gate.router->n_embd();

  run.stage = MoeBlockStage::kShared;
  std::vector<float> sh;
  if (gate.shared && n_tok > 0) {
    if (gate.shared->ffn.n_embd() != n_embd)
      return Error::InvalidArgument("shared expert has n_embd {}, the block {}", gate.shared->ffn.n_embd(), n_embd);
    t0 = Clock::now();
    sh.resize(static_cast<size_t>(n_tok) * n_embd);
    TENZRO_CHECK_OK(SharedExpertFfn(*gate.shared, x, n_tok, sh.data(), pool));
    run.shared_ms = MsSince(t0);
  }

  run.stage = MoeBlockStage::kRouted;
  t0 = Clock::now();
  TENZRO_CHECK_OK(routed.Run(run.routing, x, n_embd, out));
  run.routed_ms = MsSince(t0);
  if (!sh.empty()) AddShared(sh.data(), sh.size(), out);
  return Ok();
}

Result<void> ComputeRoutedExperts(const std::vector<const ExpertWeights*>& experts,
                                  const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                                  float* out, ThreadPool* pool) {
  InProcessExperts routed(experts, pool);
  return routed.Run(routing, x, n_embd, out);
}

Result<std::vector<TokenRouting>> ComputeMoeBlock(const MoeBlockWeights& w, const float* x, int n_tok, float* out,
                                                  ThreadPool* pool, const MoeBlockOptions& options) {
  if (static_cast<int>(w.experts.size()) != w.router.n_expert())
    return Error::InvalidArgument("block has {} expert entries, router {} experts", w.experts.size(),
                                  w.router.n_expert());
  const MoeBlockGate gate{&w.router, w.routing, options.include_shared && w.shared ? &*w.shared : nullptr};
  InProcessExperts routed(w.experts, pool);
  routed.set_wire(options.wire);
  MoeBlockRun run;
  TENZRO_CHECK_OK(RunMoeBlock(gate, x, n_tok, routed, out, run, pool));
  return std::move(run.routing);
}

}  // namespace tenzro::runtime
