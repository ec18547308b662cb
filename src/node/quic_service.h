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
// The client in QuicState is how this node dials others (blob getter, exec
// calls), from any thread but the loop. The endpoint closes its connections
// when the node stops and is destroyed with the state (which the node keeps,
// node/compose.cc).
//
// The swarm advertises `QuicState::advertised` as the "quic" endpoint and the
// dispatcher calls holders through a dispatch::QuicExecutor over the client;
// the node key is the same file for both (DATA_DIR/node.key), so a holder's
// declared node id is the key its QUIC endpoint presents.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "blob/blob_store.h"
#include "core/result.h"
#include "quic/endpoint.h"
#include "quic/quic_client.h"

namespace tenzro::node {

class Node;

// The node's endpoint and client. Destroys the client before the endpoint.
struct QuicState {
  std::unique_ptr<quic::Endpoint> endpoint;
  std::unique_ptr<quic::QuicClient> client;
  std::string advertised;  // "ip:port" peers reach the endpoint at (the advertised host for a wildcard bind)
  ~QuicState();
};

// Binds the endpoint of config().quic serving `store` and exec requests (and
// adds node info and a stop hook); null when QUIC is off. kIo when it cannot
// bind, the identity's errors.
Result<std::shared_ptr<QuicState>> AddQuicService(Node& node, std::shared_ptr<blob::BlobStore> store);

}  // namespace tenzro::node
