#include "dispatch/quic_executor.h"

#include <spdlog/spdlog.h>

#include "quic/rpc.h"

namespace tenzro::dispatch {

QuicExecutor::QuicExecutor(quic::QuicClient* client, std::shared_ptr<Executor> fallback,
                           HttpEndpointOf http_endpoint_of, std::chrono::milliseconds connect_timeout)
    : client_(client),
      fallback_(std::move(fallback)),
      http_endpoint_of_(std::move(http_endpoint_of)),
      connect_timeout_(connect_timeout) {}

Result<ExecResponse> QuicExecutor::Exec(const HolderTarget& target, const ExecRequest& req,
                                        std::chrono::milliseconds timeout) {
  return Run(target, req, timeout, nullptr);
}

Result<ExecResponse> QuicExecutor::ExecCancellable(const HolderTarget& target, const ExecRequest& req,
                                                   std::chrono::milliseconds timeout, CancelToken& cancel) {
  return Run(target, req, timeout, &cancel);
}

Result<ExecResponse> QuicExecutor::Run(const HolderTarget& target, const ExecRequest& req,
                                       std::chrono::milliseconds timeout, CancelToken* cancel) {
  if (target.transport != Transport::kQuic)
    return Error::InvalidArgument("QuicExecutor got a {} target", TransportName(target.transport));
  auto t0 = std::chrono::steady_clock::now();
  TENZRO_TRY(net::Endpoint addr, net::ParseEndpoint(target.endpoint));
  quic::PeerAddr peer{target.node_id, addr};
  quic::CallOptions o;
  o.connect_timeout = std::min(timeout, connect_timeout_);
  o.read_timeout = timeout;
  // A holder that drips its answer still ends at the call's deadline, and
  // one that sends more than the request can produce is cut off.
  o.total_timeout = timeout;
  o.max_response_bytes = ExecResponseBoundBytes(req) + (64u << 10);  // + an RPC error reply's message
  o.cancel = cancel;
  ++quic_calls_;
  Bytes frame = EncodeExecRequest(req);
  auto reply = client_->Request(peer, quic::kExecAlpn, frame, o);
  if (reply) {
    auto answer = quic::DecodeReply(std::move(*reply));
    if (!answer) return answer.error().WithContext(fmt::format("exec on {} over QUIC", peer.ToString()));
    return DecodeExecResponse(*answer);
  }
  const Error& e = reply.error();
  bool transport = e.code() == ErrorCode::kUnavailable || e.code() == ErrorCode::kDeadlineExceeded;
  std::string url = transport && fallback_ && http_endpoint_of_ ? http_endpoint_of_(target.node_id) : "";
  auto left = timeout - std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  if (url.empty() || left <= std::chrono::milliseconds(0) || (cancel && cancel->cancelled())) return e;
  ++fallbacks_;
  spdlog::warn("exec on {} over QUIC failed ({}); falling back to HTTP {}", peer.ToString(), e.message(), url);
  return fallback_->Exec({target.node_id, Transport::kHttp, url}, req, left);
}

}  // namespace tenzro::dispatch
