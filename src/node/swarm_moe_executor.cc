#include "node/swarm_moe_executor.h"

#include <algorithm>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "catalog/catalog.h"
#include "dispatch/dispatched_experts.h"
#include "node/node_metrics.h"

namespace tenzro::node {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

Result<std::unique_ptr<SwarmMoeExecutor>> SwarmMoeExecutor::Create(std::shared_ptr<dispatch::Dispatcher> dispatcher,
                                                                   ThreadPool* pool, const std::string& model_id,
                                                                   const model::HParams& hp,
                                                                   const format::Checkpoint& spine,
                                                                   dispatch::ForwardOptions options) {
  TENZRO_CHECK_OK(runtime::CheckWireRow(options.dtype, hp.n_embd));
  auto ex = std::unique_ptr<SwarmMoeExecutor>(new SwarmMoeExecutor());
  TENZRO_TRY(ex->model_, catalog::NormalizeModelId(model_id));
  ex->routing_ = hp.routing;
  ex->options_ = options;
  ex->pool_ = pool;
  for (int il = 0; il < hp.n_layer; ++il) {
    Layer l;
    TENZRO_TRY(l.router, model::LoadRouter(spine, hp, il));
    TENZRO_TRY(l.shared, model::LoadSharedExpert(spine, il));
    if (l.shared && l.shared->ffn.n_embd() != hp.n_embd)
      return Error::InvalidArgument("layer {} shared expert has n_embd {}, the model {}", il, l.shared->ffn.n_embd(),
                                    hp.n_embd);
    ex->layers_.push_back(std::move(l));
  }
  ex->dispatcher_ = std::move(dispatcher);
  ex->stats_.resize(ex->layers_.size());
  return ex;
}

Result<void> SwarmMoeExecutor::Run(int layer, const float* x, int n_tok, float* out) {
  if (layer < 0 || layer >= static_cast<int>(layers_.size()))
    return Error::InvalidArgument("MoE layer {} out of range [0, {})", layer, layers_.size());
  const Layer& l = layers_[layer];
  SwarmLayerStats& st = stats_[layer];
  const auto t0 = Clock::now();
  const runtime::MoeBlockGate gate{&l.router, routing_, l.shared ? &*l.shared : nullptr};
  dispatch::DispatchedExperts routed(*dispatcher_, model_, layer, options_);
  runtime::MoeBlockRun run;
  auto ok = runtime::RunMoeBlock(gate, x, n_tok, routed, out, run, pool_);
  st.gate_ms += run.gate_ms;  // the steps that completed count, also when a later one failed
  st.shared_ms += run.shared_ms;
  if (!ok) {
    static constexpr const char* kStage[] = {"gate", "shared expert", "(distributed)"};
    return ok.error().WithContext(fmt::format("MoE layer {} {}", layer, kStage[static_cast<int>(run.stage)]));
  }
  const dispatch::ForwardReport& rep = routed.report();
  ++st.forwards;
  st.tokens += n_tok;
  st.plan_ms += rep.plan_ms;
  st.exec_ms += rep.exec_ms;
  st.combine_ms += rep.combine_ms;
  st.rounds += rep.rounds;
  for (const dispatch::HolderCall& c : rep.calls) {
    ++st.holder_calls;
    if (c.error) ++st.failed_calls;
    ++st.calls_by_transport[std::string(dispatch::TransportName(c.target.transport))];
    ++st.calls_by_holder[c.target.node_id];
  }
  st.spot_calls += static_cast<int>(rep.spot_calls.size());
  const double total_ms = MsSince(t0);
  st.total_ms += total_ms;
  // Into /metrics (tenzro_forward_stage_seconds) like an admin-route forward,
  // plus the slowest holder's own compute time.
  ForwardRecord rec;
  rec.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  rec.model = model_;
  rec.layer = layer;
  rec.n_tokens = n_tok;
  rec.ok = true;
  double slowest = 0;
  for (const dispatch::HolderCall& c : rep.calls) slowest = std::max(slowest, c.compute_ms);
  rec.stages_ms = {{"gate", run.gate_ms}, {"shared", run.shared_ms}, {"plan", rep.plan_ms},
                   {"exec", rep.exec_ms}, {"slowest_holder", slowest}, {"combine", rep.combine_ms},
                   {"total", total_ms}};
  rec.rounds = rep.rounds;
  for (const dispatch::HolderCall& c : rep.calls)
    rec.transports.emplace_back(dispatch::TransportName(c.target.transport));
  ProcessMetrics().RecordForward(std::move(rec));
  return Ok();
}

void SwarmMoeExecutor::ResetStats() {
  for (auto& s : stats_) s = SwarmLayerStats{};
}

nlohmann::json SwarmMoeExecutor::StatsJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (size_t il = 0; il < stats_.size(); ++il) {
    const SwarmLayerStats& s = stats_[il];
    out.push_back({{"layer", il},
                   {"forwards", s.forwards},
                   {"tokens", s.tokens},
                   {"gate_ms", s.gate_ms},
                   {"shared_ms", s.shared_ms},
                   {"plan_ms", s.plan_ms},
                   {"exec_ms", s.exec_ms},
                   {"combine_ms", s.combine_ms},
                   {"total_ms", s.total_ms},
                   {"rounds", s.rounds},
                   {"holder_calls", s.holder_calls},
                   {"failed_calls", s.failed_calls},
                   {"spot_calls", s.spot_calls},
                   {"transports", s.calls_by_transport},
                   {"holders", s.calls_by_holder}});
  }
  return out;
}

Result<std::unique_ptr<model::MoeExecutor>> MakeSwarmMoeExecutor(std::shared_ptr<dispatch::Dispatcher> dispatcher,
                                                                 ThreadPool* pool, const std::string& model_id,
                                                                 const model::HParams& hp,
                                                                 const format::Checkpoint& spine,
                                                                 dispatch::ForwardOptions options) {
  TENZRO_TRY(std::unique_ptr<SwarmMoeExecutor> ex, SwarmMoeExecutor::Create(std::move(dispatcher), pool, model_id, hp, spine, options));
  return std::unique_ptr<model::MoeExecutor>(std::move(ex));
}

std::string SwarmCoverageGap(swarm::SwarmAgent& agent, const std::string& model_id, const model::HParams& hp) {
  auto live = agent.Live(model_id);
  if (!live) return "cannot read the swarm: " + live.error().ToString();
  std::set<std::pair<int, int>> held;
  for (const swarm::Declaration& d : *live)
    for (const swarm::HeldExpert& e : d.experts) held.insert({e.layer, e.expert});
  int missing = 0;
  std::string first;
  for (int l = 0; l < hp.n_layer; ++l)
    for (int e = 0; e < hp.n_expert; ++e)
      if (!held.count({l, e}) && ++missing <= 5) first += fmt::format("{}{}/{}", first.empty() ? "" : ", ", l, e);
  if (missing == 0) return "";
  return fmt::format("{} of {} routed experts of {} have no live holder (layer/expert: {}{})", missing,
                     hp.n_layer * hp.n_expert, model_id, first, missing > 5 ? ", ..." : "");
}

}  // namespace tenzro::node
