// Registers the node services compiled into the `tenzro` binary
// (node/service.h): the order is the order Node::Create runs them.
#include "node/moe_services.h"
#include "node/runtime_service.h"
#include "node/service.h"

namespace {
tenzro::Result<void> BlobService(tenzro::node::Node& n) { return tenzro::node::AddBlobService(n); }
tenzro::Result<void> PrepareService(tenzro::node::Node& n) { return tenzro::node::AddPrepareService(n); }
tenzro::Result<void> RuntimeService(tenzro::node::Node& n) { return tenzro::node::AddRuntimeService(n); }
}  // namespace

TENZRO_NODE_SERVICE(BlobService);
TENZRO_NODE_SERVICE(PrepareService);
TENZRO_NODE_SERVICE(RuntimeService);
