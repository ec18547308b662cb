#include "node/compose.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "dispatch/exec_frame.h"
#include "node/dashboard.h"
#include "node/dispatch_service.h"
#include "node/exec_service.h"
#include "node/generate_service.h"
#include "node/manifest_service.h"
#include "node/moe_services.h"
#include "node/node_metrics.h"
#include "node/runtime_service.h"
#include "node/serve_service.h"
#include "node/swarm_moe_executor.h"
#include "transfer/http_fetcher.h"
#include "transfer/provider_fetch.h"
#include "transfer/quic_fetcher.h"

namespace tenzro::node {
namespace {

// Adds the context "node part NAME" to an error.
template <typename T>
Result<T> Named(const char* name, Result<T> r) {
  if (!r) return r.error().WithContext(std::string("node part ") + name);
  return r;
}

// The MoE executor of the served model (config serve_experts): "swarm" sends
// each layer's routed experts to their holders (node/swarm_moe_executor.h,
// rows as serve_wire_dtype); "local" runs them in-process on the checkpoint's
// own experts, rounding their rows the same way: the same bits either way.
Result<void> AddServe(Node& node, const NodeParts& p) {
  if (node.config().serve_experts == "local") return AddServeService(node, nullptr);
  const std::string model = node.config().serve;
  std::shared_ptr<dispatch::Dispatcher> dispatcher = p.dispatcher;
  std::shared_ptr<swarm::SwarmAgent> agent = p.swarm->agent;
  ThreadPool* pool = &node.pool();
  dispatch::SpotCheckOptions spot = NodeSpotCheckOptions(node);
  const runtime::WireDtype wire = node.config().serve_wire_dtype;
  return AddServeService(
      node,
      [dispatcher, pool, model, spot, wire](const model::HParams& hp, const format::Checkpoint& spine) {
        dispatch::ForwardOptions o;
        o.spot_check = spot;
        o.dtype = wire;
        return MakeSwarmMoeExecutor(dispatcher, pool, model, hp, spine, o);
      },
      [agent, model](const model::HParams& hp) { return SwarmCoverageGap(*agent, model, hp); });
}

}  // namespace

Result<void> ComposeNode(Node& node, NodeParts* out) {
  NodeParts p;
  const NodeConfig& cfg = node.config();
  TENZRO_TRY(p.store, Named("blob store", OpenNodeBlobStore(cfg.data_dir)));

  // Blob fetchers: HTTP always, iroh-blobs over the node's QUIC client when
  // QUIC is on (set below, before anything can fetch).
  auto fetchers = std::make_shared<transfer::FetcherSet>();
  transfer::FetchOptions http_fetch;
  http_fetch.counters.received = [](uint64_t n) { ProcessMetrics().AddBytes("http", "blob", 0, n); };
  http_fetch.counters.done = [](std::optional<ErrorCode> failure, uint64_t bytes) {
    ProcessMetrics().RecordBlobFetch("http", failure, bytes);
  };
  fetchers->Add(std::make_shared<transfer::HttpBlobFetcher>(http_fetch));

  // The runtime reaches the swarm (built after it) through `swarm_link`.
  auto swarm_link = std::make_shared<std::weak_ptr<SwarmState>>();
  auto fetch_blob = [swarm_link, fetchers, store = p.store](const blob::Blake3Hash& hash,
                                                            const std::vector<transfer::BlobSource>& named)
      -> Result<transfer::SourcesFetch> {
    std::vector<transfer::BlobSource> sources = named;
    if (sources.empty()) {
      if (std::shared_ptr<SwarmState> s = swarm_link->lock()) sources = BlobProviderSources(*s, hash.ToHex());
      if (sources.empty())
        return Error::NotFound(
            "blob {} is not in this node's store, no peer was given (--from URL or a URI with http=host:port) "
            "and no provider announced it in the swarm",
            hash.ToHex());
    }
    return transfer::FetchFromSources(*store, hash, sources, *fetchers);
  };
  // The exec body limit follows what the node holds: the largest request
  // the exec frame limits accept for the widest model held (at least the
  // public routes' limit, so a request for a model not held is read and
  // answered with its error).
  auto runtime_link = std::make_shared<std::weak_ptr<holder::ExpertRuntime>>();
  auto exec_limit = std::make_shared<std::atomic<uint64_t>>(cfg.public_body_bytes);
  auto size_exec_limit = [runtime_link, exec_limit, floor = cfg.public_body_bytes] {
    std::shared_ptr<holder::ExpertRuntime> rt = runtime_link->lock();
    if (!rt) return;
    int64_t widest = 0;
    for (const auto& e : rt->cache().List()) widest = std::max(widest, e.n_embd);
    const uint64_t bound = dispatch::ExecRequestBoundBytes(dispatch::ExecLimits{}, static_cast<uint32_t>(widest));
    exec_limit->store(std::max<uint64_t>(floor, bound));
  };
  auto on_change = [swarm_link, size_exec_limit] {
    size_exec_limit();
    if (std::shared_ptr<SwarmState> s = swarm_link->lock()) {
      if (auto r = s->agent->Publish(); !r) spdlog::warn("swarm: publish after load failed: {}", r.error().ToString());
    }
  };
  TENZRO_TRY(p.trust, Named("manifest trust", MakeNodeTrust(node, p.store, fetch_blob)));
  TENZRO_TRY(p.runtime,
             Named("expert runtime", OpenNodeExpertRuntime(node, p.store, fetch_blob, on_change, p.trust)));
  *runtime_link = p.runtime;
  size_exec_limit();
  node.SetExecBodyLimit([exec_limit] { return exec_limit->load(std::memory_order_relaxed); });
  TENZRO_TRY(p.quic, Named("quic", AddQuicService(node, p.store)));
  if (p.quic) {
    // The fetcher keeps the node's QUIC state alive.
    struct Quic : transfer::QuicBlobFetcher {
      explicit Quic(std::shared_ptr<QuicState> q) : QuicBlobFetcher(q->client.get()), state(std::move(q)) {}
      std::shared_ptr<QuicState> state;
    };
    fetchers->Add(std::make_shared<Quic>(p.quic));
  }
  std::optional<std::string> quic_address;
  if (p.quic) quic_address = p.quic->advertised;
  TENZRO_TRY(p.swarm, Named("swarm", StartSwarm(node, p.runtime, quic_address, ManifestScreen(p.trust))));
  p.swarm->trust = p.trust;
  *swarm_link = p.swarm;
  p.runner = MakeNodeExpertRunner(p.runtime, &node.pool());
  p.exec_options = NodeExecOptions(cfg, p.swarm->agent);
  p.dispatcher = MakeNodeDispatcher(p.runtime, p.swarm->agent, p.runner, p.exec_options, p.quic,
                                     cfg.quic_http_fallback);
  node.Keep(p.store);
  node.Keep(p.trust);
  node.Keep(p.runtime);
  node.Keep(p.quic);
  node.Keep(p.swarm);
  node.Keep(p.dispatcher);

  // Route groups, each with what it uses.
  TENZRO_CHECK_OK(Named("blob service", AddBlobService(node, p.store)));
  TENZRO_CHECK_OK(Named("prepare service", AddPrepareService(node, p.store, p.swarm->agent)));
  TENZRO_CHECK_OK(Named("manifest service", AddManifestService(node, p.store, p.trust, p.swarm->agent)));
  TENZRO_CHECK_OK(Named("runtime service", AddRuntimeService(node, p.runtime)));
  TENZRO_CHECK_OK(Named("swarm service", AddSwarmService(node, p.swarm)));
  TENZRO_CHECK_OK(Named("exec service", AddExecService(node, p.runner, p.exec_options)));
  TENZRO_CHECK_OK(Named("dispatch service", AddDispatchService(node, p.runtime, p.dispatcher)));
  TENZRO_CHECK_OK(Named("generate service", AddGenerateService(node, p.store, p.dispatcher, p.trust)));
  AddNodeMetrics(node);
  TENZRO_CHECK_OK(Named("serve service", AddServe(node, p)));
  TENZRO_CHECK_OK(Named("dashboard", AddDashboardService(node, DashboardParts{p.runtime, p.swarm, quic_address})));
  if (out) *out = std::move(p);
  return Ok();
}

Result<std::unique_ptr<Node>> CreateNode(NodeConfig config, NodeParts* parts) {
  return Node::Create(std::move(config), [parts](Node& n) { return ComposeNode(n, parts); });
}

}  // namespace tenzro::node
