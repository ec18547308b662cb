// tenzro quic: the blocking client facade for threads other than the loop.
//
// QuicClient turns the loop-thread Endpoint API into calls a worker thread,
// a CLI command or a test can make and wait on:
//
//   auto client = QuicClient::Start(identity).value();          // own loop thread
//   TENZRO_TRY(Bytes reply, client->Request({node_id, {"127.0.0.1", 4433}},
//                                           "tenzro/moe-exec/1", request));
//
// Request opens a bidirectional stream on the connection to (node id, ALPN)
// — dialed once and reused by every later call until it closes — writes the
// request, finishes its side, and returns everything the peer sends until
// its FIN. OpenStream does the same but hands the response back piece by
// piece (StreamReader), with flow control: the peer can only run ahead of
// the reader by the stream window.
//
// Errors: kInvalidArgument (bad node id/address), kPermissionDenied (the
// peer is not that node), kUnavailable (handshake failed, wrong ALPN,
// connection or stream reset, peer unreachable), kDeadlineExceeded (connect
// or read timeout), kResourceExhausted (response over max_response_bytes).
// Thread-safety: every method may be called from any thread except the loop
// thread of the endpoint (that would deadlock; it returns kInternal).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "core/bytes.h"
#include "core/cancel.h"
#include "core/result.h"
#include "net/url.h"
#include "quic/endpoint.h"

namespace tenzro::quic {

// A peer: who (node id, 64 hex) and where (ip:port of its QUIC endpoint).
struct PeerAddr {
  std::string node_id;
  net::Endpoint addr;
  std::string ToString() const { return node_id.substr(0, 12) + "@" + addr.HostPort(); }
};

struct CallOptions {
  std::chrono::milliseconds connect_timeout{10000};  // dial + handshake + stream open
  std::chrono::milliseconds read_timeout{30000};     // each wait for response bytes
  // The whole call, from the dial to the response's last byte; 0 = none. A
  // peer that keeps sending a byte now and then (never idle long enough for
  // read_timeout) still ends here: kDeadlineExceeded naming the deadline.
  std::chrono::milliseconds total_timeout{0};
  uint64_t max_response_bytes = 256ull << 20;        // Request() only
  // When given and cancelled, the call ends at once (kUnavailable,
  // "cancelled") and its stream is reset. Must outlive the call.
  CancelToken* cancel = nullptr;
};

struct StreamChannel;  // shared by a StreamReader and its loop-side handler

// The response side of one stream. Destroying it before the end resets the
// stream (the peer stops sending).
class StreamReader {
 public:
  // `deadline`: the call's total deadline (time_point::max() = none).
  StreamReader(std::shared_ptr<StreamChannel> ch, std::chrono::milliseconds read_timeout,
               std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
  ~StreamReader();
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;
  // The next bytes of the response; an empty result means the peer finished.
  Result<Bytes> Next();
  uint64_t bytes_read() const { return read_; }

 private:
  std::shared_ptr<StreamChannel> ch_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point deadline_;
  uint64_t read_ = 0;
  bool done_ = false;
};

class QuicClient {
 public:
  // A client with its own endpoint (bound to `bind`) and loop thread.
  static Result<std::unique_ptr<QuicClient>> Start(const identity::Identity& identity,
                                                   const net::Endpoint& bind = {"127.0.0.1", 0},
                                                   EndpointOptions options = {});
  // A client over `endpoint`, whose loop runs on another thread (a node's).
  // REQUIRES: `endpoint` outlives the client.
  explicit QuicClient(Endpoint& endpoint);
  ~QuicClient();
  QuicClient(const QuicClient&) = delete;
  QuicClient& operator=(const QuicClient&) = delete;

  Result<Bytes> Request(const PeerAddr& peer, const std::string& alpn, ByteSpan request,
                        const CallOptions& options = {});
  Result<std::unique_ptr<StreamReader>> OpenStream(const PeerAddr& peer, const std::string& alpn, Bytes request,
                                                   const CallOptions& options = {});
  // Runs `fn` on the loop thread and waits for it (stats, tests).
  void RunOnLoop(const std::function<void(Endpoint&)>& fn);

  Endpoint& endpoint() { return *endpoint_; }
  const std::string& node_id() const { return endpoint_->node_id(); }

 private:
  QuicClient() = default;
  std::unique_ptr<boost::asio::io_context> own_io_;  // standalone mode
  std::unique_ptr<Endpoint> own_endpoint_;
  std::thread thread_;
  Endpoint* endpoint_ = nullptr;
};

}  // namespace tenzro::quic
