#include "quic/exec_executor.h"

#include <spdlog/spdlog.h>

#include "quic/rpc.h"

namespace tenzro::quic {

QuicExecutor::QuicExecutor(QuicClient* client, std::shared_ptr<dispatch::Executor> fallback,
                           HttpEndpointOf http_endpoint_of, std::chrono::milliseconds connect_timeout)
    : client_(client),
      fallback_(std::move(fallback)),
      http_endpoint_of_(std::move(http_endpoint_of)),
      connect_timeout_(connect_timeout) {}

Result<dispatch::ExecResponse> QuicExecutor::Exec(const dispatch::HolderTarget& target,
                                                  const dispatch::ExecRequest& req,
                                                  std::chrono::milliseconds timeout) {
  if (target.transport != dispatch::Transport::kQuic)
    return Error::InvalidArgument("QuicExecutor got a {} target", dispatch::TransportName(target.transport));
  auto t0 = std::chrono::steady_clock::now();
  TENZRO_TRY(net::Endpoint addr, net::ParseEndpoint(target.endpoint));
  PeerAddr peer{target.node_id, addr};
  CallOptions o;
  o.connect_timeout = std::min(timeout, connect_timeout_);
  o.read_timeout = timeout;
  ++quic_calls_;
  Bytes frame = dispatch::EncodeExecRequest(req);
  auto reply = client_->Request(peer, kExecAlpn, frame, o);
  if (reply) {
    auto answer = DecodeReply(std::move(*reply));
    if (!answer) return answer.error().WithContext(fmt::format("exec on {} over QUIC", peer.ToString()));
    return dispatch::DecodeExecResponse(*answer);
  }
  const Error& e = reply.error();
  bool transport = e.code() == ErrorCode::kUnavailable || e.code() == ErrorCode::kDeadlineExceeded;
  std::string url = transport && fallback_ && http_endpoint_of_ ? http_endpoint_of_(target.node_id) : "";
  auto left = timeout - std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  if (url.empty() || left <= std::chrono::milliseconds(0)) return e;
  ++fallbacks_;
  spdlog::warn("exec on {} over QUIC failed ({}); falling back to HTTP {}", peer.ToString(), e.message(), url);
  return fallback_->Exec({target.node_id, dispatch::Transport::kHttp, url}, req, left);
}

}  // namespace tenzro::quic
