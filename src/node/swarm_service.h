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
// A model's shape (layers x experts) comes from ShapeFor only: the catalog,
// the built-in table or the node's data dir — never from declarations, so a
// stranger's declaration cannot size the map. A model without a known shape
// has no shard map (404 naming the model), and no DHT read is made for it.
//
// Admin routes:
//   GET  /v1/swarm/info                          node id, endpoints, DHT peers, stats
//   GET  /v1/swarm/declarations?model=M          live verified declaration parts
//   (these two and rebalance add M to the agent's watched models: the
//   dashboard then shows its map from the agent's snapshot)
//   GET  /v1/swarm/shard-map?model=M[&min_providers=N][&hot_tps=X][&format=svg]
//   GET  /v1/swarm/providers?hash=H              provider records of a blob
//   POST /v1/swarm/publish                       publish now
//   POST /v1/moe/rebalance {"model", "apply"?, "min_providers"?, "hot_tps"?}
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "catalog/catalog.h"
#include "core/result.h"
#include "manifest/manifest_trust.h"
#include "holder/expert_runtime.h"
#include "swarm/agent.h"
#include "swarm/dht_transport.h"
#include "transfer/provider_fetch.h"

namespace tenzro::node {

class Node;

// The node's presence in the swarm: its DHT transport, its agent (which
// publishes what `runtime` holds) and the round trips it measured to blob
// providers.
struct SwarmState {
  std::shared_ptr<swarm::DhtTransport> dht;
  std::shared_ptr<swarm::SwarmAgent> agent;
  std::shared_ptr<holder::ExpertRuntime> runtime;
  std::shared_ptr<manifest::TrustStore> trust;  // the node's trusted manifests (shapes); may be null
  std::mutex rtt_mu;
  // Peer URL -> (ms, measured at unix ms); rtt_mu. URLs come from provider
  // records: at most kMaxRtt entries (older ones are dropped past it).
  static constexpr size_t kMaxRtt = 1024;
  std::map<std::string, std::pair<double, int64_t>> rtt;
  // Snapshot shard maps (SnapshotShardMapJson), one per watched model; map_mu.
  struct CachedMap {
    uint64_t generation = 0;
    std::shared_ptr<const std::string> json;  // null: `error` (no shape)
    std::optional<Error> error;
  };
  std::mutex map_mu;
  std::map<std::string, CachedMap> maps;
};

// Where the shape of `model` (a normalized id) comes from:
// catalog::ResolveShape (the node's catalog, then the built-in table), else a
// trusted manifest of the model that carries one (`trust`, may be null).
// kNotFound naming the model when no source knows it. Reads the catalog
// file; no network I/O.
Result<catalog::ResolvedShape> ShapeFor(Node& node, const manifest::TrustStore* trust, const std::string& model);

// The shard map JSON of `model` (min_providers 2, hot_tps 10, plus
// "shape_source" and "read_ms") built from the agent's snapshot, without any
// DHT I/O; rebuilt only when the snapshot changed. kNotFound "unknown
// model" when the agent does not watch `model` or ShapeFor does not know it;
// kUnavailable while its first read is pending or when the last one failed
// and nothing is known. Any thread.
Result<std::shared_ptr<const std::string>> SnapshotShardMapJson(Node& node, SwarmState& st, const std::string& model);

// Starts the DHT and the agent (not yet publishing: AddSwarmService starts
// it), advertising this node's HTTP endpoint and `quic_address` when set;
// `screen` (may be null) filters every live declaration the agent returns
// (swarm::AgentOptions::screen). kUnavailable when the DHT cannot start; the
// identity's errors.
Result<std::shared_ptr<SwarmState>> StartSwarm(Node& node, std::shared_ptr<holder::ExpertRuntime> runtime,
                                               const std::optional<std::string>& quic_address,
                                               std::function<void(swarm::Declaration&)> screen = nullptr);

// The providers of a blob (swarm provider records) as fetch sources, each
// record's HTTP and QUIC endpoints, ranked by transfer::RankSources: HTTP
// endpoints by measured round trip (a bounded parallel probe, cached 30 s),
// then the rest. Empty when none or the lookup fails.
std::vector<transfer::BlobSource> BlobProviderSources(SwarmState& st, const std::string& blob_hash);

// The routes above, metrics, node info, the "leaving" announcement at stop;
// starts the agent.
Result<void> AddSwarmService(Node& node, std::shared_ptr<SwarmState> st);

}  // namespace tenzro::node
