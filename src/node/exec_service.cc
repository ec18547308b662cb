#include "node/exec_service.h"

#include <atomic>

#include <spdlog/spdlog.h>

#include "catalog/catalog.h"
#include "dispatch/exec_route.h"
#include "node/node.h"
#include "node/node_metrics.h"

namespace tenzro::node {

dispatch::ExecServeOptions NodeExecOptions(const NodeConfig& config, std::shared_ptr<swarm::SwarmAgent> agent) {
  dispatch::ExecServeOptions o;
  o.limits.max_frame_bytes = config.max_body_bytes;
  if (agent) {
    o.on_served = [agent](const std::string& model, int layer, int expert, uint32_t rows) {
      if (auto id = catalog::NormalizeModelId(model)) agent->RecordServed(*id, layer, expert, rows);
    };
  }
  return o;
}

namespace {

// Keeps the runtime (and so its cache) alive as long as the route.
class NodeRunner : public dispatch::CacheRunner {
 public:
  NodeRunner(std::shared_ptr<holder::ExpertRuntime> rt, ThreadPool* pool)
      : CacheRunner(rt->cache(), pool), rt_(std::move(rt)) {}

 private:
  std::shared_ptr<holder::ExpertRuntime> rt_;
};

// TEST ONLY (--test-corrupt-exec-outputs, docs/security.md): a holder that
// lies. Every expert run it serves to peers is computed, then `fraction` of
// the runs (evenly spread) are falsified (scaled and shifted), so that spot
// checks have something to catch. RunExec calls Check and then Run on one
// thread per request, so the request's d_model is kept thread-local.
class CorruptingRunner : public dispatch::ExpertRunner {
 public:
  CorruptingRunner(std::shared_ptr<dispatch::ExpertRunner> inner, double fraction)
      : inner_(std::move(inner)), fraction_(fraction) {}
  Result<void> Check(const std::string& model, int layer, int64_t d_model, const std::vector<int>& experts) override {
    d_model_ = d_model;
    return inner_->Check(model, layer, d_model, experts);
  }
  void Prefetch(const std::string& model, int layer, const std::vector<int>& experts) override {
    inner_->Prefetch(model, layer, experts);
  }
  Result<void> Run(const std::string& model, int layer, int expert, const float* x, int n, float* y) override {
    TENZRO_CHECK_OK(inner_->Run(model, layer, expert, x, n, y));
    const uint64_t i = runs_++;
    if (static_cast<uint64_t>(static_cast<double>(i + 1) * fraction_) > static_cast<uint64_t>(i * fraction_))
      for (int64_t k = 0; k < n * d_model_; ++k) y[k] = y[k] * 1.25f + 0.05f;
    return Ok();
  }

 private:
  static thread_local int64_t d_model_;
  std::shared_ptr<dispatch::ExpertRunner> inner_;
  double fraction_;
  std::atomic<uint64_t> runs_{0};
};
thread_local int64_t CorruptingRunner::d_model_ = 0;

}  // namespace

std::shared_ptr<dispatch::ExpertRunner> MakeNodeExpertRunner(std::shared_ptr<holder::ExpertRuntime> rt, ThreadPool* pool) {
  return std::make_shared<NodeRunner>(std::move(rt), pool);
}

Result<void> AddExecService(Node& node, std::shared_ptr<dispatch::ExpertRunner> runner,
                            dispatch::ExecServeOptions options) {
  // The route lives on an inner router; the public one counts its bytes
  // into /metrics (node_metrics.h) around it. QUIC exec calls come through
  // the public router too (quic_service.cc), their remote is "quic:...".
  if (const double f = node.config().test_corrupt_exec_outputs; f > 0) {
    spdlog::warn("TEST FAULT: this holder falsifies {:g} of the expert outputs it serves to peers "
                 "(--test-corrupt-exec-outputs)", f);
    runner = std::make_shared<CorruptingRunner>(runner, f);
  }
  auto inner = std::make_shared<net::Router>();
  dispatch::AddExecRoute(*inner, &node.pool(), runner, std::move(options));
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
