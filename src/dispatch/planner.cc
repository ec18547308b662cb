#include "dispatch/planner.h"

#include <algorithm>
#include <cmath>

namespace tenzro::dispatch {
namespace {

using nlohmann::json;

Result<int> Index(const json& obj, const char* key, std::string_view where) {
  if (!obj.contains(key)) return Error::InvalidArgument("routings: {} has no '{}'", where, key);
  const json& v = obj[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
    return Error::InvalidArgument("routings: {} '{}' must be a non-negative integer, got {}", where, key, v.dump());
  return static_cast<int>(v.get<int64_t>());
}

// A remote holder as the declarations describe it.
struct Candidate {
  std::string endpoint;
  Transport transport = Transport::kHttp;
  std::set<std::pair<int, int>> experts;
  double est_base_ms = 0;  // rtt
  double rows_per_s = 0;
  double planned_rows = 0;  // queued + placed by this plan
  HolderBatch batch;
};

std::string EndpointOf(const swarm::Declaration& d, const char* kind) {
  for (const auto& e : d.endpoints)
    if (e.kind == kind && !e.address.empty()) return e.address;
  return "";
}

}  // namespace

std::string_view TransportName(Transport t) {
  switch (t) {
    case Transport::kLocal: return "local";
    case Transport::kQuic: return "quic";
    case Transport::kHttp: return "http";
  }
  return "?";
}

Result<std::vector<TokenRoute>> ParseRoutings(const json& j) {
  if (!j.is_array()) return Error::InvalidArgument("routings: expected a JSON array of {{token_index, experts}}");
  std::vector<TokenRoute> out;
  std::set<int> seen_tokens;
  for (size_t i = 0; i < j.size(); ++i) {
    const json& t = j[i];
    const std::string where = fmt::format("entry {}", i);
    if (!t.is_object()) return Error::InvalidArgument("routings: {} is not an object", where);
    TokenRoute tr;
    TENZRO_TRY(tr.token_index, Index(t, "token_index", where));
    if (!seen_tokens.insert(tr.token_index).second)
      return Error::InvalidArgument("routings: token {} is listed twice", tr.token_index);
    if (!t.contains("experts") || !t["experts"].is_array())
      return Error::InvalidArgument("routings: token {} has no 'experts' array", tr.token_index);
    std::set<std::pair<int, int>> seen;
    for (size_t k = 0; k < t["experts"].size(); ++k) {
      const json& e = t["experts"][k];
      const std::string ew = fmt::format("token {} expert entry {}", tr.token_index, k);
      if (!e.is_object()) return Error::InvalidArgument("routings: {} is not an object", ew);
      RoutedExpert re;
      TENZRO_TRY(re.layer, Index(e, "layer", ew));
      TENZRO_TRY(re.expert, Index(e, "expert", ew));
      if (e.contains("weight") && !e["weight"].is_null()) {
        if (!e["weight"].is_number() || !std::isfinite(e["weight"].get<double>()))
          return Error::InvalidArgument("routings: {} 'weight' must be a finite number", ew);
        re.weight = e["weight"].get<float>();
        re.has_weight = true;
      }
      if (!seen.insert({re.layer, re.expert}).second)
        return Error::InvalidArgument("routings: token {} lists layer {} expert {} twice", tr.token_index, re.layer,
                                      re.expert);
      tr.experts.push_back(re);
    }
    out.push_back(std::move(tr));
  }
  return out;
}

std::vector<PlanItem> GroupByExpert(const std::vector<TokenRoute>& routes) {
  std::map<std::pair<int, int>, std::vector<int>> by;
  for (const TokenRoute& t : routes)
    for (const RoutedExpert& e : t.experts) by[{e.layer, e.expert}].push_back(t.token_index);
  std::vector<PlanItem> out;
  for (auto& [k, toks] : by) {
    std::sort(toks.begin(), toks.end());
    out.push_back({k.first, k.second, std::move(toks)});
  }
  return out;
}

Plan PlanDispatch(const std::vector<PlanItem>& work, const PlanInput& in) {
  // Remote candidates by node id (std::map: iteration in node id order).
  std::map<std::string, Candidate> cands;
  std::set<std::pair<int, int>> banned_holds;
  for (const swarm::Declaration& d : in.live) {
    if (d.node_id == in.self_node_id || d.state == swarm::HolderState::kLeaving) continue;
    if (in.excluded.count(d.node_id)) {
      for (const auto& e : d.experts) banned_holds.insert({e.layer, e.expert});
      continue;
    }
    Candidate& c = cands[d.node_id];
    if (c.endpoint.empty()) {
      std::string quic = in.quic ? EndpointOf(d, "quic") : "";
      c.transport = quic.empty() ? Transport::kHttp : Transport::kQuic;
      c.endpoint = quic.empty() ? EndpointOf(d, "http") : quic;
    }
    for (const auto& e : d.experts) c.experts.insert({e.layer, e.expert});
  }
  for (auto it = cands.begin(); it != cands.end();) {
    if (it->second.endpoint.empty()) {
      it = cands.erase(it);
      continue;
    }
    Candidate& c = it->second;
    auto st = in.stats.find(it->first);
    const bool measured = st != in.stats.end() && st->second.measured;
    c.est_base_ms = measured ? st->second.rtt_ms : in.default_rtt_ms;
    c.rows_per_s = measured && st->second.rows_per_s > 0 ? st->second.rows_per_s : in.default_rows_per_s;
    c.planned_rows = st != in.stats.end() ? st->second.rows_queued : 0;
    c.batch.node_id = it->first;
    c.batch.transport = c.transport;
    c.batch.endpoint = c.endpoint;
    ++it;
  }

  // Largest items first, then (layer, expert).
  std::vector<const PlanItem*> order;
  for (const PlanItem& w : work) order.push_back(&w);
  std::stable_sort(order.begin(), order.end(), [](const PlanItem* a, const PlanItem* b) {
    if (a->tokens.size() != b->tokens.size()) return a->tokens.size() > b->tokens.size();
    return std::tie(a->layer, a->expert) < std::tie(b->layer, b->expert);
  });

  Plan plan;
  plan.holders_considered = static_cast<int>(cands.size());
  HolderBatch local;
  local.node_id = in.self_node_id;
  local.transport = Transport::kLocal;
  for (const PlanItem* w : order) {
    const double rows = static_cast<double>(w->tokens.size());
    if (in.local.count({w->layer, w->expert}) && !in.excluded_items.count({in.self_node_id, w->layer, w->expert})) {
      local.items.push_back(*w);
      local.rows += w->tokens.size();
      continue;
    }
    Candidate* best = nullptr;
    double best_est = 0;
    for (auto& [id, c] : cands) {
      if (!c.experts.count({w->layer, w->expert}) || in.excluded_items.count({id, w->layer, w->expert})) continue;
      const double est = c.est_base_ms + (c.planned_rows + rows) / c.rows_per_s * 1000.0;
      if (!best || est < best_est) {  // map order: ties keep the lower node id
        best = &c;
        best_est = est;
      }
    }
    if (!best) {
      plan.unheld.push_back(*w);
      if (banned_holds.count({w->layer, w->expert})) plan.unheld_banned.insert({w->layer, w->expert});
      continue;
    }
    best->planned_rows += rows;
    best->batch.estimated_ms = best_est;
    best->batch.rows += w->tokens.size();
    best->batch.items.push_back(*w);
  }
  auto by_key = [](const PlanItem& a, const PlanItem& b) {
    return std::tie(a.layer, a.expert) < std::tie(b.layer, b.expert);
  };
  if (!local.items.empty()) plan.batches.push_back(std::move(local));
  for (auto& [id, c] : cands)
    if (!c.batch.items.empty()) plan.batches.push_back(std::move(c.batch));
  for (HolderBatch& b : plan.batches) std::sort(b.items.begin(), b.items.end(), by_key);
  std::sort(plan.unheld.begin(), plan.unheld.end(), by_key);
  return plan;
}

json PlanItemToJson(const PlanItem& item) {
  return {{"layer", item.layer}, {"expert", item.expert}, {"token_indices", item.tokens}};
}

json PlanToJson(const Plan& plan) {
  json batches = json::array();
  for (const HolderBatch& b : plan.batches) {
    json items = json::array();
    for (const PlanItem& i : b.items) items.push_back(PlanItemToJson(i));
    batches.push_back({{"node_id", b.node_id},
                       {"transport", std::string(TransportName(b.transport))},
                       {"endpoint", b.endpoint},
                       {"estimated_ms", b.estimated_ms},
                       {"rows", b.rows},
                       {"items", items}});
  }
  json unheld = json::array();
  for (const PlanItem& i : plan.unheld) {
    json j = PlanItemToJson(i);
    j["holders_banned"] = plan.unheld_banned.count({i.layer, i.expert}) > 0;
    unheld.push_back(std::move(j));
  }
  return {{"batches", batches}, {"unheld", unheld}, {"holders_considered", plan.holders_considered}};
}

}  // namespace tenzro::dispatch
