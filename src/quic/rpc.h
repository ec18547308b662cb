// tenzro quic: request/response protocols on one stream each (e.g. expert
// execution on ALPN "tenzro/moe-exec/1"). Wire format: docs/formats/quic.md.
//
// The client opens a bidirectional stream, writes the request bytes and
// finishes its side; the server answers with one reply and finishes:
//   reply = status u8 || payload
// status 0: payload is the response bytes; otherwise status is the
// tenzro ErrorCode (core/error.h) and payload the UTF-8 error message.
// A request over max_request_bytes is refused by resetting the stream
// (kStreamTooLarge) without reading the rest; the connection stays up. So is
// one whose bytes would pass the endpoint's request budget
// (request_budget.h; reset kStreamBusy, at once, nothing more buffered). A
// request's bytes stay charged to that budget until the handler replies.
// RpcOptions::admit runs when a stream opens (before any byte is read): its
// error is the reply, sent once the request ended, whose bytes are dropped
// as they arrive (rate limits answer this way).
//
// Server side: MakeRpcProtocol wraps an RpcHandler. The handler is called on
// the loop thread with the whole request and must return at once, handing
// CPU work to a pool; it answers by calling `reply` exactly once, from any
// thread (dropping it unanswered replies kInternal). Client side: CallRpc.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>

#include "core/bytes.h"
#include "core/result.h"
#include "quic/protocol.h"
#include "quic/quic_client.h"

namespace tenzro::quic {

// Expert execution: the bytes of POST /v1/moe/exec (dispatch/exec_frame.h).
inline constexpr const char* kExecAlpn = "tenzro/moe-exec/1";

using Reply = std::function<void(Result<Bytes>)>;
using RpcHandler = std::function<void(const std::string& peer_node_id, Bytes request, Reply reply)>;

struct RpcOptions {
  uint64_t max_request_bytes = 256ull << 20;
  // Called on the loop thread for each stream a peer opens (its node id and
  // IP address); an error refuses the request with that error reply. Empty =
  // admit all.
  std::function<std::optional<Error>(const std::string& peer_node_id, const std::string& remote_ip)> admit;
};

// REQUIRES: `io` is the endpoint's loop (replies are posted to it).
std::shared_ptr<Protocol> MakeRpcProtocol(boost::asio::io_context& io, RpcHandler handler, RpcOptions options = {});

// Reply framing.
Bytes EncodeReply(const Result<Bytes>& r);
// kCorruption for an empty reply or an unknown status; the sender's error
// (code and message) for a failure reply.
Result<Bytes> DecodeReply(Bytes reply);

// One call: QuicClient::Request + DecodeReply. Peer-side errors come back
// with their code, prefixed by the peer.
Result<Bytes> CallRpc(QuicClient& client, const PeerAddr& peer, const std::string& alpn, ByteSpan request,
                      const CallOptions& options = {});

}  // namespace tenzro::quic
