// tenzro node: the node's QUIC endpoint (docs/formats/quic.md).
//
// `tenzro node run --quic HOST:PORT` (default 127.0.0.1:0; "off" disables)
// binds one iroh-compatible endpoint on the node's event loop, identified by
// the node key (DATA_DIR/node.key, node id = public key), serving:
//   /iroh-bytes/4       iroh-blobs provider over the node's blob store
//   tenzro/moe-exec/1   expert execution: each request is dispatched through
//                       the public route POST /v1/moe/exec (same bytes, same
//                       answers as HTTP; an HTTP error becomes an error reply)
// Request CPU work runs on the node's worker pool. node.json and
// GET /v1/node/info gain "node_id" and "quic": {"address", "alpns"}.
// NodeQuicClient is how this node dials others (blob getter, exec calls),
// from any thread but the loop. The endpoint closes its connections when the
// node stops and is destroyed with the node.
//
// Plugging into the swarm and the forward (their services own those files):
//   swarm_service.cc:    if (auto q = NodeQuicAddress(node)) eps.push_back({"quic", *q});
//   dispatch_service.cc: auto http = std::make_shared<dispatch::HttpExecutor>();
//                        auto quic = NodeQuicClient(node) ? std::make_shared<dispatch::QuicExecutor>(
//                            NodeQuicClient(node), http, /*node id -> its "http" endpoint*/ ...) : nullptr;
//                        Dispatcher(s, local, http, quic)   // the planner then prefers QUIC
// The node key is the same file for both (DATA_DIR/node.key), so a holder's
// declared node id is the key its QUIC endpoint presents.
#pragma once

#include <optional>
#include <string>

#include "core/result.h"
#include "quic/quic_client.h"

namespace tenzro::node {

class Node;

Result<void> AddQuicService(Node& node);

// The node's client over its endpoint, or null when QUIC is off (or before
// AddQuicService ran). Valid while the node lives.
quic::QuicClient* NodeQuicClient(Node& node);
// "ip:port" peers reach this node's endpoint at (the advertised host when
// bound to a wildcard address); nullopt when QUIC is off.
std::optional<std::string> NodeQuicAddress(Node& node);

}  // namespace tenzro::node
