#include "node/dashboard.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "net/json_http.h"
#include "node/node.h"
#include "node/node_metrics.h"

namespace tenzro::node {
namespace {

using nlohmann::json;

// The runtime's status without file paths (the page is public).
json RuntimeJson(const json& status) {
  json out = {{"memory", status.value("memory", json::object())},
              {"counters", status.value("counters", json::object())},
              {"experts", json::array()},
              {"gates", json::array()}};
  for (const char* key : {"experts", "gates"}) {
    if (!status.contains(key)) continue;
    for (json e : status[key]) {
      e.erase("path");
      out[key].push_back(std::move(e));
    }
  }
  return out;
}

// Loop thread: everything but the shard map, which the caller adds.
json BaseState(Node& node, const DashboardParts& parts, const std::optional<std::string>& wanted) {
  holder::ExpertRuntime* rt = parts.runtime.get();
  swarm::SwarmAgent* agent = parts.swarm ? parts.swarm->agent.get() : nullptr;
  json nodej = {{"version", std::string(NodeVersion())}, {"http", node.http_endpoint().Url()}};
  if (agent) nodej["node_id"] = agent->node_id();
  if (parts.quic_address) nodej["quic"] = *parts.quic_address;
  json status = rt ? rt->Status() : json::object();
  std::vector<std::string> models;
  auto add = [&](const std::string& m) {
    if (!m.empty() && std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
  };
  for (const char* key : {"experts", "gates"})
    if (status.contains(key))
      for (const json& e : status[key]) add(e.value("model", ""));
  if (agent)
    for (const auto& m : agent->KnownModels()) add(m);
  json state = {{"node", nodej},
                {"models", models},
                {"model", nullptr},
                {"runtime", RuntimeJson(status)},
                {"shard_map", nullptr},
                {"recent_forwards", ProcessMetrics().RecentForwards()}};
  for (const auto& [key, fn] : node.dashboard_sections()) state[key] = fn();
  if (wanted && !wanted->empty()) state["model"] = *wanted;
  else if (!models.empty()) state["model"] = models.front();
  return state;
}

net::Response HtmlResponse() {
  net::Response r;
  r.content_type = "text/html; charset=utf-8";
  r.body = std::string(DashboardHtml());
  r.headers.push_back({"cache-control", "no-store"});
  return r;
}

// The state for `wanted` (or the default model): memory only, no I/O.
net::Response State(Node& node, const DashboardParts& parts, const std::optional<std::string>& wanted) {
  json state = BaseState(node, parts, wanted);
  if (!parts.swarm) {
    state["shard_map_error"] = "the swarm service is not running";
    return net::JsonResponse(state);
  }
  if (!state["model"].is_string()) {
    state["shard_map_error"] = "no model known yet";
    return net::JsonResponse(state);
  }
  auto id = catalog::NormalizeModelId(state["model"].get<std::string>());
  if (!id) {
    state["shard_map_error"] = id.error().message();
    return net::JsonResponse(state);
  }
  auto map = SnapshotShardMapJson(node, *parts.swarm, *id);
  if (!map) {
    state["shard_map_error"] = map.error().message();
    return net::JsonResponse(state);
  }
  // The cached map text goes in as it is (not parsed and dumped again):
  // the state's object is reopened before its closing brace.
  state.erase("shard_map");
  net::Response r = net::JsonResponse(state);
  const size_t close = r.body.rfind('}');
  if (close == std::string::npos) return r;
  r.body.resize(close);
  r.body += ",\"shard_map\":";
  r.body += **map;
  r.body += "}\n";
  return r;
}

}  // namespace

Result<void> AddDashboardService(Node& node, DashboardParts parts) {
  const std::string& where = node.config().dashboard;
  if (where == "off") return Ok();
  net::Router& router = where == "admin" ? node.admin_router() : node.public_router();
  Node* n = &node;
  // "/" is a prefix pattern (net/router.h): only the root itself is the page.
  router.Add("GET", "/", [](const net::Request& req) {
    if (!req.route_suffix.empty())
      return net::ErrorResponse(Error::NotFound("no route for GET {}", req.path.substr(0, 200)), 404);
    return HtmlResponse();
  });
  router.Add("GET", "/index.html", [](const net::Request&) { return HtmlResponse(); });
  router.Add("GET", "/v1/dashboard/state", [n, parts](const net::Request& req) {
    auto model = req.QueryParam("model");
    if (model && model->size() > 200)
      return net::ErrorResponse(Error::InvalidArgument("query parameter 'model' is over 200 bytes"));
    return State(*n, parts, model);
  });
  return Ok();
}

}  // namespace tenzro::node
