// tenzro node: a model::MoeExecutor whose routed experts run on the swarm
// (docs/engine.md "MoE executors", docs/dispatch.md).
//
// Per layer and engine step, Run is runtime::RunMoeBlock (moe_block.h) with
// the layer's router and shared expert from the spine (a checkpoint, or a
// spine blob from `tenzro moe prepare-dense`: both hold routers and shared
// experts), gate and shared expert computed here, and the routed experts run
// by dispatch::DispatchedExperts: one distributed forward through the node's
// Dispatcher for all the step's tokens (planning, failover, spot checks as
// `options` says), combined in routing order. It is the block the in-process
// LocalMoeExecutor runs, and that rounds each routed expert's rows through
// the same wire dtype (ForwardOptions::dtype, default bf16; f32 is exact), so
// the output — hence the engine's logits and greedy tokens — is bit for bit
// the same per dtype, as long as the routed experts run on remote holders
// (the forward's own "local" calls take f32 rows: dispatch/exec_calls.h).
//
// Nothing here loads a routed expert: the experts this node computes are
// the ones its expert runtime holds (transport "local" in the plan), the
// rest go to remote holders. Thread-safety: as MoeExecutor (one Run at a
// time); stats() / ResetStats() from the thread that calls Run.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/thread_pool.h"
#include "dispatch/forward.h"
#include "format/checkpoint.h"
#include "model/hparams.h"
#include "model/moe_executor.h"
#include "swarm/agent.h"

namespace tenzro::node {

// Totals of one layer's Run calls since the last ResetStats.
struct SwarmLayerStats {
  int forwards = 0;
  int64_t tokens = 0;
  double gate_ms = 0, shared_ms = 0, plan_ms = 0, exec_ms = 0, combine_ms = 0, total_ms = 0;
  int rounds = 0;           // summed over forwards (1 per forward without failover)
  int holder_calls = 0;     // executor calls, all rounds
  int failed_calls = 0;     // calls that failed (holder banned, work re-planned)
  int spot_calls = 0;       // re-runs of remote results on another replica (spot checks)
  std::map<std::string, int> calls_by_transport;  // "local" | "http" | "quic"
  std::map<std::string, int> calls_by_holder;     // node id -> calls
};

class SwarmMoeExecutor : public model::MoeExecutor {
 public:
  // Views every layer's router and shared expert in `spine` (which must
  // outlive the executor); sends routed experts through `dispatcher` and
  // gates on `pool` (the node's worker pool, which must outlive it).
  // kInvalidArgument / kNotFound naming a missing or misshapen tensor.
  static Result<std::unique_ptr<SwarmMoeExecutor>> Create(std::shared_ptr<dispatch::Dispatcher> dispatcher,
                                                          ThreadPool* pool, const std::string& model_id,
                                                          const model::HParams& hp, const format::Checkpoint& spine,
                                                          dispatch::ForwardOptions options);

  // The dispatcher's error (kNotFound for an expert nobody holds,
  // kUnavailable when every holder of one failed, ...) with the layer named.
  Result<void> Run(int layer, const float* x, int n_tok, float* out) override;

  // Options of the next Run calls (a request's on_missing, deadlines, ...).
  void set_options(const dispatch::ForwardOptions& o) { options_ = o; }
  const std::vector<SwarmLayerStats>& stats() const { return stats_; }
  void ResetStats();
  // [{"layer", "forwards", "tokens", "gate_ms", ..., "holder_calls", "failed_calls",
  //   "spot_calls", "transports": {...}, "holders": {node_id: calls}}] (docs/formats/admin-api.md).
  nlohmann::json StatsJson() const;

 private:
  struct Layer {
    runtime::RouterWeights router;
    std::optional<runtime::SharedExpertWeights> shared;
  };
  SwarmMoeExecutor() = default;

  std::string model_;
  runtime::RoutingConfig routing_;
  std::vector<Layer> layers_;
  std::shared_ptr<dispatch::Dispatcher> dispatcher_;
  dispatch::ForwardOptions options_;
  ThreadPool* pool_ = nullptr;  // the node's worker pool, for the gate and the shared expert
  std::vector<SwarmLayerStats> stats_;
};

// The factory the serving layer plugs in (make_executor seam): a
// SwarmMoeExecutor as a model::MoeExecutor. Errors as Create.
Result<std::unique_ptr<model::MoeExecutor>> MakeSwarmMoeExecutor(std::shared_ptr<dispatch::Dispatcher> dispatcher,
                                                                 ThreadPool* pool, const std::string& model_id,
                                                                 const model::HParams& hp,
                                                                 const format::Checkpoint& spine,
                                                                 dispatch::ForwardOptions options);

// "" when every routed expert of `hp`'s layers has a live holder in the
// swarm (declarations read through `agent`, this node's own
// included), else a sentence naming how many are missing and the first few
// (layer/expert). For GET /health of a served model.
std::string SwarmCoverageGap(swarm::SwarmAgent& agent, const std::string& model_id, const model::HParams& hp);

}  // namespace tenzro::node
