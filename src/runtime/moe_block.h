// tenzro runtime: the one description of a MoE feed-forward block.
//
//   out[t] = sum_k w_k * FFN_{e_k}(x[t])  (+ sigmoid-gated shared expert)
//
// RunMoeBlock is the block, and the only place its steps are put together:
//   1. gate: route x with the router (gating.h) -> (e_k, w_k) per token;
//   2. the shared expert on x (expert_ffn.h), when the block has one;
//   3. the routed experts, through a RoutedExpertRunner, which returns their
//      sum in routing order (k = 0, 1, ...; routed_batches.h CombineRouted);
//   4. out += shared (routed_batches.h AddShared).
// Where the routed experts run is the runner's business; its executors:
//   in-process weights  runtime::InProcessExperts  runtime/local_experts.h
//                       (ComputeMoeBlock below; model::LocalMoeExecutor)
//   the expert cache    runtime::CachedExperts     runtime/cached_moe.h
//                       (ForwardMoeLayer; holder::ExpertRuntime::Forward)
//   the swarm           dispatch::DispatchedExperts dispatch/dispatched_experts.h
//                       (node::SwarmMoeExecutor, POST /v1/moe/forward-distributed)
// Local runners run each expert once on the batch of its tokens (token
// order), so the output depends neither on the grouping nor on the thread
// count, and every executor gives the same bits (the dispatcher's with f32
// rows on the wire). x / out: n_tok x n_embd floats, token-major, not aliased.
#pragma once

#include <optional>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "runtime/expert_ffn.h"
#include "runtime/gating.h"
#include "runtime/weight_matrix.h"
#include "runtime/wire_rows.h"

namespace tenzro::runtime {

// Runs the routed experts of one block.
class RoutedExpertRunner {
 public:
  virtual ~RoutedExpertRunner() = default;
  // out[t] = sum_k w_k * FFN_{e_k}(x[t]) for t < routing.size(), summed in
  // routing order (CombineRouted). Called once per block, also with no
  // tokens. Errors: the runner's (kNotFound for an expert it cannot run, ...).
  virtual Result<void> Run(const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                           float* out) = 0;
};

// The gate half of a block; views, not owned.
struct MoeBlockGate {
  const RouterWeights* router = nullptr;       // required
  RoutingConfig routing;
  const SharedExpertWeights* shared = nullptr;  // null: no shared expert (or left out)
};

enum class MoeBlockStage : uint8_t { kGate, kShared, kRouted };

// What RunMoeBlock did, filled as it goes.
struct MoeBlockRun {
  std::vector<TokenRouting> routing;  // the gate's choice, one per token
  // Of the steps that completed (0 for the others).
  double gate_ms = 0, shared_ms = 0, routed_ms = 0;
  MoeBlockStage stage = MoeBlockStage::kGate;  // the step reached: on an error, the one that failed
};

// Steps 1-4 above, into `out` and `run`. Errors: Route's; kInvalidArgument
// when the shared expert's n_embd is not the router's; the shared expert's;
// the runner's.
Result<void> RunMoeBlock(const MoeBlockGate& gate, const float* x, int n_tok, RoutedExpertRunner& routed,
                         float* out, MoeBlockRun& run, ThreadPool* pool = nullptr);

// A block whose weights are all in memory.
struct MoeBlockWeights {
  RouterWeights router;
  RoutingConfig routing;
  // Indexed by expert id (size n_expert); not owned. A null entry is an
  // expert this node does not hold: routing a token to it is kNotFound.
  std::vector<const ExpertWeights*> experts;
  std::optional<SharedExpertWeights> shared;
};

struct MoeBlockOptions {
  bool include_shared = true;  // add the shared expert when present
  // Round each routed expert's input and output rows as this wire dtype
  // would (local_experts.h; f32: exact).
  WireDtype wire = WireDtype::kF32;
};

// RunMoeBlock with InProcessExperts over w.experts; returns the routing used.
// Errors: kInvalidArgument for mismatched shapes, kNotFound for a routed
// expert with a null entry.
Result<std::vector<TokenRouting>> ComputeMoeBlock(const MoeBlockWeights& w, const float* x, int n_tok, float* out,
                                                  ThreadPool* pool = nullptr, const MoeBlockOptions& options = {});

// The routed part alone, for a routing decided elsewhere (InProcessExperts):
// out[t] = sum_k w_k * FFN_{e_k}(x[t]). experts[e] may be null for experts no
// token uses.
Result<void> ComputeRoutedExperts(const std::vector<const ExpertWeights*>& experts,
                                  const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                                  float* out, ThreadPool* pool = nullptr);

}  // namespace tenzro::runtime
