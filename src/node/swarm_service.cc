#include "node/swarm_service.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include <spdlog/spdlog.h>

#include "catalog/catalog.h"
#include "catalog/expert_bytes.h"
#include "net/client.h"
#include "net/json_http.h"
#include "node/moe_services.h"
#include "node/node.h"
#include "swarm/dht_transport.h"
#include "swarm/rebalance.h"
#include "swarm/shard_map.h"

namespace tenzro::node {

namespace {

using nlohmann::json;

// "q4_K/q4_K/q6_K" -> the three names (missing parts stay empty).
std::array<std::string, 3> SplitFormats(const std::string& f) {
  std::array<std::string, 3> out;
  size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    size_t end = f.find('/', start);
    out[i] = f.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  for (auto& s : out) {
    if (s.empty()) s = "?";
  }
  return out;
}

// What the node holds, grouped per model, plus the blobs it prepared.
std::vector<swarm::Declaration> Holdings(Node& node, holder::ExpertRuntime& rt, swarm::SwarmAgent* agent) {
  std::map<std::string, swarm::Declaration> by_model;
  std::set<std::string> held_hashes;
  for (const holder::ExpertRuntime::Holding& h : rt.Holdings()) {
    swarm::Declaration& d = by_model[h.model];
    d.model = h.model;
    if (!h.blob_hash.empty()) {
      held_hashes.insert(h.blob_hash);
      agent->Provide(h.blob_hash);
    }
    if (h.expert < 0) {
      d.gates.push_back({h.layer, h.blob_hash});
      continue;
    }
    auto f = SplitFormats(h.formats);
    d.experts.push_back(swarm::HeldExpert{h.layer, h.expert, f[0], f[1], f[2], h.blob_hash,
                                          h.warm ? swarm::Tier::kWarm : swarm::Tier::kCold, 0});
  }
  // Blobs prepared here: offered, so others can adopt uncovered experts.
  for (const JobInfo& j : node.jobs().List()) {
    if (j.state != JobState::kDone || !j.result.is_object()) continue;
    const json& r = j.result;
    if (j.kind == kPrepareDenseJobKind) {  // a spine blob: provided, not an expert offer
      if (r.contains("hash") && r["hash"].is_string()) agent->Provide(r["hash"].get<std::string>());
      continue;
    }
    if (j.kind != kPrepareJobKind) continue;
    if (!r.contains("model_id") || !r["model_id"].is_string() || !r.contains("layer") ||
        !r["layer"].is_number_integer())
      continue;
    const std::string model = r["model_id"].get<std::string>();
    const int layer = r["layer"].get<int>();
    auto add = [&](int expert, const json& one) {
      if (!one.is_object() || !one.contains("hash") || !one["hash"].is_string()) return;
      const std::string hash = one["hash"].get<std::string>();
      agent->Provide(hash);
      if (held_hashes.count(hash)) return;
      swarm::Declaration& d = by_model[model];
      d.model = model;
      d.offers.push_back({layer, expert, hash});
    };
    if (r.contains("experts") && r["experts"].is_array()) {
      for (const json& e : r["experts"]) {
        if (e.is_object() && e.contains("expert") && e["expert"].is_number_integer()) add(e["expert"].get<int>(), e);
      }
    }
    if (r.contains("gate")) add(-1, r["gate"]);
  }
  const auto st = rt.cache().stats();
  std::vector<swarm::Declaration> out;
  for (auto& [m, d] : by_model) {
    d.memory_budget = st.budget_bytes;
    d.free_bytes = st.budget_bytes == 0 ? 0 : st.budget_bytes - std::min(st.budget_bytes, st.warm_bytes);
    out.push_back(std::move(d));
  }
  return out;
}

// The HTTP endpoint peers reach this node at.
std::string AdvertisedHttp(Node& node) {
  net::Endpoint ep = node.http_endpoint();
  std::string host = node.config().advertise;
  if (host.empty()) host = ep.host;
  if (host == "0.0.0.0" || host == "::") {
    spdlog::warn("swarm: http listens on {} and no --advertise host is set; advertising 127.0.0.1", host);
    host = "127.0.0.1";
  }
  return net::Endpoint{host, ep.port}.Url();
}

// Measured round trip to a peer's /v1/health (cached 30 s); -1 if unreachable.
double PeerRttMs(SwarmState& st, const std::string& url, std::chrono::milliseconds timeout) {
  const int64_t now = swarm::UnixMillis();
  {
    std::lock_guard<std::mutex> lock(st.rtt_mu);
    auto it = st.rtt.find(url);
    if (it != st.rtt.end() && now - it->second.second < 30000) return it->second.first;
  }
  double ms = -1;
  if (auto ep = net::ParseEndpoint(url); ep) {
    net::ClientOptions o;
    o.connect_timeout = timeout;
    o.timeout = timeout;
    net::HttpClient c(*ep, o);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c.Send("GET", "/v1/health");
    if (r && r->ok()) ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  std::lock_guard<std::mutex> lock(st.rtt_mu);
  if (st.rtt.size() >= SwarmState::kMaxRtt && !st.rtt.count(url)) {
    for (auto it = st.rtt.begin(); it != st.rtt.end();)
      it = now - it->second.second >= 30000 ? st.rtt.erase(it) : std::next(it);
    if (st.rtt.size() >= SwarmState::kMaxRtt) st.rtt.erase(st.rtt.begin());
  }
  st.rtt[url] = {ms, now};
  return ms;
}

}  // namespace

Result<catalog::ResolvedShape> ShapeFor(Node& node, const manifest::TrustStore* trust, const std::string& model) {
  auto rs = catalog::ResolveShape(model, std::nullopt, node.data_dir());
  if (!rs && rs.error().code() == ErrorCode::kNotFound && trust)
    if (auto s = trust->Shape(model)) return catalog::ResolvedShape{std::move(*s), catalog::ShapeSource::kManifest};
  if (!rs && rs.error().code() == ErrorCode::kNotFound)
    return Error::NotFound(
        "unknown model '{}': its shape is in neither the catalog, the built-in table nor a trusted manifest",
        model.substr(0, 200));
  return rs;
}

Result<std::shared_ptr<const std::string>> SnapshotShardMapJson(Node& node, SwarmState& st, const std::string& model) {
  std::shared_ptr<const swarm::LiveSnapshot> snap = st.agent->Snapshot(model);
  if (!snap)
    return Error::NotFound("unknown model '{}': not one this node holds, declares or was asked for by its operator",
                           model.substr(0, 200));
  {
    std::lock_guard<std::mutex> lock(st.map_mu);
    auto it = st.maps.find(model);
    if (it != st.maps.end() && it->second.generation == snap->generation) {
      if (it->second.error) return *it->second.error;
      return it->second.json;
    }
  }
  auto cache = [&](std::shared_ptr<const std::string> text, std::optional<Error> error) {
    std::lock_guard<std::mutex> lock(st.map_mu);
    // Bounded by the agent's watched models: entries of models it dropped go.
    if (st.maps.size() >= 2 * st.agent->WatchedModels().size() + 1) {
      const std::vector<std::string> watched = st.agent->WatchedModels();
      for (auto it = st.maps.begin(); it != st.maps.end();)
        it = std::binary_search(watched.begin(), watched.end(), it->first) ? std::next(it) : st.maps.erase(it);
    }
    st.maps[model] = SwarmState::CachedMap{snap->generation, std::move(text), std::move(error)};
  };
  auto rs = ShapeFor(node, st.trust.get(), model);
  if (!rs) {
    cache(nullptr, rs.error());
    return rs.error();
  }
  if (snap->read_ms == 0)
    return Error::Unavailable("the swarm has not been read for '{}' yet{}{}", model, snap->error.empty() ? "" : ": ",
                              snap->error);
  TENZRO_TRY(swarm::ShardMap map, swarm::BuildShardMap(rs->shape, snap->live, swarm::ShardMapOptions{}));
  json j = swarm::ShardMapToJson(map);
  j["shape_source"] = std::string(catalog::ShapeSourceName(rs->source));
  j["read_ms"] = snap->read_ms;
  if (!snap->error.empty()) j["read_error"] = snap->error;
  auto text = std::make_shared<const std::string>(j.dump());
  cache(text, std::nullopt);
  return std::shared_ptr<const std::string>(text);
}

std::vector<transfer::BlobSource> BlobProviderSources(SwarmState& st, const std::string& hash) {
  auto recs = st.agent->FindProviders(hash);
  if (!recs) {
    spdlog::warn("swarm: provider lookup for {} failed: {}", hash, recs.error().ToString());
    return {};
  }
  std::vector<transfer::BlobSource> sources;
  for (const auto& r : *recs)
    for (const auto& ep : r.endpoints)
      if (ep.kind == "http" || ep.kind == "quic") sources.push_back({ep.kind, ep.address, r.node_id});
  // HTTP endpoints are probed (GET /v1/health); QUIC ones rank after every
  // HTTP endpoint that answered.
  auto probe = [&st](const transfer::BlobSource& s, std::chrono::milliseconds timeout) -> std::optional<double> {
    if (s.kind != "http") return std::nullopt;
    const double ms = PeerRttMs(st, s.address, timeout);
    return ms < 0 ? std::nullopt : std::optional<double>(ms);
  };
  return transfer::RankSources(std::move(sources), probe);
}

Result<std::shared_ptr<SwarmState>> StartSwarm(Node& node, std::shared_ptr<holder::ExpertRuntime> rt,
                                               const std::optional<std::string>& quic_address,
                                               std::function<void(swarm::Declaration&)> screen) {
  const NodeConfig& cfg = node.config();
  TENZRO_TRY(identity::Identity id, identity::LoadOrCreateIdentity(cfg.data_dir));
  swarm::DhtOptions dopt;
  dopt.bind_host = cfg.dht_host;
  dopt.port = cfg.dht_port;
  dopt.bootstrap = cfg.bootstrap;
  TENZRO_TRY(std::unique_ptr<swarm::DhtTransport> dht, swarm::DhtTransport::Start(dopt));
  auto st = std::make_shared<SwarmState>();
  st->dht = std::move(dht);
  st->runtime = std::move(rt);
  swarm::AgentOptions aopt;
  aopt.refresh = std::chrono::milliseconds(cfg.swarm_refresh_ms);
  aopt.ttl_s = cfg.swarm_ttl_s;
  aopt.screen = std::move(screen);
  std::vector<swarm::Endpoint> eps = {{"http", AdvertisedHttp(node)}};
  if (quic_address) eps.push_back({"quic", *quic_address});
  Node* n = &node;
  st->agent = std::make_shared<swarm::SwarmAgent>(st->dht, std::move(id), std::move(eps), aopt, [n, s = st.get()] {
    return Holdings(*n, *s->runtime, s->agent.get());
  });
  spdlog::info("swarm: node id {} DHT udp {}:{} bootstrap [{}]", st->agent->node_id(), cfg.dht_host,
               st->dht->port(), fmt::join(cfg.bootstrap, ", "));
  return st;
}

namespace {

Result<double> QueryDouble(const net::Request& r, std::string_view key, double def) {
  auto v = r.QueryParam(key);
  if (!v) return def;
  char* end = nullptr;
  std::string s(*v);
  double x = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(x))
    return Error::InvalidArgument("query parameter {}='{}' is not a number", key, s);
  return x;
}

Result<std::string> QueryModel(const net::Request& r) {
  auto m = r.QueryParam("model");
  if (!m || m->empty()) return Error::InvalidArgument("query parameter 'model' is required");
  return catalog::NormalizeModelId(*m);
}

struct ShardMapQuery {
  swarm::ShardMap map;
  std::vector<swarm::Declaration> live;
  std::string shape_source;
};

// Admin: the operator asked for `model`, so the agent watches it from now on.
Result<ShardMapQuery> QueryShardMap(Node& node, SwarmState& st, const std::string& model, int min_providers,
                                    double hot_tps) {
  ShardMapQuery q;
  TENZRO_TRY(catalog::ResolvedShape rs, ShapeFor(node, st.trust.get(), model));  // before any DHT read
  const catalog::ModelShape& shape = rs.shape;
  q.shape_source = std::string(catalog::ShapeSourceName(rs.source));
  st.agent->Watch(model);
  TENZRO_TRY(q.live, st.agent->Live(model));
  swarm::ShardMapOptions o;
  o.min_providers = min_providers;
  o.hot_tps = hot_tps;
  TENZRO_TRY(q.map, swarm::BuildShardMap(shape, q.live, o));
  return q;
}

net::Response Answer(const Result<json>& r) {
  if (!r) return net::ErrorResponse(r.error());
  return net::JsonResponse(*r);
}

Result<json> Rebalance(Node& node, SwarmState& st, const json& body) {
  if (!body.contains("model") || !body["model"].is_string())
    return Error::InvalidArgument("request: missing field 'model'");
  TENZRO_TRY(std::string model, catalog::NormalizeModelId(body["model"].get<std::string>()));
  const bool apply = body.value("apply", false);
  const int min_providers = body.value("min_providers", 2);
  const double hot_tps = body.value("hot_tps", 10.0);
  const int64_t max_adopt = body.value("max", int64_t{-1});
  TENZRO_TRY(ShardMapQuery q, QueryShardMap(node, st, model, min_providers, hot_tps));
  holder::ExpertRuntime* rt = st.runtime.get();
  const auto cs = rt->cache().stats();
  swarm::RebalanceInput in;
  in.self_node_id = st.agent->node_id();
  in.memory_budget = cs.budget_bytes;
  in.free_bytes = cs.budget_bytes == 0 ? 0 : cs.budget_bytes - std::min(cs.budget_bytes, cs.warm_bytes);
  if (max_adopt >= 0) in.max_adopt = static_cast<size_t>(max_adopt);
  // One expert's size: what this node already holds, else the shape's q4_k_m.
  for (const auto& e : rt->cache().List()) {
    if (e.key.model == model) {
      in.expert_bytes = std::max(in.expert_bytes, e.bytes);
    }
  }
  if (in.expert_bytes == 0) {
    if (auto rs = catalog::ResolveShape(model, std::nullopt, node.data_dir()); rs) {
      if (auto t = catalog::FormatTypes(rs->shape, "q4_k_m", 0); t)
        if (auto b = catalog::ExpertBytes(rs->shape.n_embd, rs->shape.n_ff_exp, *t); b) in.expert_bytes = *b;
    }
  }
  swarm::RebalancePlan plan = swarm::PlanRebalance(q.map, q.live, in);
  json out = swarm::RebalancePlanToJson(plan);
  out["model"] = model;
  out["node_id"] = in.self_node_id;
  out["expert_bytes_estimate"] = in.expert_bytes;
  out["free_bytes"] = in.free_bytes;
  out["memory_budget"] = in.memory_budget;
  out["applied"] = apply;
  if (!apply) return out;
  json results = json::array();
  int loaded = 0;
  for (const swarm::Adoption& a : plan.adopt) {
    holder::LoadSource src;
    src.file = "tenzro://blob/" + a.blob_hash;
    // The holders/offerers named in the declarations first, then whatever
    // provider lookup finds (ExpertRuntime falls back to it when from is "").
    json one = {{"layer", a.layer}, {"expert", a.expert}, {"blob", a.blob_hash}};
    Result<json> r = Error::NotFound("no source");
    for (const auto& [id, eps] : a.sources) {
      for (const auto& ep : eps) {
        if (ep.kind != "http") continue;
        src.from = ep.address;
        r = rt->LoadExpert(model, a.layer, a.expert, src);
        if (r) break;
      }
      if (r) break;
    }
    if (!r) {
      src.from.clear();
      r = rt->LoadExpert(model, a.layer, a.expert, src);
    }
    if (r) {
      ++loaded;
      one["ok"] = true;
      one["tier"] = (*r).value("tier", "");
      one["fetched_from"] = (*r).value("fetched_from", "");
    } else {
      one["ok"] = false;
      one["error"] = r.error().ToString();
    }
    results.push_back(std::move(one));
  }
  out["results"] = results;
  out["loaded"] = loaded;
  if (loaded > 0) {
    if (auto p = st.agent->Publish(); !p) out["publish_error"] = p.error().ToString();
  }
  return out;
}

}  // namespace

Result<void> AddSwarmService(Node& node, std::shared_ptr<SwarmState> st) {
  node.AddInfo("node_id", [st] { return json(st->agent->node_id()); });
  node.AddInfo("dht_port", [st] { return json(st->dht->port()); });
  node.AddInfo("dht", [st, &node] {
    return json{{"host", node.config().dht_host}, {"port", st->dht->port()}, {"bootstrap", node.config().bootstrap}};
  });
  node.OnStop([st] {
    spdlog::info("swarm: announcing leaving");
    st->agent->Stop(/*announce_leaving=*/true);
  });

  node.AddMetrics([st](std::string& out) {
    const auto ds = st->dht->stats();
    out += fmt::format(
        "# HELP tenzro_dht_peers DHT nodes known, by state.\n# TYPE tenzro_dht_peers gauge\n"
        "tenzro_dht_peers{{state=\"good\"}} {}\ntenzro_dht_peers{{state=\"dubious\"}} {}\n",
        ds.good_nodes, ds.dubious_nodes);
    json s = st->agent->Stats();
    out += "# HELP tenzro_declarations_seen_total Declaration records read from the DHT, by outcome.\n"
           "# TYPE tenzro_declarations_seen_total counter\n";
    for (const auto& [outcome, n] : s["ingest"].items())
      out += fmt::format("tenzro_declarations_seen_total{{outcome=\"{}\"}} {}\n", outcome, n.get<uint64_t>());
    out += fmt::format(
        "# HELP tenzro_declarations_published_total Declaration publishes of this node.\n"
        "# TYPE tenzro_declarations_published_total counter\ntenzro_declarations_published_total {}\n"
        "# HELP tenzro_declaration_publish_errors_total Failed publishes.\n"
        "# TYPE tenzro_declaration_publish_errors_total counter\ntenzro_declaration_publish_errors_total {}\n"
        "# HELP tenzro_blobs_provided Blobs this node announces as provider.\n"
        "# TYPE tenzro_blobs_provided gauge\ntenzro_blobs_provided {}\n",
        s.value("published", uint64_t{0}), s.value("publish_errors", uint64_t{0}), s.value("providing", uint64_t{0}));
    const json& reads = s["declaration_reads"];
    out += fmt::format(
        "# HELP tenzro_declaration_reads_total DHT reads of a model's declarations, by reader: request (admin "
        "routes, the dispatcher) or snapshot (the agent's refresh of the models it watches).\n"
        "# TYPE tenzro_declaration_reads_total counter\n"
        "tenzro_declaration_reads_total{{by=\"request\"}} {}\ntenzro_declaration_reads_total{{by=\"snapshot\"}} {}\n"
        "# HELP tenzro_swarm_watched_models Models whose live declarations the agent keeps a snapshot of.\n"
        "# TYPE tenzro_swarm_watched_models gauge\ntenzro_swarm_watched_models {}\n",
        reads.value("request", uint64_t{0}), reads.value("snapshot", uint64_t{0}), s.value("watched", uint64_t{0}));
  });
  ThreadPool* pool = &node.pool();
  net::Router& r = node.admin_router();
  r.Add("GET", "/v1/swarm/info", [st](const net::Request&) {
    json j = st->agent->Stats();
    const auto ds = st->dht->stats();
    json eps = json::array();
    for (const auto& e : st->agent->endpoints()) eps.push_back({{"kind", e.kind}, {"addr", e.address}});
    j["endpoints"] = eps;
    j["dht"] = {{"port", st->dht->port()}, {"good_nodes", ds.good_nodes}, {"dubious_nodes", ds.dubious_nodes},
                {"incoming_nodes", ds.incoming_nodes}};
    j["models"] = st->agent->KnownModels();
    return net::JsonResponse(j);
  });
  r.AddOnPool("GET", "/v1/swarm/declarations", pool, [st](const net::Request& http) {
    return Answer([&]() -> Result<json> {
      TENZRO_TRY(std::string model, QueryModel(http));
      st->agent->Watch(model);  // the operator asked: watched (bounded, LRU)
      TENZRO_TRY(auto live, st->agent->Live(model));
      json arr = json::array();
      for (const auto& d : live) arr.push_back(swarm::DeclarationToJson(d));
      return json{{"model", model}, {"declarations", arr}};
    }());
  });
  r.AddOnPool("GET", "/v1/swarm/shard-map", pool, [st, &node](const net::Request& http) {
    auto q = [&]() -> Result<ShardMapQuery> {
      TENZRO_TRY(std::string model, QueryModel(http));
      TENZRO_TRY(double minp, QueryDouble(http, "min_providers", 2));
      TENZRO_TRY(double hot, QueryDouble(http, "hot_tps", 10));
      if (minp < 1 || minp > 1000 || minp != static_cast<int>(minp))
        return Error::InvalidArgument("min_providers must be an integer in 1..1000");
      return QueryShardMap(node, *st, model, static_cast<int>(minp), hot);
    }();
    if (!q) return net::ErrorResponse(q.error());
    if (http.QueryParam("format").value_or("") == "svg") {
      net::Response resp;
      resp.content_type = "image/svg+xml";
      resp.body = swarm::ShardMapToSvg(q->map);
      return resp;
    }
    json j = swarm::ShardMapToJson(q->map);
    j["shape_source"] = q->shape_source;
    return net::JsonResponse(j);
  });
  r.AddOnPool("GET", "/v1/swarm/providers", pool, [st](const net::Request& http) {
    return Answer([&]() -> Result<json> {
      auto h = http.QueryParam("hash");
      if (!h || h->empty()) return Error::InvalidArgument("query parameter 'hash' is required");
      TENZRO_TRY(auto recs, st->agent->FindProviders(*h));
      json arr = json::array();
      for (const auto& p : recs) {
        json eps = json::array();
        for (const auto& e : p.endpoints) eps.push_back({{"kind", e.kind}, {"addr", e.address}});
        arr.push_back({{"node_id", p.node_id}, {"endpoints", eps}, {"ts_ms", p.timestamp_ms}, {"ttl_s", p.ttl_s}});
      }
      return json{{"hash", *h}, {"providers", arr}};
    }());
  });
  r.AddOnPool("POST", "/v1/swarm/publish", pool, [st](const net::Request&) {
    return Answer([&]() -> Result<json> {
      TENZRO_CHECK_OK(st->agent->Publish());
      return st->agent->Stats();
    }());
  });
  r.AddOnPool("POST", "/v1/moe/rebalance", pool, [st, &node](const net::Request& http) {
    auto body = net::ParseJsonBody(http.body);
    if (!body) return net::ErrorResponse(body.error());
    return Answer(Rebalance(node, *st, *body));
  });
  st->agent->Start();
  return Ok();
}

}  // namespace tenzro::node
