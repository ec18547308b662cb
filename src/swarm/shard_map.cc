#include "swarm/shard_map.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

namespace tenzro::swarm {

using nlohmann::json;

int64_t ShardMap::Find(int layer, int expert) const {
  int64_t offset = 0;
  for (const auto& l : layers) {
    if (l.layer == layer) return expert >= 0 && expert < l.n_expert ? offset + expert : -1;
    offset += l.n_expert;
  }
  return -1;
}

Result<ShardMap> BuildShardMap(const catalog::ModelShape& shape, std::span<const Declaration> live,
                               const ShardMapOptions& options) {
  if (options.min_providers < 1) return Error::InvalidArgument("shard map: min_providers must be >= 1");
  if (!std::isfinite(options.hot_tps) || options.hot_tps < 0) {
    return Error::InvalidArgument("shard map: hot_tps must be a finite number >= 0");
  }
  ShardMap m;
  m.model = shape.id;
  m.options = options;
  for (size_t i = 0; i < shape.layers.size(); ++i) {
    const auto& l = shape.layers[i];
    if (l.n_expert <= 0) continue;
    m.layers.push_back({static_cast<int>(i), l.n_expert, 0});
    for (int e = 0; e < l.n_expert; ++e) m.experts.push_back({static_cast<int>(i), e, 0, 0, {}});
  }
  m.total_experts = m.experts.size();

  std::vector<std::set<std::string>> holders_of(m.experts.size());
  std::map<std::string, HolderSummary> holders;
  std::map<std::string, std::set<int64_t>> held_by;   // node -> expert indices
  std::map<std::string, std::set<int>> gates_by;      // node -> gate layers
  for (const Declaration& d : live) {
    if (d.model != shape.id || d.state == HolderState::kLeaving) continue;
    HolderSummary& h = holders[d.node_id];
    if (h.node_id.empty() || d.seq > h.seq) {  // scalar fields from the newest part
      h.node_id = d.node_id;
      h.state = d.state;
      h.endpoints = d.endpoints;
      h.memory_budget = d.memory_budget;
      h.free_bytes = d.free_bytes;
      h.seq = d.seq;
      h.parts_declared = static_cast<int>(d.parts);
    }
    h.parts_seen++;
    for (const HeldExpert& x : d.experts) {
      int64_t idx = m.Find(x.layer, x.expert);
      if (idx < 0) {
        m.ignored_entries++;
        continue;
      }
      holders_of[idx].insert(d.node_id);
      m.experts[idx].tps += x.served_tps;
      h.tps += x.served_tps;
      held_by[d.node_id].insert(idx);
    }
    for (const HeldGate& g : d.gates) {
      if (g.layer < 0 || g.layer >= shape.n_layer) {
        m.ignored_entries++;
        continue;
      }
      gates_by[d.node_id].insert(g.layer);
    }
  }
  for (size_t i = 0; i < m.experts.size(); ++i) {
    auto& x = m.experts[i];
    x.holders.assign(holders_of[i].begin(), holders_of[i].end());
    x.replicas = static_cast<int>(x.holders.size());
    if (x.replicas > 0) {
      m.covered_experts++;
      for (auto& l : m.layers) {
        if (l.layer == x.layer) l.covered++;
      }
    }
    if (x.tps > options.hot_tps) m.hot.push_back(i);
    if (x.replicas < options.min_providers) m.under_replicated.push_back(i);
  }
  std::stable_sort(m.hot.begin(), m.hot.end(), [&](size_t a, size_t b) { return m.experts[a].tps > m.experts[b].tps; });
  for (auto& [id, h] : holders) {
    h.experts = static_cast<int>(held_by[id].size());
    h.gates = static_cast<int>(gates_by[id].size());
    m.holders.push_back(std::move(h));
  }
  return m;
}

namespace {

json ExpertRef(const ExpertReplication& x) {
  return json{{"layer", x.layer}, {"expert", x.expert}, {"replicas", x.replicas}, {"tps", x.tps}};
}

}  // namespace

json ShardMapToJson(const ShardMap& m) {
  json layers = json::array(), experts = json::array(), hot = json::array(), under = json::array(),
       holders = json::array();
  for (const auto& l : m.layers) {
    layers.push_back({{"layer", l.layer},
                      {"n_expert", l.n_expert},
                      {"covered", l.covered},
                      {"coverage", l.n_expert ? double(l.covered) / l.n_expert : 0.0}});
  }
  for (const auto& x : m.experts) {
    json j = ExpertRef(x);
    j["holders"] = x.holders;
    experts.push_back(std::move(j));
  }
  for (size_t i : m.hot) hot.push_back(ExpertRef(m.experts[i]));
  for (size_t i : m.under_replicated) under.push_back(ExpertRef(m.experts[i]));
  for (const auto& h : m.holders) {
    json eps = json::array();
    for (const auto& e : h.endpoints) eps.push_back({{"kind", e.kind}, {"addr", e.address}});
    holders.push_back({{"node_id", h.node_id},
                       {"state", HolderStateName(h.state)},
                       {"endpoints", std::move(eps)},
                       {"memory_budget", h.memory_budget},
                       {"free_bytes", h.free_bytes},
                       {"seq", h.seq},
                       {"parts_seen", h.parts_seen},
                       {"parts_declared", h.parts_declared},
                       {"experts", h.experts},
                       {"gates", h.gates},
                       {"tps", h.tps}});
  }
  return json{{"model", m.model},
              {"min_providers", m.options.min_providers},
              {"hot_tps", m.options.hot_tps},
              {"total_experts", m.total_experts},
              {"covered_experts", m.covered_experts},
              {"coverage", m.total_experts ? double(m.covered_experts) / m.total_experts : 0.0},
              {"ignored_entries", m.ignored_entries},
              {"layers", std::move(layers)},
              {"experts", std::move(experts)},
              {"hot", std::move(hot)},
              {"under_replicated", std::move(under)},
              {"holders", std::move(holders)}};
}

std::string ShardMapToSvg(const ShardMap& m) {
  int max_experts = 0;
  for (const auto& l : m.layers) max_experts = std::max(max_experts, l.n_expert);
  const int cell = max_experts > 128 ? 4 : 12;
  const int left = 40, top = 24;
  const int width = left + max_experts * cell + 8;
  const int height = top + static_cast<int>(m.layers.size()) * cell + 8;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">\n"
      "<title>shard map {}: {} of {} experts covered, min providers {}</title>\n"
      "<text x=\"2\" y=\"14\" font-size=\"11\" font-family=\"monospace\">{} coverage {}/{}</text>\n",
      width, height, width, height, m.model, m.covered_experts, m.total_experts, m.options.min_providers, m.model,
      m.covered_experts, m.total_experts);
  std::set<size_t> hot(m.hot.begin(), m.hot.end());
  size_t idx = 0;
  for (size_t row = 0; row < m.layers.size(); ++row) {
    const int y = top + static_cast<int>(row) * cell;
    out += fmt::format("<text x=\"2\" y=\"{}\" font-size=\"{}\" font-family=\"monospace\">L{}</text>\n",
                       y + cell - 1, std::min(cell, 10), m.layers[row].layer);
    for (int e = 0; e < m.layers[row].n_expert; ++e, ++idx) {
      const ExpertReplication& x = m.experts[idx];
      const int cx = left + e * cell;
      std::string fill;
      if (x.replicas == 0) {
        fill = "#d62728";
      } else if (x.replicas < m.options.min_providers) {
        fill = "#ffbf00";
      } else {
        // Darker green with more replicas, saturating at 4x the policy.
        double t = std::min(1.0, double(x.replicas - m.options.min_providers) / (3.0 * m.options.min_providers));
        int g = static_cast<int>(200 - 110 * t);
        fill = fmt::format("#2c{:02x}2c", g);
      }
      out += fmt::format(
          "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>L{} E{}: {} "
          "replicas, {:.3g} tok/s</title></rect>\n",
          cx, y, cell, cell, fill, x.layer, x.expert, x.replicas, x.tps);
      if (x.replicas == 0) {
        out += fmt::format("<path class=\"uncovered\" d=\"M{} {}L{} {}M{} {}L{} {}\" stroke=\"#000\" stroke-width=\"1\"/>\n",
                           cx, y, cx + cell, y + cell, cx + cell, y, cx, y + cell);
      }
      if (hot.count(idx)) {
        out += fmt::format("<circle class=\"hot\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"none\" stroke=\"#9400d3\" stroke-width=\"1.5\"/>\n",
                           cx + cell / 2.0, y + cell / 2.0, cell / 2.0 - 1);
      }
    }
  }
  out += "</svg>\n";
  return out;
}

}  // namespace tenzro::swarm
