// tenzro quic: an iroh-compatible QUIC endpoint on one Asio UDP socket.
//
// One Endpoint per node: it owns the UDP socket (bound on the node's
// io_context), the node's TLS identity (Ed25519 raw public key = node id,
// tls.h), the map connection id -> Connection for every connection it
// accepted or dialed, and the protocols it serves by ALPN (protocol.h).
// Direct connections only: no relays, no hole punching, no multipath
// (iroh's optional transport parameters for those are ignored).
//
//   auto ep = Endpoint::Create(io, identity, {"127.0.0.1", 0}).value();
//   ep->AddProtocol("tenzro/moe-exec/1", protocol);        // before peers dial
//   ep->Connect(node_id, {"127.0.0.1", 4433}, "/iroh-bytes/4", [](auto conn) {...});
//
// Dialed connections are kept and reused per (node id, ALPN) until they
// close (idle timeout, error, peer close). Incoming datagrams are read in
// batches (recvmmsg, coalesced by UDP_GRO) and packets are sent in batches
// (sendmmsg, equal-sized runs as one UDP_SEGMENT send). Datagrams
// that are not QUIC, not for a known connection and not a valid client
// Initial are dropped and counted; so are Initials beyond max_connections.
// Request bytes the protocols buffer are charged to one budget shared by
// every connection (request_budget.h; max_inflight_request_bytes, and per
// remote IP): a stream past it is reset (kStreamBusy), counted in stats().
//
// Thread-safety: loop thread only (the thread running the io_context), except
// Create before the loop runs. QuicClient (quic_client.h) is the facade for other
// threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <nlohmann/json.hpp>

#include "core/result.h"
#include "identity/identity.h"
#include "net/url.h"
#include "quic/connection.h"
#include "quic/protocol.h"
#include "quic/request_budget.h"
#include "quic/tls.h"

namespace tenzro::quic {

struct EndpointOptions {
  std::chrono::milliseconds idle_timeout{30000};       // transport parameter max_idle_timeout
  std::chrono::milliseconds handshake_timeout{10000};
  // Connections this endpoint dials send a PING after this long without
  // traffic (0 = never): a connection to a holder in use stays open past
  // idle_timeout, and the peer answers at least an ACK this often.
  std::chrono::milliseconds keep_alive{500};
  // A dialed connection with keep_alive that receives nothing for this long
  // is ended as kUnavailable (EndpointStats::peers_silent): the peer's
  // process or host stopped (frozen, or gone without an ICMP error). Its
  // calls fail then instead of at their own deadline. 0 = never.
  std::chrono::milliseconds dead_after{2000};
  size_t max_connections = 1024;                       // accepted (server) connections at once
  size_t max_connections_per_ip = 64;                  // of those, from one IP address
  uint64_t max_streams_bidi = 128;                     // concurrent streams a peer may open to us
  uint64_t stream_window = 1u << 20;                   // initial receive window per stream
  uint64_t connection_window = 16u << 20;              // initial receive window per connection
  uint64_t max_stream_window = 16u << 20;              // auto-tuning limits
  uint64_t max_connection_window = 64u << 20;
  int socket_buffer_bytes = 8 << 20;                   // SO_SNDBUF / SO_RCVBUF asked for
  // Segmentation offload: a batch of equal-sized packets to one peer leaves
  // in one sendmmsg entry with UDP_SEGMENT (GSO), and the socket takes
  // coalesced datagrams with UDP_GRO (split back into packets here). The
  // kernel cuts them into ordinary datagrams on the wire; where it cannot
  // (an old kernel, a device without checksum offload) the endpoint falls
  // back to one datagram per packet by itself (EndpointStats::gso).
  bool segmentation_offload = true;
  // Request bytes buffered or being handled, all connections and protocols
  // together, and from one remote IP address (request_budget.h); a stream
  // whose bytes would pass either is reset (kStreamBusy). 0 = unlimited.
  uint64_t max_inflight_request_bytes = 256ull << 20;
  uint64_t max_inflight_request_bytes_per_ip = 64ull << 20;
  // ngtcp2's clock (monotonic nanoseconds) for every connection of the
  // endpoint: loss detection, pacing, idle and handshake timeouts are
  // computed from it. Empty = SteadyClockNs (connection.h). Tests inject a
  // fake one; it is called on the loop thread only.
  std::function<uint64_t()> now_ns;
};

struct EndpointStats {
  uint64_t datagrams_in = 0, datagrams_out = 0, bytes_in = 0, bytes_out = 0;
  uint64_t dropped = 0;               // not QUIC / unknown connection / over a limit
  uint64_t refused_per_ip = 0;        // of those: Initials from an IP at max_connections_per_ip
  uint64_t version_negotiations = 0;
  uint64_t accepted = 0, dialed = 0;  // connections created
  uint64_t handshake_failures = 0;
  uint64_t streams_refused = 0;
  // The request budget (request_budget.h): bytes charged now, the most ever,
  // and streams refused by the total / by one IP's share.
  uint64_t inflight_request_bytes = 0, inflight_request_peak = 0;
  uint64_t requests_refused_budget = 0, requests_refused_budget_per_ip = 0;
  uint64_t send_blocked = 0;          // sendmmsg would block: packets queued
  uint64_t send_calls = 0;            // sendmmsg/sendto system calls
  uint64_t gso_sends = 0;             // sendmmsg entries that carried several packets (UDP_SEGMENT)
  uint64_t gro_receives = 0;          // datagrams received coalesced (UDP_GRO), split here
  bool gso = false;                   // segmentation offload in use now
  uint64_t peers_unreachable = 0;     // ICMP unreachable errors that ended connections
  uint64_t peers_silent = 0;          // dialed connections ended after dead_after of silence
};

class Endpoint {
 public:
  // Binds `bind` (an IP literal or "localhost"; port 0 picks one).
  // kInvalidArgument for a host that is not an IP; kIo when bind fails.
  static Result<std::unique_ptr<Endpoint>> Create(boost::asio::io_context& io, const identity::Identity& identity,
                                                  const net::Endpoint& bind, EndpointOptions options = {});
  // Closes every connection (CONNECTION_CLOSE, best effort) and the socket.
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Serves `alpn` with `protocol`. Call before peers connect (a connection's
  // ALPN set is fixed at its handshake).
  void AddProtocol(const std::string& alpn, std::shared_ptr<Protocol> protocol);
  std::vector<std::string> alpns() const;
  Protocol* FindProtocol(const std::string& alpn) const;

  using ConnectFn = std::function<void(Result<std::shared_ptr<Connection>>)>;
  // Calls `done` (from the loop) with an open connection to `node_id` at
  // `addr` speaking `alpn`: the cached one, or a new one after its
  // handshake. kInvalidArgument for a malformed id or address;
  // kPermissionDenied when the peer's key is not `node_id`; kUnavailable
  // when the handshake fails or times out (the error names the reason).
  void Connect(const std::string& node_id, const net::Endpoint& addr, const std::string& alpn, ConnectFn done);

  // Closes every connection and stops reading; the socket stays bound until
  // destruction. Idempotent.
  void Shutdown();

  net::Endpoint local_endpoint() const;
  const std::string& node_id() const { return node_id_; }
  boost::asio::io_context& io() { return io_; }
  const EndpointOptions& options() const { return options_; }
  // A snapshot (the budget's fields read now).
  EndpointStats stats() const;
  // Loop thread (Connection): a connection ended after dead_after.
  void CountSilentPeer() { ++stats_.peers_silent; }
  const std::shared_ptr<RequestBudget>& request_budget() const { return budget_; }
  size_t connection_count() const { return conns_.size(); }
  // {"node_id", "address", "alpns", "connections", counters...}
  nlohmann::json StatsJson() const;

 private:
  friend class Connection;
  Endpoint(boost::asio::io_context& io, EndpointOptions options);
  void StartRead();
  void OnReadable();
  // Reads the socket's error queue (IP_RECVERR / IPV6_RECVERR): an ICMP
  // "port / host / address unreachable" for a datagram this endpoint sent
  // ends every connection to that address at once (kUnavailable), so a
  // killed peer costs a round trip, not a deadline.
  void DrainErrors();
  void Dispatch(std::span<const uint8_t> data, const boost::asio::ip::udp::endpoint& from);
  void SendVersionNegotiation(const ngtcp2_version_cid& vc, const boost::asio::ip::udp::endpoint& to);
  // Connection side.
  void Send(const boost::asio::ip::udp::endpoint& to, std::span<const std::span<const uint8_t>> packets);
  void FlushPendingTx();
  void Associate(const std::string& cid, Connection* c) { cids_[cid] = c; }
  void Dissociate(const std::string& cid) { cids_.erase(cid); }
  // Forgets `c` (posted: never destroys a connection inside its own call).
  void Remove(Connection* c);
  const TlsContext& tls() const { return *tls_; }
  const std::array<uint8_t, 32>& reset_secret() const { return reset_secret_; }
  const ngtcp2_addr local_addr() const;

  boost::asio::io_context& io_;
  EndpointOptions options_;
  std::string node_id_;
  std::shared_ptr<TlsContext> tls_;
  std::array<uint8_t, 32> reset_secret_{};
  struct Socket;  // the Asio socket and the batch buffers
  std::unique_ptr<Socket> sock_;
  std::shared_ptr<bool> alive_;  // handlers hold a weak_ptr: false/expired once destroyed
  bool shut_down_ = false;
  std::map<std::string, std::shared_ptr<Protocol>> protocols_;
  std::unordered_map<Connection*, std::shared_ptr<Connection>> conns_;
  std::unordered_map<std::string, Connection*> cids_;
  std::map<std::string, std::weak_ptr<Connection>> dialed_;  // node id + '\n' + alpn
  size_t server_conns_ = 0;
  std::map<std::string, size_t> conns_per_ip_;            // accepted connections by remote IP
  std::map<const Connection*, std::string> accepted_ip_;  // the IP each accepted connection came from
  EndpointStats stats_;
  std::shared_ptr<RequestBudget> budget_;  // shared with connections and pending replies
};

}  // namespace tenzro::quic
