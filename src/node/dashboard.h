// tenzro node: the live dashboard, on the public listener by default
// (docs/operations.md, "Dashboard"; `--dashboard public|admin|off`).
//
//   GET /                     the page: plain HTML + JS + SVG from the binary
//                             (no external fetches); it polls the state below
//                             about once a second and redraws
//   GET /v1/dashboard/state[?model=M]
//        {"node": {"node_id", "version", "http", "quic"?},
//         "models": [...], "model": M or null,
//         "runtime": {"memory", "counters", "experts", "gates"}  (this node;
//             file paths removed),
//         "shard_map": the shard map of M as GET /v1/swarm/shard-map?model=M
//             &min_providers=2 shows it (layers x experts, replicas, hot,
//             under_replicated, holders with node ids and endpoints, plus
//             "read_ms"), or null (no model / unknown model / no swarm),
//         "shard_map_error"?: why it is null ("unknown model 'M'" when the
//             node does not know M),
//         "recent_forwards": NodeMetrics::RecentForwards() (newest first),
//         ...sections other services add (Node::AddDashboardSection), e.g.
//         "serving" with --serve (node/serve_service.h)}
// M defaults to the first model this node holds, else the first the swarm
// knows. The state reuses the runtime's status and the swarm service's
// snapshot shard map (node/swarm_service.h SnapshotShardMapJson), so it
// shows what the admin API shows, minus file paths and tokens.
//
// Work bounded by the node, never by the request: the state is built on
// the loop thread from memory (no DHT read, no worker-pool task). The shard
// map comes only from the agent's snapshot of a model the node watches (it
// holds or declares it, or its operator asked for it on the admin API) and
// whose shape the catalog knows; any other model id gets the base state with
// "unknown model" and leaves nothing behind.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "holder/expert_runtime.h"
#include "node/swarm_service.h"

namespace tenzro::node {

class Node;

// The page served at GET / (a constant, self-contained HTML document).
std::string_view DashboardHtml();

// Registers GET / and GET /v1/dashboard/state on the router that the node's
// config names (dashboard = "public": the public listener, "admin": the
// admin listener, behind its token, "off": none). What the state shows: the
// runtime's experts and memory, the agent's node id, models and snapshot
// shard maps, the QUIC address. Any may be null / unset.
struct DashboardParts {
  std::shared_ptr<holder::ExpertRuntime> runtime;
  std::shared_ptr<SwarmState> swarm;
  std::optional<std::string> quic_address;
};

Result<void> AddDashboardService(Node& node, DashboardParts parts);

}  // namespace tenzro::node
