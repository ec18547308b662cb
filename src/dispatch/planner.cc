#include "dispatch/planner.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <unordered_map>

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
  // Only the experts of the work matter: a declaration part lists up to
  // thousands (every layer a holder serves), a round asks for a few of one
  // layer, so each entry is checked against the work's layer range first.
  std::set<std::pair<int, int>> wanted;
  int min_layer = INT32_MAX, max_layer = INT32_MIN;
  for (const PlanItem& w : work) {
    wanted.insert({w.layer, w.expert});
    min_layer = std::min(min_layer, w.layer);
    max_layer = std::max(max_layer, w.layer);
  }
  auto is_wanted = [&](const swarm::HeldExpert& e) {
    return e.layer >= min_layer && e.layer <= max_layer && wanted.count({e.layer, e.expert});
  };
  // Per usable remote holder (not this node, not leaving or excluded, an
  // endpoint named): the first part naming its endpoint. Candidates only for
  // holders of the work's experts, so the rest of the plan does not grow
  // with the swarm.
  std::unordered_map<std::string_view, const swarm::Declaration*> usable;
  auto endpoint_of = [&](const swarm::Declaration& d) {
    std::string quic = in.quic ? EndpointOf(d, "quic") : "";
    return std::make_pair(quic.empty() ? Transport::kHttp : Transport::kQuic,
                          quic.empty() ? EndpointOf(d, "http") : quic);
  };
  for (const swarm::Declaration& d : in.Live()) {
    if (d.node_id == in.self_node_id || d.state == swarm::HolderState::kLeaving) continue;
    if (in.excluded.count(d.node_id)) {
      for (const auto& e : d.experts)
        if (is_wanted(e)) banned_holds.insert({e.layer, e.expert});
      continue;
    }
    if (!usable.count(d.node_id) && !endpoint_of(d).second.empty()) usable.emplace(d.node_id, &d);
    for (const auto& e : d.experts)
      if (is_wanted(e)) cands[d.node_id].experts.insert({e.layer, e.expert});
  }
  for (auto it = cands.begin(); it != cands.end();) {
    auto u = usable.find(it->first);
    if (u == usable.end()) {
      it = cands.erase(it);
      continue;
    }
    Candidate& c = it->second;
    std::tie(c.transport, c.endpoint) = endpoint_of(*u->second);
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
  plan.holders_considered = static_cast<int>(usable.size());
  HolderBatch local;
  local.node_id = in.self_node_id;
  local.transport = Transport::kLocal;
  // Remote items and the candidates (in node id order) that may take each.
  std::vector<Candidate*> cand_list;
  for (auto& [id, c] : cands) cand_list.push_back(&c);
  struct Remote {
    const PlanItem* item;
    double rows;
    std::vector<size_t> holders;  // indices into cand_list
    size_t at = SIZE_MAX;         // chosen holder
  };
  std::vector<Remote> remote;
  for (const PlanItem* w : order) {
    if (in.local.count({w->layer, w->expert}) && !in.excluded_items.count({in.self_node_id, w->layer, w->expert})) {
      local.items.push_back(*w);
      local.rows += w->tokens.size();
      continue;
    }
    Remote r{w, static_cast<double>(w->tokens.size()), {}};
    for (size_t h = 0; h < cand_list.size(); ++h) {
      const Candidate& c = *cand_list[h];
      if (c.experts.count({w->layer, w->expert}) && !in.excluded_items.count({c.batch.node_id, w->layer, w->expert}))
        r.holders.push_back(h);
    }
    if (r.holders.empty()) {
      plan.unheld.push_back(*w);
      if (banned_holds.count({w->layer, w->expert})) plan.unheld_banned.insert({w->layer, w->expert});
      continue;
    }
    remote.push_back(std::move(r));
  }

  // 1. Few calls: a greedy cover — the holder that can take the most
  //    uncovered rows (ties: the sooner it would finish them, then the lower
  //    node id), until every item has a chosen holder.
  auto finish = [&](size_t h, double extra_rows) {
    const Candidate& c = *cand_list[h];
    return c.est_base_ms + (c.planned_rows + extra_rows) / c.rows_per_s * 1000.0;
  };
  std::vector<bool> chosen(cand_list.size(), false);
  {
    std::vector<bool> covered(remote.size(), false);
    size_t left = remote.size();
    while (left > 0) {
      std::vector<double> gain(cand_list.size(), 0.0);
      for (size_t i = 0; i < remote.size(); ++i)
        if (!covered[i])
          for (size_t h : remote[i].holders) gain[h] += remote[i].rows;
      size_t best = SIZE_MAX;
      for (size_t h = 0; h < cand_list.size(); ++h) {
        if (gain[h] <= 0) continue;
        if (best == SIZE_MAX || gain[h] > gain[best] ||
            (gain[h] == gain[best] && finish(h, gain[h]) < finish(best, gain[best])))
          best = h;
      }
      chosen[best] = true;
      for (size_t i = 0; i < remote.size(); ++i)
        if (!covered[i] && std::count(remote[i].holders.begin(), remote[i].holders.end(), best)) {
          covered[i] = true;
          --left;
        }
    }
  }
  // 2. Balance: each item (largest first) to the chosen holder that would
  //    finish it soonest.
  std::vector<double> placed(cand_list.size(), 0.0);  // rows this plan gives each holder
  for (Remote& r : remote) {
    for (size_t h : r.holders) {
      if (!chosen[h]) continue;
      if (r.at == SIZE_MAX || finish(h, placed[h] + r.rows) < finish(r.at, placed[r.at] + r.rows)) r.at = h;
    }
    placed[r.at] += r.rows;
  }
  // 3. Improve: while moving one item off the holder that finishes last
  //    shortens the round by more than the cost of any call it opens, move
  //    the item that shortens it most. Bounded: each move lowers the cost.
  auto makespan = [&] {
    double m = 0;
    for (size_t h = 0; h < cand_list.size(); ++h)
      if (placed[h] > 0) m = std::max(m, finish(h, placed[h]));
    return m;
  };
  for (size_t guard = 0; guard < 4 * remote.size() + 4; ++guard) {
    const double before = makespan();
    double best_gain = 1e-9;
    Remote* move = nullptr;
    size_t move_to = SIZE_MAX;
    for (Remote& r : remote) {
      if (finish(r.at, placed[r.at]) < before) continue;  // not on a holder that finishes last
      for (size_t h : r.holders) {
        if (h == r.at) continue;
        placed[r.at] -= r.rows;
        placed[h] += r.rows;
        const double gain = before - makespan() - (placed[h] == r.rows ? in.call_cost_ms : 0.0);
        placed[h] -= r.rows;
        placed[r.at] += r.rows;
        if (gain >= best_gain) {  // ties: the later (smaller) item moves
          best_gain = gain;
          move = &r;
          move_to = h;
        }
      }
    }
    if (!move) break;
    placed[move->at] -= move->rows;
    placed[move_to] += move->rows;
    move->at = move_to;
  }
  for (const Remote& r : remote) {
    Candidate& c = *cand_list[r.at];
    c.batch.rows += r.item->tokens.size();
    c.batch.items.push_back(*r.item);
  }
  for (size_t h = 0; h < cand_list.size(); ++h)
    if (placed[h] > 0) cand_list[h]->batch.estimated_ms = finish(h, placed[h]);
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
