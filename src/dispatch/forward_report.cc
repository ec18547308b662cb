#include "dispatch/forward_report.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tenzro::dispatch {
namespace {

using nlohmann::json;

json CallToJson(const HolderCall& c) {
  json h = {{"round", c.round},
            {"node_id", c.target.node_id},
            {"transport", std::string(TransportName(c.target.transport))},
            {"endpoint", c.target.endpoint},
            {"experts", c.experts},
            {"rows", c.rows},
            {"sent_ms", c.sent_ms},
            {"rtt_ms", c.rtt_ms},
            {"compute_ms", c.compute_ms},
            {"network_ms", std::max(0.0, c.rtt_ms - c.compute_ms)},
            {"failed_experts", c.failed_experts}};
  if (c.error) h["error"] = c.error->ToString();
  if (c.hedge) h["hedge"] = true;
  if (c.lost) h["lost"] = true;
  return h;
}

}  // namespace

json ReportToJson(const ForwardReport& r) {
  json holders = json::array();
  double max_compute = 0;
  for (const HolderCall& c : r.calls) {
    max_compute = std::max(max_compute, c.compute_ms);
    holders.push_back(CallToJson(c));
  }
  json dropped = json::array();
  for (const DroppedItem& d : r.dropped) {
    json j = PlanItemToJson(d.item);
    j["reason"] = d.reason.ToString();
    dropped.push_back(std::move(j));
  }
  std::map<SpotOutcome, int> outcomes;
  json items = json::array(), spot_calls = json::array();
  for (const SpotCheckRecord& c : r.spot_checks) {
    ++outcomes[c.outcome];
    json j = {{"expert", c.expert},
              {"holder", c.holder},
              {"verifier", c.verifier},
              {"rel_l2", std::isfinite(c.rel_l2) ? json(c.rel_l2) : json("inf")},
              {"outcome", std::string(SpotOutcomeName(c.outcome))}};
    if (!c.third.empty()) j["third"] = c.third;
    items.push_back(std::move(j));
  }
  for (const HolderCall& c : r.spot_calls) spot_calls.push_back(CallToJson(c));
  json spot = {{"checked", r.spot_checks.size()},
               {"agree", outcomes[SpotOutcome::kAgree]},
               {"mismatch", outcomes[SpotOutcome::kMismatch]},
               {"inconclusive", outcomes[SpotOutcome::kInconclusive]},
               {"skipped", outcomes[SpotOutcome::kSkipped]},
               {"banned", r.banned_wrong_output},
               {"recomputed", r.spot_recomputed},
               {"items", items},
               {"calls", spot_calls}};
  return {{"plan_ms", r.plan_ms},
          {"exec_ms", r.exec_ms},
          {"combine_ms", r.combine_ms},
          {"total_ms", r.total_ms},
          {"rounds", r.rounds},
          {"max_holder_compute_ms", max_compute},
          {"holders", holders},
          {"dropped", dropped},
          {"tokens_without_experts", r.tokens_without_experts},
          {"spot_checks", spot}};
}

}  // namespace tenzro::dispatch
