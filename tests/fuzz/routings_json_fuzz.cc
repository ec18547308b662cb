// libFuzzer target: the JSON request bodies a node parses from the network
// for dispatch (docs/formats/admin-api.md): POST /v1/moe/plan-dispatch
// ({"model", "routings"}), POST /v1/moe/forward and forward-distributed
// ({"model", "layer", "d_model", "n_tokens", "hidden_f32_b64", "on_missing",
// "wire_dtype", ...}). Bodies go through net::ParseJsonBody as the services
// do; no exception may escape, nothing may crash. Parsed routings group into
// plan items that account for every (token, expert) exactly once, and the
// planner places every item exactly once.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "dispatch/exec_frame.h"
#include "dispatch/forward.h"
#include "dispatch/planner.h"
#include "net/json_http.h"
#include "node/runtime_service.h"

using namespace tenzro;
using nlohmann::json;

namespace {

void CheckRoutings(const json& j) {
  auto routes = dispatch::ParseRoutings(j);
  if (!routes) return;
  size_t entries = 0;
  for (const auto& t : *routes) {
    if (t.token_index < 0) std::abort();
    for (const auto& e : t.experts)
      if (e.layer < 0 || e.expert < 0) std::abort();
    entries += t.experts.size();
  }
  const auto items = dispatch::GroupByExpert(*routes);
  size_t grouped = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && !(std::pair(items[i - 1].layer, items[i - 1].expert) < std::pair(items[i].layer, items[i].expert)))
      std::abort();
    for (size_t k = 1; k < items[i].tokens.size(); ++k)
      if (items[i].tokens[k - 1] >= items[i].tokens[k]) std::abort();
    grouped += items[i].tokens.size();
  }
  if (grouped != entries) std::abort();

  // Two remote holders and this node share the work.
  dispatch::PlanInput in;
  in.self_node_id = std::string(64, 'a');
  in.local = {{0, 0}, {1, 3}};
  for (int h = 0; h < 2; ++h) {
    swarm::Declaration d;
    d.node_id = std::string(64, h == 0 ? 'b' : 'c');
    d.endpoints = {{"http", "http://127.0.0.1:1"}};
    if (h == 1) d.endpoints.push_back({"quic", "127.0.0.1:2"});
    for (int e = 0; e < 8; ++e) d.experts.push_back({0, e + h, "f32", "f32", "f32", "", swarm::Tier::kWarm, 0});
    in.live.push_back(d);
  }
  in.quic = true;
  const dispatch::Plan plan = dispatch::PlanDispatch(items, in);
  size_t placed = plan.unheld.size();
  for (const auto& b : plan.batches) placed += b.items.size();
  if (placed != items.size()) std::abort();
  (void)dispatch::PlanToJson(plan).dump();
}

void CheckForwardBody(const json& b) {
  if (auto fr = node::ParseForwardRequest(b)) {
    if (fr->d_model <= 0 || fr->n_tokens < 0) std::abort();
    if (fr->x.size() != static_cast<uint64_t>(fr->n_tokens) * static_cast<uint64_t>(fr->d_model)) std::abort();
  }
  if (!b.is_object()) return;
  if (b.contains("model") && b["model"].is_string()) (void)catalog::NormalizeModelId(b["model"].get<std::string>());
  if (b.contains("on_missing") && b["on_missing"].is_string())
    (void)dispatch::ParseOnMissing(b["on_missing"].get<std::string>());
  if (b.contains("wire_dtype") && b["wire_dtype"].is_string())
    (void)dispatch::ParseRowType(b["wire_dtype"].get<std::string>());
  if (b.contains("routings")) CheckRoutings(b["routings"]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto body = net::ParseJsonBody(text);
  if (!body) return 0;
  CheckForwardBody(*body);
  CheckRoutings(*body);  // `plan-dispatch --routings FILE` reads a bare array
  // Base64 of the hidden states, straight from the text as well.
  if (auto raw = node::Base64Decode(text)) {
    auto again = node::Base64Decode(node::Base64Encode(ByteSpan(*raw)));
    if (!again || *again != *raw) std::abort();
  }
  return 0;
}
