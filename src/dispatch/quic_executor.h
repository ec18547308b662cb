// tenzro dispatch: the QUIC transport of the distributed forward.
//
// QuicExecutor is the Executor (executor.h) for holders that advertise a
// "quic" endpoint: it sends the exec request frame on ALPN tenzro/moe-exec/1
// (quic/rpc.h) to (node id, ip:port) — one reused connection per holder,
// one stream per call — and decodes the answer frame. When the QUIC call
// itself fails (unreachable, handshake or stream failure, timeout) and the
// holder has an HTTP endpoint (`http_endpoint_of`), the call is retried on
// `fallback` (the HttpExecutor) within the same timeout; a wrong node key
// (kPermissionDenied) is never retried. Errors the holder answered with come
// back as they are, like HTTP's.
//
// Plugs into the Dispatcher as its `quic` executor (node wiring:
// node/dispatch_service.cc passes one built over NodeQuicClient).
// Thread-safety: Exec may be called from several threads at once (never the
// endpoint's loop thread).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "dispatch/executor.h"
#include "quic/quic_client.h"

namespace tenzro::dispatch {

class QuicExecutor : public Executor {
 public:
  // The holder's HTTP URL for a node id, or "" when unknown.
  using HttpEndpointOf = std::function<std::string(const std::string& node_id)>;

  // REQUIRES: `client` outlives the executor.
  QuicExecutor(quic::QuicClient* client, std::shared_ptr<Executor> fallback = nullptr,
               HttpEndpointOf http_endpoint_of = nullptr,
               std::chrono::milliseconds connect_timeout = std::chrono::milliseconds(2000));

  Result<ExecResponse> Exec(const HolderTarget& target, const ExecRequest& req,
                            std::chrono::milliseconds timeout) override;
  // Resets the call's stream when `cancel` fires (no HTTP fallback then).
  Result<ExecResponse> ExecCancellable(const HolderTarget& target, const ExecRequest& req,
                                       std::chrono::milliseconds timeout, CancelToken& cancel) override;

  uint64_t quic_calls() const { return quic_calls_; }
  uint64_t fallbacks() const { return fallbacks_; }

 private:
  quic::QuicClient* client_;
  std::shared_ptr<Executor> fallback_;
  HttpEndpointOf http_endpoint_of_;
  std::chrono::milliseconds connect_timeout_;
  Result<ExecResponse> Run(const HolderTarget& target, const ExecRequest& req, std::chrono::milliseconds timeout,
                           CancelToken* cancel);
  std::atomic<uint64_t> quic_calls_{0}, fallbacks_{0};
};

}  // namespace tenzro::dispatch
