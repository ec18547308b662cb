// tenzro node: the composition root — what a `tenzro node run` node is made
// of, built in one place, in dependency order.
//
//   store      DATA_DIR/blobs                        (moe_services.h)
//   trust      the trusted model manifests           (manifest_service.h)
//   runtime    expert cache over the store           (runtime_service.h)
//   quic       endpoint + client, unless --quic off  (quic_service.h)
//   swarm      DHT + agent publishing the runtime    (swarm_service.h)
//   runner     the runtime's cache on the work pool  (exec_service.h)
//   dispatcher local / HTTP / QUIC executors         (dispatch_service.h)
//
// ComposeNode builds these parts once, adds each route group with exactly
// the parts it uses, and keeps the parts alive with the node (Node::Keep).
// Nothing looks a part up later: there are no per-node globals. The one
// cycle — the runtime asks the swarm for blob providers and republishes
// after a load, while the swarm publishes what the runtime holds — is closed
// here by a weak reference from the runtime's callbacks to the swarm, set
// before the node serves anything.
#pragma once

#include <memory>

#include "blob/blob_store.h"
#include "core/result.h"
#include "dispatch/exec_server.h"
#include "dispatch/forward.h"
#include "holder/expert_runtime.h"
#include "manifest/manifest_trust.h"
#include "node/node.h"
#include "node/node_config.h"
#include "node/quic_service.h"
#include "node/swarm_service.h"

namespace tenzro::node {

struct NodeParts {
  std::shared_ptr<blob::BlobStore> store;
  std::shared_ptr<manifest::TrustStore> trust;  // open mode unless configured
  std::shared_ptr<holder::ExpertRuntime> runtime;
  std::shared_ptr<QuicState> quic;  // null when QUIC is off
  std::shared_ptr<SwarmState> swarm;
  std::shared_ptr<dispatch::ExpertRunner> runner;  // what exec requests run on (before any test fault)
  dispatch::ExecServeOptions exec_options;
  std::shared_ptr<dispatch::Dispatcher> dispatcher;
};

// Builds `node`'s parts and adds every service: blobs, prepare jobs, the
// expert runtime, QUIC, the swarm, exec, the distributed forward,
// generation, metrics, `--serve` and the dashboard. `parts` (may be null)
// receives the parts; they use the node's loop and worker pool, so a caller
// that holds them releases them before it destroys the node. The first part or service that fails is the error,
// with context.
Result<void> ComposeNode(Node& node, NodeParts* parts = nullptr);

// Node::Create with ComposeNode: a complete node, usable in-process (tests)
// or by `tenzro node run`. Errors as Node::Create.
Result<std::unique_ptr<Node>> CreateNode(NodeConfig config, NodeParts* parts = nullptr);

}  // namespace tenzro::node
