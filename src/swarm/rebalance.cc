#include "swarm/rebalance.h"

#include <algorithm>
#include <map>
#include <set>

namespace tenzro::swarm {

namespace {

struct Sources {
  std::string hash;
  std::vector<std::pair<std::string, std::vector<Endpoint>>> nodes;
  std::set<std::string> seen;
  void Add(const Declaration& d, const std::string& h) {
    if (hash.empty()) hash = h;
    if (h != hash || !seen.insert(d.node_id).second) return;
    nodes.emplace_back(d.node_id, d.endpoints);
  }
};

}  // namespace

RebalancePlan PlanRebalance(const ShardMap& map, std::span<const Declaration> live, const RebalanceInput& in) {
  // Where each expert's blob can come from: holders first, then offers.
  std::map<std::pair<int, int>, Sources> sources;
  std::set<std::pair<int, int>> mine;
  for (const Declaration& d : live) {
    if (d.model != map.model || d.state == HolderState::kLeaving) continue;
    for (const HeldExpert& e : d.experts) {
      if (d.node_id == in.self_node_id) mine.insert({e.layer, e.expert});
      if (!e.blob_hash.empty()) sources[{e.layer, e.expert}].Add(d, e.blob_hash);
    }
  }
  for (const Declaration& d : live) {
    if (d.model != map.model || d.state == HolderState::kLeaving) continue;
    for (const OfferedBlob& o : d.offers) {
      if (o.expert >= 0 && !o.blob_hash.empty()) sources[{o.layer, o.expert}].Add(d, o.blob_hash);
    }
  }

  struct Candidate {
    int rank;       // 0 uncovered, 1 under-replicated, 2 hot
    double key;     // within rank: smaller first
    size_t index;   // into map.experts
  };
  std::vector<Candidate> cands;
  std::set<size_t> taken;
  RebalancePlan plan;
  for (size_t i : map.under_replicated) {
    const ExpertReplication& r = map.experts[i];
    if (mine.count({r.layer, r.expert})) continue;
    if (r.replicas == 0 && !sources.count({r.layer, r.expert})) {
      plan.unavailable.emplace_back(r.layer, r.expert);
      continue;
    }
    cands.push_back({r.replicas == 0 ? 0 : 1, static_cast<double>(r.replicas), i});
    taken.insert(i);
  }
  for (size_t i : map.hot) {
    const ExpertReplication& r = map.experts[i];
    if (taken.count(i) || mine.count({r.layer, r.expert}) || r.replicas == 0) continue;
    cands.push_back({2, -(r.tps / r.replicas), i});
  }
  std::stable_sort(cands.begin(), cands.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.key != b.key) return a.key < b.key;
    return a.index < b.index;  // row-major = (layer, expert)
  });

  uint64_t room = in.free_bytes;
  const bool bounded = in.memory_budget > 0 && in.expert_bytes > 0;
  for (const Candidate& c : cands) {
    const ExpertReplication& r = map.experts[c.index];
    Adoption a;
    a.layer = r.layer;
    a.expert = r.expert;
    a.reason = c.rank == 0 ? "uncovered" : c.rank == 1 ? "under_replicated" : "hot";
    a.replicas = r.replicas;
    a.tps = r.tps;
    auto s = sources.find({r.layer, r.expert});
    if (s != sources.end()) {
      a.blob_hash = s->second.hash;
      a.sources = s->second.nodes;
    }
    if (a.blob_hash.empty()) {
      plan.unavailable.emplace_back(r.layer, r.expert);
      continue;
    }
    if (plan.adopt.size() >= in.max_adopt || (bounded && in.expert_bytes > room)) {
      plan.skipped_budget.push_back(std::move(a));
      continue;
    }
    if (bounded) room -= in.expert_bytes;
    plan.adopt.push_back(std::move(a));
  }
  return plan;
}

nlohmann::json RebalancePlanToJson(const RebalancePlan& p) {
  using nlohmann::json;
  auto one = [](const Adoption& a) {
    json src = json::array();
    for (const auto& [id, eps] : a.sources) {
      json e = json::array();
      for (const auto& ep : eps) e.push_back({{"kind", ep.kind}, {"addr", ep.address}});
      src.push_back({{"node_id", id}, {"endpoints", e}});
    }
    return json{{"layer", a.layer}, {"expert", a.expert}, {"reason", a.reason}, {"replicas", a.replicas},
                {"tps", a.tps},     {"blob", a.blob_hash}, {"sources", src}};
  };
  json adopt = json::array(), skipped = json::array(), unavailable = json::array();
  for (const auto& a : p.adopt) adopt.push_back(one(a));
  for (const auto& a : p.skipped_budget) skipped.push_back(one(a));
  for (const auto& [l, e] : p.unavailable) unavailable.push_back({{"layer", l}, {"expert", e}});
  return {{"adopt", adopt}, {"skipped_budget", skipped}, {"unavailable", unavailable}};
}

}  // namespace tenzro::swarm
