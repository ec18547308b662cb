// tenzro swarm: the shard map, a network-wide view of one model.
//
// Pure logic over the live declaration parts of one model (from
// DeclarationTable::Live): per MoE layer, coverage (experts with >= 1 holder
// / experts in the layer); per expert, replication (distinct holders) and the
// summed served tokens/s; hot experts (summed tps above hot_tps);
// under-replicated experts (fewer distinct holders than min_providers,
// uncovered ones included); the holders with endpoints, capacity and load.
// Holders in state joining count as providers (they are loading the expert),
// so a rebalancer does not adopt the same expert twice. Entries naming a layer
// or expert the model does not have are counted in ignored_entries.
// JSON field names are stable: docs/formats/declaration.md ("Shard map").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/model_shape.h"
#include "swarm/declaration.h"

namespace tenzro::swarm {

struct ShardMapOptions {
  int min_providers = 2;  // "every active expert held by at least two distinct providers"
  double hot_tps = 10.0;  // an expert is hot when its summed served tokens/s is above this
};

struct ExpertReplication {
  int layer = 0;
  int expert = 0;
  int replicas = 0;                  // distinct holders
  double tps = 0;                    // summed served tokens/s over holders
  std::vector<std::string> holders;  // node ids, sorted
};

struct LayerCoverage {
  int layer = 0;
  int n_expert = 0;
  int covered = 0;  // experts with >= 1 holder
};

struct HolderSummary {
  std::string node_id;
  HolderState state = HolderState::kServing;
  std::vector<Endpoint> endpoints;
  uint64_t memory_budget = 0;
  uint64_t free_bytes = 0;
  uint64_t seq = 0;        // newest seq among its parts
  int parts_seen = 0;
  int parts_declared = 0;  // parts count of its newest part
  int experts = 0;         // distinct (layer, expert) held
  int gates = 0;           // distinct layers with a gate
  double tps = 0;          // summed served tokens/s
};

struct ShardMap {
  std::string model;
  ShardMapOptions options;
  std::vector<LayerCoverage> layers;      // MoE layers only, ascending
  std::vector<ExpertReplication> experts; // every (layer, expert) of the MoE layers, row-major
  std::vector<size_t> hot;                // indices into experts, by descending tps
  std::vector<size_t> under_replicated;   // indices into experts, row-major
  std::vector<HolderSummary> holders;     // sorted by node id
  uint64_t total_experts = 0;
  uint64_t covered_experts = 0;
  uint64_t ignored_entries = 0;

  // Index of (layer, expert) in `experts`, or -1.
  int64_t Find(int layer, int expert) const;
};

// Aggregates `live` (parts of any model; others than shape.id are skipped;
// leaving holders are skipped). kInvalidArgument if options are out of range.
Result<ShardMap> BuildShardMap(const catalog::ModelShape& shape, std::span<const Declaration> live,
                               const ShardMapOptions& options = {});

nlohmann::json ShardMapToJson(const ShardMap& m);

// A layers x experts heatmap of replication: one <rect class="cell"> per
// (layer, expert), coloured by replicas (red = uncovered, amber = under the
// policy, greens = at or above it), hot experts marked with a circle,
// uncovered ones with a cross. Plain SVG text.
std::string ShardMapToSvg(const ShardMap& m);

}  // namespace tenzro::swarm
