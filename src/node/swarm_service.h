// tenzro node: the node's presence in the swarm (docs/formats/declaration.md,
// docs/operations.md).
//
// One swarm::SwarmAgent per node, on the discovery transport the config
// names: OpenDHT (swarm/dht_transport.h) on `dht_port`, bootstrapped from
// `bootstrap`; no bootstrap = a network of one. The agent publishes what the
// node's ExpertRuntime holds, refreshes every `swarm_refresh_ms` with TTL
// `swarm_ttl_s`, and announces "leaving" when the node stops cleanly. Blobs
// in the node's store are announced as provided.
//
// Admin routes:
//   GET  /v1/swarm/info                          node id, endpoints, DHT peers, stats
//   GET  /v1/swarm/declarations?model=M          live verified declaration parts
//   GET  /v1/swarm/shard-map?model=M[&min_providers=N][&hot_tps=X][&format=svg]
//   GET  /v1/swarm/providers?hash=H              provider records of a blob
//   POST /v1/swarm/publish                       publish now
//   POST /v1/moe/rebalance {"model", "apply"?, "min_providers"?, "hot_tps"?}
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "swarm/agent.h"

namespace tenzro::node {

class Node;

// The node's agent (created on first use; shared by every service of that
// node). kUnavailable when the DHT cannot start.
Result<std::shared_ptr<swarm::SwarmAgent>> NodeSwarm(Node& node);

// The agent when the swarm service runs on this node, else null (never
// starts one).
std::shared_ptr<swarm::SwarmAgent> NodeSwarmIfRunning(Node& node);

// HTTP URLs of the providers of a blob (swarm provider records), fastest
// measured round trip first; empty when none or the lookup fails.
std::vector<std::string> NodeBlobProviders(Node& node, const std::string& blob_hash);

Result<void> AddSwarmService(Node& node);

}  // namespace tenzro::node
