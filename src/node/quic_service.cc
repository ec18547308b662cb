#include "node/quic_service.h"


#include <spdlog/spdlog.h>

#include "identity/identity.h"
#include "net/json_http.h"
#include "net/rate_limit.h"
#include "node/node.h"
#include "quic/iroh_blobs.h"
#include "quic/rpc.h"

namespace tenzro::node {
namespace {

constexpr const char* kExecPath = "/v1/moe/exec";
constexpr const char* kExecContentType = "application/x-tenzro-exec";

bool IsWildcard(const std::string& host) { return host == "0.0.0.0" || host == "::" || host.empty(); }

// Runs one exec request through the HTTP route (loop thread). The peer's
// rate was checked when its stream opened (ExecAdmission).
void DispatchExec(Node* node, const std::string& peer, Bytes request, quic::Reply reply) {
  auto req = std::make_shared<net::Request>();
  req->method = "POST";
  req->target = req->path = kExecPath;
  req->headers = {{"content-type", kExecContentType}, {"x-tenzro-peer", peer}};
  req->body.assign(request.begin(), request.end());
  req->remote = "quic:" + peer.substr(0, 16);
  // An exec frame is the answer whatever the status (error frames carry
  // their own error, as over HTTP); anything else (no route, 413, ...) is
  // turned back into its error.
  net::Responder responder([reply](net::Response r) {
    if (r.producer) return reply(Error::Unsupported("POST {} answered with a streamed body", kExecPath));
    if (r.content_type == kExecContentType || (r.status >= 200 && r.status <= 299))
      return reply(Bytes(r.body.begin(), r.body.end()));
    reply(net::ErrorFromHttp(r.status, r.body));
  });
  node->public_router().Dispatch(std::move(req), std::move(responder));
}

// One token from the peer's bucket (by node id: a QUIC peer may share its
// address with others) and one from its address's network prefix (new keys
// are free, the prefix is not; net/rate_limit.h).
bool AllowPeer(Node* node, const std::string& peer_node_id, const std::string& remote_ip) {
  return node->peer_limiter().AllowWithPrefix("node:" + peer_node_id,
                                              remote_ip.empty() ? "" : "net:" + net::IpPrefix(remote_ip));
}

// An exec stream over the peer's rate gets an error reply (its request
// bytes are dropped as they arrive, never buffered).
std::optional<Error> ExecAdmission(Node* node, const std::string& peer, const std::string& remote_ip) {
  if (AllowPeer(node, peer, remote_ip)) return std::nullopt;
  return Error::ResourceExhausted("peer {} (from {}) is over its request rate ({:g} per second, burst {}, "
                                  "x{:g} per address prefix); retry later",
                                  peer.substr(0, 12), remote_ip, node->config().peer_rate, node->config().peer_burst,
                                  node->config().peer_prefix_multiple);
}

// A protocol whose streams count against the opening peer's rate limit:
// over it, the stream is refused (reset) before anything is read.
class RateLimitedProtocol : public quic::Protocol {
 public:
  RateLimitedProtocol(std::shared_ptr<quic::Protocol> inner, Node* node) : inner_(std::move(inner)), node_(node) {}
  std::unique_ptr<quic::StreamHandler> Accept(const std::string& peer_node_id) override {
    return AcceptFrom(peer_node_id, "");
  }
  std::unique_ptr<quic::StreamHandler> AcceptFrom(const std::string& peer_node_id,
                                                  const std::string& remote_ip) override {
    if (!AllowPeer(node_, peer_node_id, remote_ip)) return nullptr;
    return inner_->AcceptFrom(peer_node_id, remote_ip);
  }

 private:
  std::shared_ptr<quic::Protocol> inner_;
  Node* node_;
};

}  // namespace

QuicState::~QuicState() {
  client.reset();
  endpoint.reset();
}

Result<std::shared_ptr<QuicState>> AddQuicService(Node& node, std::shared_ptr<blob::BlobStore> store) {
  const NodeConfig& cfg = node.config();
  if (cfg.quic.empty()) {
    spdlog::info("quic: disabled (--quic off)");
    return std::shared_ptr<QuicState>();
  }
  TENZRO_TRY(net::Endpoint bind, net::ParseEndpoint(cfg.quic));
  TENZRO_TRY(identity::Identity id, identity::LoadOrCreateIdentity(cfg.data_dir));
  auto st = std::make_shared<QuicState>();
  quic::EndpointOptions opts;
  // The same admission caps as the HTTP listeners (docs/security.md).
  opts.max_connections = cfg.max_connections;
  opts.max_connections_per_ip = cfg.max_connections_per_ip;
  // Request bytes held at once (quic/request_budget.h), as the HTTP
  // listeners' --max-inflight-body-bytes.
  opts.max_inflight_request_bytes = cfg.quic_inflight_bytes;
  opts.max_inflight_request_bytes_per_ip = cfg.quic_inflight_bytes_per_ip;
  TENZRO_TRY(st->endpoint, quic::Endpoint::Create(node.io(), id, bind, opts));
  quic::Endpoint& ep = *st->endpoint;
  ep.AddProtocol(quic::kIrohBlobsAlpn, std::make_shared<RateLimitedProtocol>(
                                          quic::MakeBlobsProvider(node.io(), store, &node.pool()), &node));
  quic::RpcOptions rpc;
  rpc.max_request_bytes = cfg.max_body_bytes;
  Node* n = &node;
  rpc.admit = [n](const std::string& peer, const std::string& ip) { return ExecAdmission(n, peer, ip); };
  ep.AddProtocol(quic::kExecAlpn,
                 quic::MakeRpcProtocol(node.io(), [n](const std::string& peer, Bytes req, quic::Reply reply) {
                   DispatchExec(n, peer, std::move(req), std::move(reply));
                 }, rpc));
  st->client = std::make_unique<quic::QuicClient>(ep);
  net::Endpoint local = ep.local_endpoint();
  // --advertise names the host peers reach this node at, as for the http
  // endpoint (e.g. a relay in front of it), whatever the bind host.
  if (!cfg.advertise.empty()) {
    local.host = cfg.advertise;
  } else if (IsWildcard(local.host)) {
    std::string host = node.http_endpoint().host;
    if (IsWildcard(host)) host = "127.0.0.1";
    local.host = host;
  }
  st->advertised = local.HostPort();
  // The info callbacks own the state: it dies with the node, before the
  // node's io_context.
  std::string node_id = id.node_id();
  node.AddInfo("node_id", [node_id, st] { return nlohmann::json(node_id); });
  node.AddInfo("quic", [st] {
    return nlohmann::json{{"address", st->advertised}, {"alpns", st->endpoint->alpns()}};
  });
  // The request budget (read under its own lock: any thread).
  std::shared_ptr<quic::RequestBudget> budget = ep.request_budget();
  node.AddMetrics([budget](std::string& out) {
    const quic::RequestBudget::Stats b = budget->stats();
    out += fmt::format(
        "# HELP tenzro_quic_inflight_request_bytes QUIC request bytes held now (buffered or being handled).\n"
        "# TYPE tenzro_quic_inflight_request_bytes gauge\ntenzro_quic_inflight_request_bytes {}\n"
        "# HELP tenzro_quic_inflight_request_peak_bytes The most QUIC request bytes held at once.\n"
        "# TYPE tenzro_quic_inflight_request_peak_bytes gauge\ntenzro_quic_inflight_request_peak_bytes {}\n"
        "# HELP tenzro_quic_requests_refused_total QUIC request streams reset (busy) because their bytes would pass "
        "--quic-max-inflight-bytes (total) or --quic-max-inflight-bytes-per-ip (per_ip).\n"
        "# TYPE tenzro_quic_requests_refused_total counter\n"
        "tenzro_quic_requests_refused_total{{limit=\"total\"}} {}\n"
        "tenzro_quic_requests_refused_total{{limit=\"per_ip\"}} {}\n",
        b.in_flight, b.peak, b.refused, b.refused_per_ip);
  });
  node.OnStop([st] { st->endpoint->Shutdown(); });  // CONNECTION_CLOSE to every peer
  spdlog::info("quic: node {} on udp {} (ALPNs {}, {})", node_id, st->advertised, quic::kIrohBlobsAlpn,
               quic::kExecAlpn);
  return st;
}

}  // namespace tenzro::node
