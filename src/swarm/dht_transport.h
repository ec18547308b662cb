// tenzro swarm: the OpenDHT discovery transport.
//
// An in-process dht::DhtRunner (its own threads) on UDP `bind_host:port`
// (port 0 = pick one; port() tells which), on tenzro's own DHT network id
// (kTenzroDhtNetwork) so a node never joins or answers a public OpenDHT
// network. Without bootstrap nodes it is a network of one: puts are stored
// locally and gets answer them. Keys are hashed with InfoHash::get(key);
// values are tenzro's signed records (identity/envelope.h) of at most 64 KiB
// with the caller's value id, stored under tenzro's own value type: storing
// nodes refuse anything that is not a validly signed declaration or provider
// record, and let a value id be replaced only by a record of the same signer
// (a holder's refresh replaces its previous declaration; nobody else can).
// Values stay on storing nodes 5 minutes at most; tenzro records carry their
// own, shorter TTL (swarm/declaration_table.h).
//
// Put and Get block the caller until the DHT answers or `op_timeout` passes
// (a put that reached no other node is still stored locally: not an error);
// on a node with bootstrap nodes that knows no peer yet (just started), they
// first wait for one, within the same bound.
// Thread-safe. Nothing here trusts a value: readers verify records.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "swarm/transport.h"

namespace tenzro::swarm {

inline constexpr uint32_t kTenzroDhtNetwork = 0x747a7231;  // "tzr1"
inline constexpr uint16_t kTenzroValueType = 0x747a;        // "tz"

struct DhtOptions {
  std::string bind_host = "127.0.0.1";
  uint16_t port = 0;                          // 0 = pick one
  std::vector<std::string> bootstrap;         // "HOST:PORT"
  std::chrono::milliseconds op_timeout{3000}; // per Put / Get
  // SO_RCVBUF asked for the DHT socket (the kernel caps it at
  // net.core.rmem_max); 0 = the kernel's default (212,992 bytes on Linux).
  // OpenDHT sends a value's parts back to back, so a get of many large
  // values overflows a small buffer (docs/dispatch.md, "Scale": 51-56 % of
  // datagrams lost at the default, 2 % at 4 MiB).
  int receive_buffer_bytes = 4 << 20;
};

// Routing table sizes now, and traffic since Start. Requests are OpenDHT's
// own counts (DhtRunner::getNodeMessageStats: requests this node sent, and
// requests it received, by type; replies and value parts are not requests);
// datagrams and bytes are every UDP datagram and its payload on the runner's
// socket (requests, replies, value parts alike), counted by the socket.
struct DhtStats {
  unsigned good_nodes = 0;
  unsigned dubious_nodes = 0;
  unsigned incoming_nodes = 0;
  enum Request : uint8_t { kPing, kFind, kGet, kListen, kPut, kRequestTypes };
  std::array<uint64_t, kRequestTypes> requests_in{}, requests_out{};
  uint64_t datagrams_in = 0, datagrams_out = 0;
  uint64_t bytes_in = 0, bytes_out = 0;
};

class DhtTransport : public DiscoveryTransport {
 public:
  // Starts the runner and sends the bootstrap requests (not waiting for
  // answers). kInvalidArgument for a malformed bootstrap entry; kUnavailable
  // when the socket cannot be bound.
  static Result<std::unique_ptr<DhtTransport>> Start(const DhtOptions& options);
  ~DhtTransport() override;  // shuts the runner down and joins its threads

  Result<void> Put(const std::string& key, uint64_t value_id, std::string value) override;
  Result<std::vector<std::string>> Get(const std::string& key) override;

  uint16_t port() const;
  // Thread-safe; each call also folds OpenDHT's request counts (which it
  // resets on every read) into this transport's totals.
  DhtStats stats() const;
  // Re-sends the bootstrap requests (e.g. after losing every peer).
  void Rebootstrap();

 private:
  struct Impl;
  explicit DhtTransport(std::unique_ptr<Impl> impl);
  void AwaitPeers();
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenzro::swarm
