#include "node/service.h"

namespace tenzro::node {

static std::vector<NodeServiceEntry>& Services() {
  static std::vector<NodeServiceEntry> v;
  return v;
}

bool RegisterNodeService(const char* name, NodeService fn) {
  Services().push_back({name, fn});
  return true;
}

const std::vector<NodeServiceEntry>& NodeServices() { return Services(); }

}  // namespace tenzro::node
