// tenzro quic: what an endpoint serves per ALPN.
//
// An Endpoint (endpoint.h) routes every connection by the ALPN its handshake
// settled on; each stream the peer opens on it is given to that ALPN's
// Protocol, which returns the handler that owns the stream. Accept runs on
// the loop thread and must be quick (hand CPU work to a pool).
#pragma once

#include <memory>
#include <string>

#include "quic/stream.h"

namespace tenzro::quic {

class Protocol {
 public:
  virtual ~Protocol() = default;
  // A peer (`peer_node_id`, verified by its TLS key) opened a bidirectional
  // stream. Return its handler, or null to refuse it (reset, kStreamRefused).
  virtual std::unique_ptr<StreamHandler> Accept(const std::string& peer_node_id) = 0;
  // The same, knowing the peer's IP address too (what the connection calls;
  // per-address limits override it). Default: Accept(peer_node_id).
  virtual std::unique_ptr<StreamHandler> AcceptFrom(const std::string& peer_node_id, const std::string& remote_ip) {
    (void)remote_ip;
    return Accept(peer_node_id);
  }
};

}  // namespace tenzro::quic
