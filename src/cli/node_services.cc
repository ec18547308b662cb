// Registers the node services compiled into the `tenzro` binary
// (node/service.h): the order is the order Node::Create runs them.
#include "node/dashboard.h"
#include "node/dispatch_service.h"
#include "node/exec_service.h"
#include "node/generate_service.h"
#include "node/moe_services.h"
#include "node/node.h"
#include "node/node_metrics.h"
#include "node/quic_service.h"
#include "node/runtime_service.h"
#include "node/serve_service.h"
#include "node/swarm_moe_executor.h"
#include "node/service.h"
#include "node/swarm_service.h"

namespace {
tenzro::Result<void> BlobService(tenzro::node::Node& n) { return tenzro::node::AddBlobService(n); }
tenzro::Result<void> PrepareService(tenzro::node::Node& n) { return tenzro::node::AddPrepareService(n); }
tenzro::Result<void> RuntimeService(tenzro::node::Node& n) { return tenzro::node::AddRuntimeService(n); }
tenzro::Result<void> QuicService(tenzro::node::Node& n) { return tenzro::node::AddQuicService(n); }
tenzro::Result<void> SwarmService(tenzro::node::Node& n) { return tenzro::node::AddSwarmService(n); }
tenzro::Result<void> ExecService(tenzro::node::Node& n) { return tenzro::node::AddExecService(n); }
tenzro::Result<void> DispatchService(tenzro::node::Node& n) { return tenzro::node::AddDispatchService(n); }
tenzro::Result<void> GenerateService(tenzro::node::Node& n) { return tenzro::node::AddGenerateService(n); }
tenzro::Result<void> MetricsService(tenzro::node::Node& n) {
  tenzro::node::AddNodeMetrics(n);
  return tenzro::Ok();
}
// The MoE executor of the served model (config serve_experts): "swarm" sends
// each layer's routed experts to their holders (node/swarm_moe_executor.h,
// f32 rows: the same bits as in-process); "local" runs them in-process on
// the checkpoint's own experts.
tenzro::Result<void> ServeService(tenzro::node::Node& n) {
  if (n.config().serve_experts == "local") return tenzro::node::AddServeService(n, nullptr);
  std::string model = n.config().serve;
  return tenzro::node::AddServeService(
      n,
      [&n, model](const tenzro::model::HParams& hp, const tenzro::format::Checkpoint& spine) {
        tenzro::dispatch::ForwardOptions o;
        o.spot_check = tenzro::node::NodeSpotCheckOptions(n);
        return tenzro::node::MakeSwarmMoeExecutor(n, model, hp, spine, o);
      },
      [&n, model](const tenzro::model::HParams& hp) { return tenzro::node::SwarmCoverageGap(n, model, hp); });
}
tenzro::Result<void> DashboardService(tenzro::node::Node& n) { return tenzro::node::AddDashboardService(n); }
}  // namespace

TENZRO_NODE_SERVICE(BlobService);
TENZRO_NODE_SERVICE(PrepareService);
TENZRO_NODE_SERVICE(RuntimeService);
TENZRO_NODE_SERVICE(QuicService);  // before SwarmService: it advertises the QUIC address
TENZRO_NODE_SERVICE(SwarmService);
TENZRO_NODE_SERVICE(ExecService);
TENZRO_NODE_SERVICE(DispatchService);
TENZRO_NODE_SERVICE(GenerateService);
TENZRO_NODE_SERVICE(MetricsService);
TENZRO_NODE_SERVICE(ServeService);
TENZRO_NODE_SERVICE(DashboardService);
