// tenzro node: how other modules plug routes and job kinds into the node.
//
// A service is a function called once by Node::Create, after the built-in
// routes exist and before the listeners accept or interrupted jobs are
// recovered. It adds routes (node.admin_router() / node.public_router()) and
// job resume hooks (node.jobs().SetResumeHook). Register it from a file that
// is compiled into the `tenzro` binary (e.g. src/cli/blob_service.cc), since
// a static library drops object files nothing references:
//
//   static Result<void> BlobService(node::Node& n) {
//     n.public_router().Add("GET", "/blobs/", ...);
//     return Ok();
//   }
//   TENZRO_NODE_SERVICE(BlobService);
//
// Code that builds its own Node (tests) can instead call the routers directly.
#pragma once

#include <vector>

#include "core/result.h"

namespace tenzro::node {

class Node;
using NodeService = Result<void> (*)(Node& node);

struct NodeServiceEntry {
  const char* name;
  NodeService fn;
};

// Adds `fn` to the list Node::Create runs (in registration order). Not
// thread-safe: call from static initialisers only.
bool RegisterNodeService(const char* name, NodeService fn);
const std::vector<NodeServiceEntry>& NodeServices();

}  // namespace tenzro::node

#define TENZRO_NODE_SERVICE(fn) \
  [[maybe_unused]] static const bool tenzro_node_service_##fn = ::tenzro::node::RegisterNodeService(#fn, fn)
