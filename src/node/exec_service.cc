#include "node/exec_service.h"

#include "catalog/catalog.h"
#include "dispatch/exec_route.h"
#include "node/node.h"
#include "node/node_metrics.h"
#include "node/runtime_service.h"
#include "node/swarm_service.h"

namespace tenzro::node {

dispatch::ExecServeOptions NodeExecOptions(Node& node) {
  dispatch::ExecServeOptions o;
  o.limits.max_frame_bytes = node.config().max_body_bytes;
  Node* n = &node;
  o.on_served = [n](const std::string& model, int layer, int expert, uint32_t rows) {
    auto id = catalog::NormalizeModelId(model);
    auto agent = NodeSwarm(*n);
    if (id && agent) (*agent)->RecordServed(*id, layer, expert, rows);
  };
  return o;
}

namespace {

// Keeps the runtime (and so its cache) alive as long as the route.
class NodeRunner : public dispatch::CacheRunner {
 public:
  NodeRunner(std::shared_ptr<ExpertRuntime> rt, ThreadPool* pool)
      : CacheRunner(rt->cache(), pool), rt_(std::move(rt)) {}

 private:
  std::shared_ptr<ExpertRuntime> rt_;
};

}  // namespace

Result<std::shared_ptr<dispatch::ExpertRunner>> NodeExpertRunner(Node& node) {
  TENZRO_TRY(std::shared_ptr<ExpertRuntime> rt, NodeExpertRuntime(node));
  return std::shared_ptr<dispatch::ExpertRunner>(std::make_shared<NodeRunner>(rt, &node.pool()));
}

Result<void> AddExecService(Node& node) {
  TENZRO_TRY(std::shared_ptr<dispatch::ExpertRunner> runner, NodeExpertRunner(node));
  // The route lives on an inner router; the public one counts its bytes
  // into /metrics (node_metrics.h) around it. QUIC exec calls come through
  // the public router too (quic_service.cc), their remote is "quic:...".
  auto inner = std::make_shared<net::Router>();
  dispatch::AddExecRoute(*inner, &node.pool(), runner, NodeExecOptions(node));
  node.public_router().AddAsync("POST", "/v1/moe/exec", [inner](std::shared_ptr<const net::Request> req,
                                                               net::Responder responder) {
    const std::string transport = req->remote.starts_with("quic:") ? "quic" : "http";
    ProcessMetrics().AddBytes(transport, "exec", 0, req->body.size());
    net::Responder counted([responder, transport](net::Response r) {
      ProcessMetrics().AddBytes(transport, "exec", r.body.size(), 0);
      responder.Send(std::move(r));
    });
    // The server made `req` mutable; Dispatch only sets its route_suffix.
    inner->Dispatch(std::const_pointer_cast<net::Request>(req), std::move(counted));
  });
  return Ok();
}

}  // namespace tenzro::node
