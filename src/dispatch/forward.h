// tenzro dispatch: the distributed forward of one MoE block (docs/dispatch.md).
//
// The caller gates the tokens (the layer's router lives on this node) and
// computes the shared expert; Dispatcher::Forward then
//   1. groups the routed (token, expert) pairs per expert,
//   2. plans per-holder batches (planner.h) from the live declarations (read
//      once per forward: a re-plan after a holder timed out must not depend
//      on a fresh discovery read), this node's own experts and the measured
//      holder stats,
//   3. runs every batch at once (one thread per remote batch, the local one
//      on the calling thread) through the executor of its transport,
//   4. re-plans what failed onto other replicas: a holder whose call failed
//      (transport error, deadline, malformed answer) is banned for
//      `ban`; an expert a holder answered with an error is not asked of that
//      holder again in this forward; at most `max_rounds` rounds; calls to
//      measured holders get a deadline adapted to their expected time
//      (ForwardOptions::min_timeout, timeout_factor);
//   5. recombines: out[t] = sum_k w_k * y_k(t) in routing order, + shared
//      (runtime::CombineMoeBlock, the local block's own code, so with f32
//      rows the result is bit for bit the local forward's).
//   6. spot checks (spot_check.h): a seeded fraction of the remote results
//      is re-run on another replica (this node when it holds the expert)
//      and compared; a holder caught answering wrong rows is banned for
//      SpotCheckOptions::ban, its rows are replaced by the verified ones and
//      its other results of this forward are recomputed elsewhere.
// An expert that no round could compute fails the forward naming it (and
// its tokens and the last error) unless on_missing is kRenormalize: then each
// token's weights over the experts that answered are rescaled to keep the
// token's weight sum (softmax-renormalised top-k: w / sum of answered w), the
// dropped (expert, tokens) are reported, and a token with no expert left
// gets only the shared expert.
// Thread-safety: Forward and PlanWork may run concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "dispatch/executor.h"
#include "dispatch/holder_stats.h"
#include "dispatch/planner.h"
#include "dispatch/spot_check.h"
#include "runtime/gating.h"
#include "swarm/declaration.h"

namespace tenzro::dispatch {

enum class OnMissing : uint8_t { kFail, kRenormalize };
std::string_view OnMissingName(OnMissing m);           // "fail" | "renormalize"
Result<OnMissing> ParseOnMissing(std::string_view s);  // kInvalidArgument otherwise

struct ForwardOptions {
  OnMissing on_missing = OnMissing::kFail;
  int max_rounds = 3;                               // first try + re-plans
  std::chrono::milliseconds holder_timeout{10000};  // per call
  // A call to a holder with recent measurements times out sooner, after
  // max(min_timeout, timeout_factor x its expected time) (at most
  // holder_timeout), except in the last round: a holder that died without
  // its transport noticing (a SIGKILLed QUIC peer) then costs about
  // min_timeout, not holder_timeout.
  std::chrono::milliseconds min_timeout{1000};
  double timeout_factor = 20;
  std::chrono::milliseconds ban{5000};              // a failed holder sits out this long
  RowType dtype = RowType::kF32;                    // rows on the wire
  SpotCheckOptions spot_check;                      // off by default (fraction 0)
};

struct ForwardInput {
  std::string model;  // normalised catalog id
  int layer = 0;
  int64_t d_model = 0;
  int n_tok = 0;
  const float* x = nullptr;                    // n_tok x d_model
  std::vector<runtime::TokenRouting> routing;  // one per token (the gate's choice)
  const float* shared = nullptr;               // n_tok x d_model added at the end, or null
};

// One executor call.
struct HolderCall {
  int round = 0;
  HolderTarget target;
  int experts = 0;
  uint64_t rows = 0;
  double sent_ms = 0;     // when it left, from the start of the forward
  double rtt_ms = 0;      // whole call, as seen here
  double compute_ms = 0;  // as the holder reports it
  std::optional<Error> error;  // call failed (holder banned) or whole-request error
  int failed_experts = 0;      // per-expert errors in an answered call
};

struct DroppedItem {
  PlanItem item;
  Error reason;
};

// One spot check of one remote (holder, expert) result.
struct SpotCheckRecord {
  int expert = 0;
  std::string holder;    // node id that answered in the forward
  std::string verifier;  // node id that re-ran it ("" when none could)
  std::string third;     // node id asked to settle a disagreement, or ""
  double rel_l2 = 0;     // holder vs verifier
  SpotOutcome outcome = SpotOutcome::kAgree;
};

struct ForwardReport {
  double plan_ms = 0;     // all rounds
  double exec_ms = 0;     // wall time of the concurrent phases, all rounds
  double combine_ms = 0;  // weighted sum + shared
  double total_ms = 0;
  int rounds = 0;
  std::vector<HolderCall> calls;
  std::vector<DroppedItem> dropped;          // renormalize only
  std::vector<int> tokens_without_experts;   // renormalize only
  std::vector<SpotCheckRecord> spot_checks;
  std::vector<HolderCall> spot_calls;        // re-runs for spot checks and recomputations
  std::vector<std::string> banned_wrong_output;  // holders caught by a spot check here
  int spot_recomputed = 0;                   // experts recomputed because their holder lied
};

// {"plan_ms", "exec_ms", "combine_ms", "total_ms", "rounds", "max_holder_compute_ms",
//  "holders": [{"round", "node_id", "transport", "endpoint", "experts", "rows", "sent_ms", "rtt_ms",
//  "compute_ms", "network_ms", "error"?, "failed_experts"}], "dropped": [{"layer",
//  "expert", "token_indices", "reason"}], "tokens_without_experts": [...]}
nlohmann::json ReportToJson(const ForwardReport& r);

class Dispatcher {
 public:
  struct Sources {
    std::string self_node_id;
    // Live declaration parts of a model (SwarmAgent::Live).
    std::function<Result<std::vector<swarm::Declaration>>(const std::string& model)> live;
    // (layer, expert) this node's runtime holds for a model.
    std::function<std::set<std::pair<int, int>>(const std::string& model)> local;
  };

  // `local` and `http` are required; `quic` may be null (then the planner
  // never picks QUIC).
  Dispatcher(Sources sources, std::shared_ptr<Executor> local, std::shared_ptr<Executor> http,
             std::shared_ptr<Executor> quic = nullptr);

  // The plan this node would dispatch now for `work` of `model`.
  Result<Plan> PlanWork(const std::string& model, const std::vector<PlanItem>& work,
                        const std::set<std::tuple<std::string, int, int>>& excluded_items = {});
  // The same with the declarations given (a forward reads them once and
  // re-plans its failed items from the same set).
  Plan PlanWith(const std::string& model, const std::vector<PlanItem>& work, std::vector<swarm::Declaration> live,
                const std::set<std::tuple<std::string, int, int>>& excluded_items = {});

  // Computes the block into `out` (n_tok x d_model). kInvalidArgument for
  // bad input (sizes, a NaN or Inf in x, a routed expert index < 0); the
  // missing-expert error described above otherwise.
  Result<ForwardReport> Forward(const ForwardInput& in, const ForwardOptions& options, float* out);

  HolderStatsTable& stats() { return stats_; }

  // Totals over every forward of this dispatcher (for /metrics).
  struct Counters {
    uint64_t spot_agree = 0, spot_mismatch = 0, spot_inconclusive = 0, spot_skipped = 0;
    uint64_t bans_failure = 0;       // a call failed (transport, deadline, malformed answer)
    uint64_t bans_wrong_output = 0;  // caught by a spot check
  };
  Counters counters() const;
  const std::string& self_node_id() const { return sources_.self_node_id; }

 private:
  Executor* ExecutorFor(Transport t) const;
  struct SpotState;  // forward.cc
  // Step 6 of Forward: checks, bans, row replacement, recomputation.
  void SpotCheck(SpotState& s);

  Sources sources_;
  std::shared_ptr<Executor> local_, http_, quic_;
  HolderStatsTable stats_;
  std::atomic<uint64_t> next_request_id_{1};
  std::atomic<uint64_t> spot_agree_{0}, spot_mismatch_{0}, spot_inconclusive_{0}, spot_skipped_{0};
  std::atomic<uint64_t> bans_failure_{0}, bans_wrong_output_{0};
};

}  // namespace tenzro::dispatch
