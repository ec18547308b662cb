// tenzro quic: one QUIC connection (ngtcp2 + GnuTLS) on the endpoint's loop.
//
// A Connection owns its ngtcp2_conn, its TLS session, its timer and its
// streams. The Endpoint feeds it the datagrams addressed to its connection
// ids; it writes packets back through the Endpoint's socket (batched), keeps
// the ngtcp2 timer (loss recovery, pacing, idle timeout) armed on the
// io_context, and reports its end to the Endpoint, which then forgets it.
// ngtcp2 never sees a socket or a clock: time is passed in, read from the
// endpoint's clock (EndpointOptions::now_ns, steady_clock unless injected).
//
// Client connections check the server's key against the node id they dial
// (tls.h); server connections learn the client's node id from its key.
// Streams opened by the peer are handed to the Protocol of the negotiated
// ALPN; clients do not accept streams.
//
// Thread-safety: loop thread only. Other threads keep a weak_ptr and post.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <nlohmann/json.hpp>

#include "core/result.h"
#include "quic/peer_key.h"
#include "quic/request_budget.h"
#include "quic/stream.h"
#include "quic/tls.h"

namespace tenzro::quic {

class Endpoint;

// Connection ids this endpoint issues are all this long (short headers do
// not carry a length).
inline constexpr size_t kCidBytes = 16;

// The default clock of ngtcp2: std::chrono::steady_clock in nanoseconds.
uint64_t SteadyClockNs();

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using ReadyFn = std::function<void(Result<void>)>;
  using OpenFn = std::function<void(Result<Stream*>)>;

  // A client connection to `peer` at `remote`, offering `alpn`. Sends the
  // first Initial packet before returning.
  static Result<std::shared_ptr<Connection>> Dial(Endpoint* ep, const PublicKey& peer,
                                                  const boost::asio::ip::udp::endpoint& remote,
                                                  const std::string& alpn);
  // A server connection for the client Initial `hd` from `remote`.
  static Result<std::shared_ptr<Connection>> Accept(Endpoint* ep, const ngtcp2_pkt_hd& hd,
                                                    const boost::asio::ip::udp::endpoint& remote);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool is_server() const { return server_; }
  bool is_open() const { return state_ == State::kOpen; }
  bool is_closed() const { return state_ >= State::kClosing; }
  // The ALPN offered (client) or negotiated (server, once open).
  const std::string& alpn() const { return alpn_; }
  // The peer's node id (hex); the dialed id for clients, "" for a server
  // connection still in its handshake.
  const std::string& peer_id() const { return peer_id_; }
  const boost::asio::ip::udp::endpoint& remote() const { return remote_; }
  size_t stream_count() const { return streams_.size(); }
  // The endpoint's request budget (request_budget.h); outlives the endpoint
  // for charges still held.
  const std::shared_ptr<RequestBudget>& request_budget() const { return budget_; }
  // The peer's IP address ("127.0.0.1", "::1"): what per-IP limits key on.
  std::string remote_ip() const { return remote_.address().to_string(); }
  // State for diagnostics: peer, ALPN, streams, RTT, cwnd, bytes in flight.
  nlohmann::json DebugJson() const;

  // Calls `done` once the handshake finished (Ok) or failed/closed (the
  // error names why); at once if already decided. `done` runs from the loop.
  void WhenReady(ReadyFn done);
  // Opens a bidirectional stream owned by `handler`. Waits while the peer's
  // stream limit is reached. kUnavailable when the connection closes first.
  void OpenStream(std::unique_ptr<StreamHandler> handler, OpenFn done);
  Stream* FindStream(int64_t id);
  // Returns `n` bytes of connection-level flow-control credit for data a
  // handler consumed after its stream was already closed.
  void ExtendConnectionWindow(size_t n);
  // Closes with an application error code (CONNECTION_CLOSE); every stream
  // ends with an error. Idempotent.
  void Close(uint64_t app_code, const std::string& reason);

  // Endpoint side: a datagram for this connection.
  void Receive(const ngtcp2_path& path, std::span<const uint8_t> packet);
  // Writes whatever ngtcp2 has to send now (streams, acks, retransmissions).
  void Flush();
  // Schedules a Flush on the loop (coalesced).
  void ScheduleFlush();

  // ngtcp2 callback entry points (connection.cc).
  struct Callbacks;

 private:
  enum class State { kHandshaking, kOpen, kClosing, kClosed };
  Connection(Endpoint* ep, bool server, const boost::asio::ip::udp::endpoint& remote, std::string alpn);
  Result<void> InitTls(const std::optional<PublicKey>& expected);
  void SetPath();

  // Ends the connection: sends CONNECTION_CLOSE (unless `silent`), fails
  // streams and waiters with `why`, and asks the endpoint to forget it after
  // the closing period.
  void Terminate(const Error& why, const ngtcp2_connection_close_error* ccerr, bool silent);
  void HandleLibError(int rv, std::string_view where);
  // Arms the timer at ngtcp2's expiry, or `soon` from now when that is
  // earlier (a stream paced out: ngtcp2 0.12's expiry leaves out the pacing
  // time, so without it paced data would wait for the next loss timer).
  void UpdateTimer(std::optional<std::chrono::nanoseconds> soon = std::nullopt);
  // How long ngtcp2's pacer holds the next packet after this flush's
  // `bytes` (its own rule: cwnd / smoothed RTT, or the controller's rate).
  std::chrono::nanoseconds PacingDelay(uint64_t bytes) const;
  void OnTimer();
  // Runs deferred work after an ngtcp2 call returned: handshake result,
  // stream closes, writable notifications, pending opens.
  void AfterIo();
  void TryOpenPending();
  Stream* NextToSend();
  // Now on the endpoint's clock (EndpointOptions::now_ns), in nanoseconds.
  uint64_t Now() const { return now_ns_(); }

  // From callbacks.
  int OnHandshakeCompleted();
  int OnStreamOpen(int64_t id);
  int OnStreamData(uint32_t flags, int64_t id, const uint8_t* data, size_t len);
  void OnStreamClose(int64_t id, std::optional<uint64_t> app_code);
  void OnStreamAbortedByPeer(int64_t id, uint64_t code, const char* what);

  Endpoint* ep_;  // null once the endpoint is gone
  std::function<uint64_t()> now_ns_;  // the endpoint's clock (copied: outlives ep_)
  uint64_t last_rx_ns_ = 0;           // when the last datagram of this connection arrived
  std::shared_ptr<RequestBudget> budget_;  // the endpoint's (shared: outlives ep_)
  bool server_;
  boost::asio::ip::udp::endpoint remote_;
  std::string alpn_;
  std::string peer_id_;
  State state_ = State::kHandshaking;
  ngtcp2_conn* conn_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  TlsSessionRef tls_ref_;
  ngtcp2_path_storage path_{};
  std::vector<std::string> cids_;  // ids registered with the endpoint
  boost::asio::steady_timer timer_;
  // When timer_ fires (time_point::max() = not armed). UpdateTimer re-arms
  // only for an earlier deadline: firing early is harmless (OnTimer handles
  // what expired, which may be nothing, and re-arms), and re-arming after
  // every flush cost a timerfd_settime system call each.
  std::chrono::steady_clock::time_point timer_at_ = std::chrono::steady_clock::time_point::max();
  boost::asio::steady_timer close_timer_;
  bool flush_pending_ = false;
  std::optional<Error> failure_;  // why it closed

  std::map<int64_t, std::unique_ptr<Stream>> streams_;
  std::vector<int64_t> send_queue_;  // streams with bytes or FIN to send (round robin)
  size_t send_cursor_ = 0;
  std::vector<std::pair<int64_t, std::optional<uint64_t>>> closed_streams_;  // deferred OnClose
  std::vector<ReadyFn> ready_waiters_;
  bool ready_reported_ = false;
  std::vector<std::pair<std::unique_ptr<StreamHandler>, OpenFn>> pending_opens_;
  friend class Stream;
  friend class Endpoint;
};

}  // namespace tenzro::quic
