// tenzro dispatch: the planner — which holder computes which expert's rows.
//
// Input: the work (per (layer, expert), the tokens routed to it), the live
// holder declarations of the model (swarm/declaration.h), what this node
// holds itself, and what it has measured of each holder (HolderStats).
// Output: per-holder batches (node id, endpoint, transport, items) and the
// items nobody holds. Rules (docs/dispatch.md):
//   * an item this node holds is computed here (transport local);
//   * otherwise it goes to a holder declaring it (state not "leaving", not
//     excluded, with a usable endpoint), an expert's rows all to one holder;
//   * a round's cost is its estimated completion — the latest holder's
//       est = rtt_ms + (rows_queued + rows planned to it) / rows_per_s * 1000
//     — plus call_cost_ms per remote call, and the plan keeps it low with
//     few calls: (1) a greedy cover picks holders by the uncovered rows they
//     can take (ties: the sooner finish, then the lower node id) until every
//     item has one; (2) each item, largest first, goes to the chosen holder
//     that would finish it soonest; (3) while moving one item off the holder
//     that finishes last shortens the round by more than the calls it opens
//     cost, the best such move is made. So a swarm of many small holders is
//     asked in few calls, and a slow holder sheds work to faster replicas;
//   * ties go to the lower node id and items are taken largest first (then
//     by layer, expert), so the plan is a deterministic function of its
//     input.
// Transport: "quic" when the holder advertises a quic endpoint and the
// caller can speak QUIC (PlanInput::quic), else "http".
//
// Pure logic, no I/O, no clock; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "swarm/declaration.h"

namespace tenzro::dispatch {

enum class Transport : uint8_t { kLocal, kQuic, kHttp };
std::string_view TransportName(Transport t);  // "local" | "quic" | "http"

// One routing decision as `plan-dispatch --routings` reads it.
struct RoutedExpert {
  int layer = 0;
  int expert = 0;
  float weight = 0.0f;
  bool has_weight = false;
};
struct TokenRoute {
  int token_index = 0;
  std::vector<RoutedExpert> experts;
};

// Parses [{"token_index": 0, "experts": [{"layer": 0, "expert": 5,
// "weight"?: 0.3}, ...]}, ...]. kInvalidArgument naming the entry for wrong
// types, negative indices, a token listed twice, an expert listed twice for
// one token, or a non-finite weight.
Result<std::vector<TokenRoute>> ParseRoutings(const nlohmann::json& j);

// Tokens routed to one (layer, expert), ascending.
struct PlanItem {
  int layer = 0;
  int expert = 0;
  std::vector<int> tokens;
  bool operator==(const PlanItem&) const = default;
};

// The items of `routes`, sorted by (layer, expert).
std::vector<PlanItem> GroupByExpert(const std::vector<TokenRoute>& routes);

// What this node knows of a holder (HolderStatsTable keeps these).
struct HolderStats {
  double rtt_ms = 0;         // fitted fixed cost of a call (ms), as the caller measured it
  double rows_per_s = 0;     // fitted rows per second of a call's time; 0 = unmeasured
  double rows_queued = 0;    // rows sent and not yet answered
  bool measured = false;     // false: use the PlanInput defaults
};

struct PlanInput {
  std::string self_node_id;
  std::set<std::pair<int, int>> local;           // (layer, expert) held by this node's runtime
  std::vector<swarm::Declaration> live;          // live declaration parts of the model
  // When set, read instead of `live` (not copied; must outlive the call):
  // a forward plans every round and hedge over the same parts, which at
  // the 397B shape are megabytes.
  const std::vector<swarm::Declaration>* live_view = nullptr;
  const std::vector<swarm::Declaration>& Live() const { return live_view ? *live_view : live; }
  std::map<std::string, HolderStats> stats;      // by node id
  std::set<std::string> excluded;                // holders not to use (banned)
  std::set<std::tuple<std::string, int, int>> excluded_items;  // (node, layer, expert) that failed
  bool quic = false;                             // a QUIC executor is available
  double default_rtt_ms = 1.0;                   // unmeasured holders
  double default_rows_per_s = 1000.0;
  // What one more call in a round is worth avoiding, in ms of the round's
  // estimated completion: a holder is added to a round only when it makes
  // the round finish sooner by more than this.
  double call_cost_ms = 0.5;
};

struct HolderBatch {
  std::string node_id;
  Transport transport = Transport::kHttp;
  std::string endpoint;    // URL (http), ip:port (quic), "" (local)
  double estimated_ms = 0; // completion estimate after the last item placed
  uint64_t rows = 0;
  std::vector<PlanItem> items;  // sorted by (layer, expert)
};

struct Plan {
  std::vector<HolderBatch> batches;  // local first, then by node id
  std::vector<PlanItem> unheld;      // sorted by (layer, expert)
  // (layer, expert) of unheld items that an excluded (banned) holder
  // declares: unavailable for now rather than held by nobody.
  std::set<std::pair<int, int>> unheld_banned;
  int holders_considered = 0;        // distinct usable remote holders
};

Plan PlanDispatch(const std::vector<PlanItem>& work, const PlanInput& input);

// {"batches": [{"node_id", "transport", "endpoint", "estimated_ms", "rows",
//   "items": [{"layer", "expert", "token_indices"}]}], "unheld": [{"layer",
//   "expert", "token_indices", "holders_banned"}], "holders_considered"}
nlohmann::json PlanToJson(const Plan& plan);
nlohmann::json PlanItemToJson(const PlanItem& item);

}  // namespace tenzro::dispatch
