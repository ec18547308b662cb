// tenzro swarm: the replication policy — which experts a node should adopt.
//
// Pure logic over a shard map and the live declarations it was built from.
// Candidates, in priority order:
//   1. uncovered experts (no holder) whose blob somebody offers (a preparer's
//      "offers"; without an offer nobody can supply the bytes: listed in
//      `unavailable`),
//   2. under-replicated experts (fewer distinct holders than the policy),
//      fewest replicas first,
//   3. hot experts (summed served tokens/s above hot_tps) by the highest load
//      per replica,
// never one this node already holds; ties broken by (layer, expert). Each is
// adopted while its estimated bytes fit the node's free budget (a budget of 0
// is unlimited) and at most `max_adopt` are proposed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "swarm/declaration.h"
#include "swarm/shard_map.h"

namespace tenzro::swarm {

struct RebalanceInput {
  std::string self_node_id;
  uint64_t memory_budget = 0;  // 0 = unlimited
  uint64_t free_bytes = 0;     // budget - warm bytes (ignored when unlimited)
  uint64_t expert_bytes = 0;   // estimated size of one expert (0 = unknown: budget not checked)
  size_t max_adopt = SIZE_MAX;
};

struct Adoption {
  int layer = 0;
  int expert = 0;
  std::string reason;  // "uncovered" | "under_replicated" | "hot"
  int replicas = 0;
  double tps = 0;
  std::string blob_hash;
  // Nodes known to serve the blob (holders first, then offerers), with
  // their endpoints; fetches go through provider lookup as well.
  std::vector<std::pair<std::string, std::vector<Endpoint>>> sources;
};

struct RebalancePlan {
  std::vector<Adoption> adopt;
  std::vector<Adoption> skipped_budget;  // would have been adopted, did not fit
  std::vector<std::pair<int, int>> unavailable;  // uncovered and nobody offers the blob
};

RebalancePlan PlanRebalance(const ShardMap& map, std::span<const Declaration> live, const RebalanceInput& in);

nlohmann::json RebalancePlanToJson(const RebalancePlan& p);

}  // namespace tenzro::swarm
