#include "node/quic_service.h"


#include <spdlog/spdlog.h>

#include "identity/identity.h"
#include "net/json_http.h"
#include "node/node.h"
#include "quic/iroh_blobs.h"
#include "quic/rpc.h"

namespace tenzro::node {
namespace {

constexpr const char* kExecPath = "/v1/moe/exec";
constexpr const char* kExecContentType = "application/x-tenzro-exec";

bool IsWildcard(const std::string& host) { return host == "0.0.0.0" || host == "::" || host.empty(); }

// Runs one exec request through the HTTP route (loop thread), unless the
// peer is over its rate (Node::peer_limiter): then an error reply.
void DispatchExec(Node* node, const std::string& peer, Bytes request, quic::Reply reply) {
  if (!node->peer_limiter().Allow("node:" + peer))
    return reply(Error::ResourceExhausted("peer {} is over its request rate ({:g} per second, burst {}); retry later",
                                          peer.substr(0, 12), node->config().peer_rate, node->config().peer_burst));
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

// A protocol whose streams count against the opening peer's rate limit:
// over it, the stream is refused (reset) before anything is read.
class RateLimitedProtocol : public quic::Protocol {
 public:
  RateLimitedProtocol(std::shared_ptr<quic::Protocol> inner, Node* node) : inner_(std::move(inner)), node_(node) {}
  std::unique_ptr<quic::StreamHandler> Accept(const std::string& peer_node_id) override {
    if (!node_->peer_limiter().Allow("node:" + peer_node_id)) return nullptr;
    return inner_->Accept(peer_node_id);
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
  TENZRO_TRY(st->endpoint, quic::Endpoint::Create(node.io(), id, bind, opts));
  quic::Endpoint& ep = *st->endpoint;
  ep.AddProtocol(quic::kIrohBlobsAlpn, std::make_shared<RateLimitedProtocol>(
                                          quic::MakeBlobsProvider(node.io(), store, &node.pool()), &node));
  quic::RpcOptions rpc;
  rpc.max_request_bytes = cfg.max_body_bytes;
  Node* n = &node;
  ep.AddProtocol(quic::kExecAlpn,
                 quic::MakeRpcProtocol(node.io(), [n](const std::string& peer, Bytes req, quic::Reply reply) {
                   DispatchExec(n, peer, std::move(req), std::move(reply));
                 }, rpc));
  st->client = std::make_unique<quic::QuicClient>(ep);
  net::Endpoint local = ep.local_endpoint();
  if (IsWildcard(local.host)) {
    std::string host = cfg.advertise;
    if (host.empty()) host = node.http_endpoint().host;
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
  node.OnStop([st] { st->endpoint->Shutdown(); });  // CONNECTION_CLOSE to every peer
  spdlog::info("quic: node {} on udp {} (ALPNs {}, {})", node_id, st->advertised, quic::kIrohBlobsAlpn,
               quic::kExecAlpn);
  return st;
}

}  // namespace tenzro::node
