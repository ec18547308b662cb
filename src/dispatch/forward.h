// tenzro dispatch: the distributed forward of one MoE block (docs/dispatch.md).
//
// The routed-expert step of a MoE block (runtime/moe_block.h RunMoeBlock
// reaches it through DispatchedExperts, dispatched_experts.h, which gates the
// tokens and adds the shared expert on this node); Dispatcher::Forward
//   1. groups the routed (token, expert) pairs per expert,
//   2. plans per-holder batches (planner.h) from the live declarations (read
//      once per forward: a re-plan after a holder timed out must not depend
//      on a fresh discovery read), this node's own experts and the measured
//      holder stats,
//   3. runs every batch at once through the executor of its transport
//      (exec_calls.h: remote batches on the dispatcher's call pool, the local
//      one on the calling thread; no thread is created per call),
//   3b. hedges a remote call that runs past its holder's recent p99 (times
//      ForwardOptions::hedge_factor): the same batch to another replica, the
//      first good answer wins and the other call is cancelled
//      (exec_calls.h HedgePolicy), so a frozen or slow holder costs about
//      one p99 rather than its deadline;
//   4. re-plans what failed onto other replicas (failover.h decides): a
//      holder whose call failed (transport error, deadline, malformed
//      answer) is banned for `ban`; an expert a holder answered with an error
//      is not asked of that holder again in this forward; at most
//      `max_rounds` rounds; calls to measured holders get a deadline adapted
//      to their expected time (ForwardOptions::min_timeout, timeout_factor),
//      except in the last round;
//   5. recombines: out[t] = sum_k w_k * y_k(t) in routing order, + the
//      input's shared rows when given (runtime::CombineMoeBlock, the local
//      runners' own sums, so with f32 rows the result is bit for bit the
//      local forward's).
//   6. spot checks (spot_check_runner.h): a seeded fraction of the remote
//      results is re-run on another replica (this node when it holds the
//      expert) and compared; a holder caught answering wrong rows is banned
//      for SpotCheckOptions::ban, its rows are replaced by the verified ones
//      and its other results of this forward are recomputed elsewhere.
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
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/thread_pool.h"
#include "dispatch/executor.h"
#include "dispatch/failover.h"
#include "dispatch/forward_report.h"
#include "dispatch/holder_stats.h"
#include "dispatch/planner.h"
#include "dispatch/spot_check.h"
#include "runtime/gating.h"
#include "swarm/declaration.h"

namespace tenzro::dispatch {

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
  // Hedged calls (exec_calls.h HedgePolicy): a remote call still running
  // hedge_factor x its holder's recent p99 (HolderStatsTable::HedgeAfter,
  // at least hedge_min) after it left is sent to another replica as well
  // when one holder can take all of its experts; the first good answer wins.
  bool hedge = true;
  double hedge_factor = 1.5;
  std::chrono::microseconds hedge_min{5000};
  RowType dtype = runtime::kDefaultWireDtype;       // rows on the wire (bf16)
  SpotCheckOptions spot_check;                      // off by default (fraction 0)
};

struct ForwardInput {
  std::string model;  // normalised catalog id
  int layer = 0;
  int64_t d_model = 0;
  int n_tok = 0;
  const float* x = nullptr;                    // n_tok x d_model
  std::vector<runtime::TokenRouting> routing;  // one per token (the gate's choice)
  const float* shared = nullptr;               // n_tok x d_model added at the end, or null (RunMoeBlock: null)
};


struct DispatcherOptions {
  // Threads of the call pool on which remote calls run (created once, with
  // the Dispatcher). More concurrent remote calls than this wait for a
  // thread, or run on the thread that called Forward once its local call is
  // done.
  size_t call_threads = 16;
};

struct Call;         // exec_calls.h
struct HedgePolicy;  // exec_calls.h

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
             std::shared_ptr<Executor> quic = nullptr, DispatcherOptions options = {});

  // The plan this node would dispatch now for `work` of `model`.
  Result<Plan> PlanWork(const std::string& model, const std::vector<PlanItem>& work,
                        const std::set<std::tuple<std::string, int, int>>& excluded_items = {});
  // The same with the declarations given (a forward reads them once and
  // re-plans its failed items from the same set).
  Plan PlanWith(const std::string& model, const std::vector<PlanItem>& work,
                const std::vector<swarm::Declaration>& live,
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
    uint64_t hedges_sent = 0, hedges_won = 0;
  };
  Counters counters() const;
  const std::string& self_node_id() const { return sources_.self_node_id; }

 private:
  struct ForwardState;  // forward.cc
  Executor* ExecutorFor(Transport t) const;
  // One round of Forward: plan the pending experts, run the calls, let the
  // policy decide, keep the answered rows. False: no more rounds.
  bool RunRound(ForwardState& s, FailoverPolicy& policy);
  // The calls of `batches`, requests filled, deadlines set.
  std::vector<Call> MakeCalls(std::vector<HolderBatch> batches, const ForwardInput& in, const ForwardOptions& opt,
                              bool adaptive);
  void RunCalls(std::vector<Call>& calls, const HedgePolicy* hedge = nullptr);
  void Ban(const HolderBan& ban);
  // Step 6 of Forward (spot_check_runner.h): the experts whose rows were
  // lost (a holder lied and no replica recomputed them).
  std::map<int, Error> SpotCheck(ForwardState& s, const FailoverPolicy& policy);

  Sources sources_;
  std::shared_ptr<Executor> local_, http_, quic_;
  HolderStatsTable stats_;
  std::atomic<uint64_t> next_request_id_{1};
  std::atomic<uint64_t> spot_agree_{0}, spot_mismatch_{0}, spot_inconclusive_{0}, spot_skipped_{0};
  std::atomic<uint64_t> bans_failure_{0}, bans_wrong_output_{0};
  std::atomic<uint64_t> hedges_sent_{0}, hedges_won_{0};
  // Remote calls run here. Last member: destroyed (its threads joined) first.
  std::unique_ptr<ThreadPool> call_pool_;
};

}  // namespace tenzro::dispatch
