#include "node/dashboard.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/json_http.h"
#include "node/node.h"
#include "node/node_metrics.h"

namespace tenzro::node {
namespace {

using nlohmann::json;

std::string PercentEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

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
  swarm::SwarmAgent* agent = parts.agent.get();
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

}  // namespace

Result<void> AddDashboardService(Node& node, DashboardParts parts) {
  Node* n = &node;
  // "/" is a prefix pattern (net/router.h): only the root itself is the page.
  node.public_router().Add("GET", "/", [](const net::Request& req) {
    if (!req.route_suffix.empty())
      return net::ErrorResponse(Error::NotFound("no route for GET {}", req.path.substr(0, 200)), 404);
    return HtmlResponse();
  });
  node.public_router().Add("GET", "/index.html", [](const net::Request&) { return HtmlResponse(); });
  node.public_router().AddAsync("GET", "/v1/dashboard/state", [n, parts](std::shared_ptr<const net::Request> req,
                                                                        net::Responder responder) {
    swarm::SwarmAgent* agent = parts.agent.get();
    auto model = req->QueryParam("model");
    if (model && model->size() > 200) {
      responder.Send(net::ErrorResponse(Error::InvalidArgument("query parameter 'model' is over 200 bytes")));
      return;
    }
    auto state = std::make_shared<json>(BaseState(*n, parts, model));
    if (!agent || !(*state)["model"].is_string()) {
      (*state)["shard_map_error"] = agent ? "no model known yet" : "the swarm service is not running";
      responder.Send(net::JsonResponse(*state));
      return;
    }
    // The swarm service's own route computes the map (on the worker pool).
    auto sub = std::make_shared<net::Request>();
    sub->method = "GET";
    sub->path = "/v1/swarm/shard-map";
    sub->query = "model=" + PercentEncode((*state)["model"].get<std::string>()) + "&min_providers=2";
    sub->target = sub->path + "?" + sub->query;
    sub->remote = "dashboard";
    net::Responder inner([state, responder](net::Response r) {
      json map = json::parse(r.body, nullptr, false);
      if (r.status == 200 && map.is_object()) {
        (*state)["shard_map"] = std::move(map);
      } else {
        std::string why = map.is_object() && map.contains("error") ? map["error"].dump() : r.body.substr(0, 300);
        (*state)["shard_map_error"] = "shard map: HTTP " + std::to_string(r.status) + ": " + why;
      }
      responder.Send(net::JsonResponse(*state));
    });
    n->admin_router().Dispatch(std::move(sub), std::move(inner));
  });
  return Ok();
}

}  // namespace tenzro::node
