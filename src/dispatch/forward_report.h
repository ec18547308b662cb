// tenzro dispatch: what one distributed forward did (Dispatcher::Forward's
// report, forward.h) and its JSON form (docs/dispatch.md): timings, every
// holder call of every round, what was dropped, the spot checks and the
// re-runs they made.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "dispatch/executor.h"
#include "dispatch/planner.h"
#include "dispatch/spot_check.h"

namespace tenzro::dispatch {

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
  bool hedge = false;          // sent as the hedge of a slow call (exec_calls.h)
  bool lost = false;           // the loser of a hedged pair: cancelled, not used
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
  double combine_ms = 0;  // weighted sum (+ ForwardInput::shared)
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

}  // namespace tenzro::dispatch
