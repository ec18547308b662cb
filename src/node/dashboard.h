// tenzro node: the live dashboard on the public listener
// (docs/operations.md, "Dashboard").
//
//   GET /                     the page: plain HTML + JS + SVG from the binary
//                             (no external fetches); it polls the state below
//                             about once a second and redraws
//   GET /v1/dashboard/state[?model=M]
//        {"node": {"node_id", "version", "http", "quic"?},
//         "models": [...], "model": M or null,
//         "runtime": {"memory", "counters", "experts", "gates"}  (this node;
//             file paths removed),
//         "shard_map": GET /v1/swarm/shard-map?model=M&min_providers=2's JSON
//             (layers x experts, replicas, hot, under_replicated, holders with
//             node ids and endpoints) or null (no model / no swarm),
//         "shard_map_error"?: why it is null,
//         "recent_forwards": NodeMetrics::RecentForwards() (newest first),
//         ...sections other services add (Node::AddDashboardSection), e.g.
//         "serving" with --serve (node/serve_service.h)}
// M defaults to the first model this node holds, else the first the swarm
// knows. The state reuses the runtime's status and the swarm service's
// shard-map route (dispatched in-process on the admin router), so it shows
// exactly what the admin API shows, minus file paths and tokens.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "holder/expert_runtime.h"
#include "swarm/agent.h"

namespace tenzro::node {

class Node;

// The page served at GET / (a constant, self-contained HTML document).
std::string_view DashboardHtml();

// Registers GET / and GET /v1/dashboard/state on the node's public router.
// What the state shows: the runtime's experts and memory, the agent's node
// id and models (and, through the admin route, its shard map), the QUIC
// address. Any may be null / unset.
struct DashboardParts {
  std::shared_ptr<holder::ExpertRuntime> runtime;
  std::shared_ptr<swarm::SwarmAgent> agent;
  std::optional<std::string> quic_address;
};

Result<void> AddDashboardService(Node& node, DashboardParts parts);

}  // namespace tenzro::node
