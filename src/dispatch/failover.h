// tenzro dispatch: the failover policy of a distributed forward — after each
// round of holder calls, what to run next, whom to ban, when to give up
// (forward.h steps 4 and 5, docs/dispatch.md "fail over").
//
// A forward computes the routed experts of one layer in rounds: plan the
// pending experts onto holders (planner.h, which picks the replica), call the
// holders, hand the outcomes here. FailoverPolicy keeps what the forward
// knows between rounds — the experts still pending, the last error of each,
// the (holder, layer, expert) triples not to ask again, the experts given up
// on — and decides:
//   * BeginRound: another round runs while experts are pending and fewer
//     than max_rounds have run; calls get adaptive deadlines in every round
//     but the last (last_round());
//   * OnPlan: an expert the plan could place on no holder is missing — with
//     its last error when a call for it already failed (or discovery failed),
//     else kUnavailable when every holder declaring it is banned, else
//     kNotFound. With kFail the forward stops at the first missing expert
//     (kStop, nothing else is computed); it also stops when nothing is left
//     to run;
//   * OnResults: a failed call (transport error, missed deadline, answer for
//     another request) puts each of its experts back to pending, never to be
//     asked of that holder again in this forward, and bans a remote holder
//     until now + ban (this node is never banned); an error frame does the
//     same without the ban; an expert answered with an error is re-planned
//     (its error names the holder), without a ban; an answered expert is done;
//   * Finish: every expert still pending is missing with its last error (or
//     "was not computed"); with kFail any missing expert fails the forward
//     with the first one's code, naming each (its tokens, its error); with
//     kRenormalize the missing experts are returned to be dropped
//     (RenormalizeRouting).
// Pure logic: no I/O, no clock (times are arguments). One per forward; not
// thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/result.h"
#include "dispatch/planner.h"
#include "runtime/gating.h"

namespace tenzro::dispatch {

enum class OnMissing : uint8_t { kFail, kRenormalize };
std::string_view OnMissingName(OnMissing m);           // "fail" | "renormalize"
Result<OnMissing> ParseOnMissing(std::string_view s);  // kInvalidArgument otherwise

struct FailoverOptions {
  OnMissing on_missing = OnMissing::kFail;
  int max_rounds = 3;                    // first try + re-plans; REQUIRES: >= 1
  std::chrono::milliseconds ban{5000};  // a holder whose call failed sits out this long
};

// How one holder call of a round ended.
enum class CallStatus : uint8_t {
  kAnswered,    // an answer for the request: per-expert rows or errors
  kErrorFrame,  // the holder answered with a whole-request error
  kFailed,      // transport error, missed deadline, or an answer for another request
};

struct ExpertOutcome {
  int expert = 0;
  std::optional<Error> error;  // kAnswered: this entry's error; otherwise unused
};

struct CallOutcome {
  std::string node_id;
  bool remote = true;  // false: this node's runtime (never banned)
  CallStatus status = CallStatus::kAnswered;
  std::optional<Error> error;          // kErrorFrame, kFailed: why
  std::vector<ExpertOutcome> experts;  // kAnswered: the answer's entries; otherwise the request's experts
};

struct HolderBan {
  std::string node_id;
  std::chrono::steady_clock::time_point until;
};

// The ban a call's outcome earns: a failed call to a remote holder, until
// now + ban; nothing otherwise (error frames, per-expert errors, this node).
std::optional<HolderBan> BanAfter(const CallOutcome& call, std::chrono::steady_clock::time_point now,
                                  std::chrono::milliseconds ban);

struct RoundDecision {
  std::set<int> done;           // experts whose answered rows the forward keeps
  std::set<int> replan;         // experts pending again (failed in this round)
  std::vector<HolderBan> bans;  // one per failed remote call, in call order
};

enum class PlanStep : uint8_t { kRun, kStop };

class FailoverPolicy {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using ItemKey = std::tuple<std::string, int, int>;  // (node id, layer, expert)

  // `tokens`: every routed expert of `layer` with its tokens (ascending);
  // all of them start pending. `model` and the tokens name what failed in
  // Finish's error.
  FailoverPolicy(std::string model, int layer, std::map<int, std::vector<int>> tokens, FailoverOptions options);

  // Reading the declarations failed: each pending expert without an error of
  // its own yet fails with `err` if no holder computes it (what this node
  // holds still runs).
  void SetDiscoveryError(const Error& err) { discovery_error_ = err; }

  // Starts a round: false when max_rounds rounds ran or nothing is pending.
  bool BeginRound();
  int rounds() const { return rounds_; }  // rounds begun
  bool last_round() const { return rounds_ >= options_.max_rounds; }

  // What to plan this round: the pending experts as plan items (ascending),
  // and the (holder, expert) pairs that failed in this forward.
  std::vector<PlanItem> Work() const;
  const std::set<ItemKey>& excluded_items() const { return excluded_items_; }

  // The plan of Work(): its unheld items become missing (see above).
  PlanStep OnPlan(const Plan& plan);
  // The round's calls, in any order.
  RoundDecision OnResults(const std::vector<CallOutcome>& calls, TimePoint now);

  // After the rounds: `expert`'s rows were lost with `err` (a spot check
  // caught its holder lying and no replica recomputed it).
  void Lost(int expert, const Error& err);
  // kFail with an expert missing: the forward fails whatever else happens.
  bool failing() const { return options_.on_missing == OnMissing::kFail && !missing_.empty(); }
  bool pending(int expert) const { return pending_.count(expert) > 0; }

  // The experts that could not be computed and why (empty when all were),
  // or under kFail, when any is missing, the forward's error.
  Result<std::map<int, Error>> Finish() const;

 private:
  void Fail(const std::string& node_id, int expert, const Error& err);

  const std::string model_;
  const int layer_;
  const std::map<int, std::vector<int>> tokens_;
  const FailoverOptions options_;
  int rounds_ = 0;
  std::set<int> pending_;
  std::map<int, Error> last_error_, missing_;
  std::set<ItemKey> excluded_items_;
  std::optional<Error> discovery_error_;
};

// kRenormalize: each token's weights over the experts not in `missing` are
// rescaled to keep the token's weight sum (w * sum(all w) / sum(kept w));
// the weights of missing experts become 0, and a token whose kept weights
// sum to 0 gets all weights 0 (only the shared expert). Returns those
// tokens, ascending. No-op when `missing` is empty.
std::vector<int> RenormalizeRouting(std::vector<runtime::TokenRouting>& routing,
                                    const std::map<int, Error>& missing);

}  // namespace tenzro::dispatch
