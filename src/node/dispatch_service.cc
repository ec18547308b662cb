#include "node/dispatch_service.h"

#include <chrono>
#include <map>
#include <mutex>
#include <random>

#include "catalog/catalog.h"
#include "dispatch/dispatched_experts.h"
#include "dispatch/quic_executor.h"
#include "net/json_http.h"
#include "node/exec_service.h"
#include "node/node.h"
#include "node/node_metrics.h"
#include "node/quic_service.h"
#include "node/runtime_service.h"

namespace tenzro::node {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

net::Response Answer(const net::Request& http, const std::function<Result<json>(const json&)>& fn) {
  auto body = net::ParseJsonBody(http.body);
  if (!body) return net::ErrorResponse(body.error());
  auto r = fn(*body);
  if (!r) return net::ErrorResponse(r.error());
  return net::JsonResponse(*r);
}

}  // namespace

Result<dispatch::ForwardOptions> ParseForwardOptions(const json& b) {
  dispatch::ForwardOptions o;
  if (b.contains("on_missing") && !b["on_missing"].is_null()) {
    if (!b["on_missing"].is_string()) return Error::InvalidArgument("request: 'on_missing' must be a string");
    TENZRO_TRY(o.on_missing, dispatch::ParseOnMissing(b["on_missing"].get<std::string>()));
  }
  if (b.contains("wire_dtype") && !b["wire_dtype"].is_null()) {
    if (!b["wire_dtype"].is_string()) return Error::InvalidArgument("request: 'wire_dtype' must be a string");
    TENZRO_TRY(o.dtype, dispatch::ParseRowType(b["wire_dtype"].get<std::string>()));
  }
  if (b.contains("hedge") && !b["hedge"].is_null()) {
    if (!b["hedge"].is_boolean()) return Error::InvalidArgument("request: 'hedge' must be true or false");
    o.hedge = b["hedge"].get<bool>();
  }
  auto int_field = [&](const char* key, int64_t lo, int64_t hi, int64_t* out) -> Result<void> {
    if (!b.contains(key) || b[key].is_null()) return Ok();
    if (!b[key].is_number_integer() || b[key].get<int64_t>() < lo || b[key].get<int64_t>() > hi)
      return Error::InvalidArgument("request: '{}' must be an integer in [{}, {}]", key, lo, hi);
    *out = b[key].get<int64_t>();
    return Ok();
  };
  int64_t timeout = o.holder_timeout.count(), rounds = o.max_rounds;
  TENZRO_CHECK_OK(int_field("timeout_ms", 1, 600000, &timeout));
  TENZRO_CHECK_OK(int_field("max_rounds", 1, 10, &rounds));
  o.holder_timeout = std::chrono::milliseconds(timeout);
  o.max_rounds = static_cast<int>(rounds);
  return o;
}

// The seed is drawn once per process, so which results get checked cannot be
// predicted by a holder.
dispatch::SpotCheckOptions NodeSpotCheckOptions(const Node& node) {
  static const uint64_t seed = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  dispatch::SpotCheckOptions o;
  o.fraction = node.config().spot_check_fraction;
  o.tolerance = node.config().spot_check_tolerance;
  o.ban = std::chrono::seconds(node.config().spot_check_ban_s);
  o.seed = seed;
  return o;
}

namespace {

Result<json> ForwardDistributed(holder::ExpertRuntime& rt, dispatch::Dispatcher& d, const json& body,
                                const dispatch::SpotCheckOptions& spot) {
  const auto t0 = Clock::now();
  TENZRO_TRY(ForwardRequest fr, ParseForwardRequest(body));
  TENZRO_TRY(dispatch::ForwardOptions opt, ParseForwardOptions(body));
  opt.spot_check = spot;
  if (fr.n_tokens > (1 << 20)) return Error::InvalidArgument("n_tokens {} is over 1048576", fr.n_tokens);
  const int n_tok = static_cast<int>(fr.n_tokens);
  // The block with its routed experts through the dispatcher.
  if (auto st = runtime::CheckWireRow(opt.dtype, fr.d_model); !st)
    return Error::InvalidArgument("request: 'wire_dtype': {}", st.error().message());
  TENZRO_TRY(holder::ExpertRuntime::BlockGate g, rt.FindBlockGate(fr.model, fr.layer, fr.d_model));
  dispatch::DispatchedExperts routed(d, g.model, g.layer, opt);
  std::vector<float> out(fr.x.size());
  runtime::MoeBlockRun run;
  TENZRO_CHECK_OK(rt.RunBlock(g, fr.x.data(), n_tok, routed, out.data(), run));
  const dispatch::ForwardReport& rep = routed.report();
  const double total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  json rj = dispatch::ReportToJson(rep);
  json stages = {{"gate_ms", run.gate_ms},
                 {"shared_ms", run.shared_ms},
                 {"plan_ms", rj["plan_ms"]},
                 {"exec_ms", rj["exec_ms"]},
                 {"combine_ms", rj["combine_ms"]},
                 {"dispatch_ms", rj["total_ms"]},
                 {"total_ms", total_ms},
                 {"rounds", rj["rounds"]},
                 {"max_holder_compute_ms", rj["max_holder_compute_ms"]}};
  return json{{"model", g.model},
              {"layer", g.layer},
              {"n_tokens", n_tok},
              {"d_model", fr.d_model},
              {"distributed", true},
              {"on_missing", std::string(dispatch::OnMissingName(opt.on_missing))},
              {"wire_dtype", std::string(dispatch::RowTypeName(opt.dtype))},
              {"output_f32_b64",
               Base64Encode(ByteSpan(reinterpret_cast<const uint8_t*>(out.data()), out.size() * sizeof(float)))},
              {"routing", ForwardRoutingJson(run.routing, g.layer)},
              {"shared_expert", g.weights->shared.has_value()},
              {"elapsed_ms", total_ms},
              {"stages", stages},
              {"holders", rj["holders"]},
              {"dropped", rj["dropped"]},
              {"tokens_without_experts", rj["tokens_without_experts"]},
              {"spot_checks", rj["spot_checks"]}};
}

// Counts the forward into /metrics and the dashboard's recent forwards.
void RecordForward(const json& body, const Result<json>& r) {
  ForwardRecord rec;
  rec.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  const json& src = r ? *r : body;
  if (src.contains("model") && src["model"].is_string()) rec.model = src["model"].get<std::string>();
  if (src.contains("layer") && src["layer"].is_number_integer()) rec.layer = src["layer"].get<int>();
  if (src.contains("n_tokens") && src["n_tokens"].is_number_integer()) rec.n_tokens = src["n_tokens"].get<int64_t>();
  rec.ok = r.has_value();
  if (!r) rec.error = r.error().ToString().substr(0, 300);
  if (r) {
    const json& st = (*r)["stages"];
    for (const char* k : {"gate", "shared", "plan", "exec", "combine", "dispatch", "total"}) {
      const std::string key = std::string(k) + "_ms";
      if (st.contains(key) && st[key].is_number()) rec.stages_ms.emplace_back(k, st[key].get<double>());
    }
    rec.rounds = st.value("rounds", 0);
    for (const json& h : (*r)["holders"]) rec.transports.push_back(h.value("transport", ""));
  }
  ProcessMetrics().RecordForward(std::move(rec));
}

Result<json> PlanDispatch(dispatch::Dispatcher& d, const json& body) {
  if (!body.contains("model") || !body["model"].is_string())
    return Error::InvalidArgument("request: missing string field 'model'");
  TENZRO_TRY(std::string model, catalog::NormalizeModelId(body["model"].get<std::string>()));
  if (!body.contains("routings")) return Error::InvalidArgument("request: missing field 'routings'");
  TENZRO_TRY(std::vector<dispatch::TokenRoute> routes, dispatch::ParseRoutings(body["routings"]));
  TENZRO_TRY(dispatch::Plan plan, d.PlanWork(model, dispatch::GroupByExpert(routes)));
  json out = dispatch::PlanToJson(plan);
  out["model"] = model;
  out["self"] = d.self_node_id();
  out["n_tokens"] = routes.size();
  out["holder_stats"] = d.stats().ToJson(Clock::now());
  return out;
}

}  // namespace

std::shared_ptr<dispatch::Dispatcher> MakeNodeDispatcher(std::shared_ptr<holder::ExpertRuntime> rt,
                                                         std::shared_ptr<swarm::SwarmAgent> agent,
                                                         std::shared_ptr<dispatch::ExpertRunner> runner,
                                                         dispatch::ExecServeOptions exec_options,
                                                         std::shared_ptr<QuicState> quic, bool quic_http_fallback) {
  // HTTP URL of every holder the planner saw: the QUIC executor's fallback.
  struct HttpUrls {
    std::mutex mu;
    std::map<std::string, std::string> by_node;
  };
  auto urls = std::make_shared<HttpUrls>();
  dispatch::Dispatcher::Sources s;
  s.self_node_id = agent->node_id();
  s.live = [agent, urls](const std::string& model) -> Result<std::vector<swarm::Declaration>> {
    TENZRO_TRY(std::vector<swarm::Declaration> live, agent->Live(model));
    std::lock_guard<std::mutex> lock(urls->mu);
    for (const auto& d : live)
      for (const auto& e : d.endpoints)
        if (e.kind == "http") urls->by_node[d.node_id] = e.address;
    return live;
  };
  s.local = [rt](const std::string& model) {
    std::set<std::pair<int, int>> held;
    for (const auto& e : rt->cache().List())
      if (e.key.model == model) held.insert({e.key.layer, e.key.expert});
    return held;
  };
  // The local executor runs on the node's runner (which it keeps alive).
  struct LocalExec : dispatch::LocalExecutor {
    LocalExec(std::shared_ptr<dispatch::ExpertRunner> r, dispatch::ExecServeOptions o)
        : LocalExecutor(*r, std::move(o)), runner(std::move(r)) {}
    std::shared_ptr<dispatch::ExpertRunner> runner;
  };
  auto local = std::make_shared<LocalExec>(std::move(runner), std::move(exec_options));
  auto http = std::make_shared<dispatch::HttpExecutor>();
  // QUIC for holders that advertise it (when this node runs an endpoint),
  // falling back to HTTP when the QUIC call itself fails only with
  // --quic-http-fallback (it would downgrade an authenticated channel).
  // The executor keeps the node's QUIC state (endpoint and client) alive.
  struct QuicExec : dispatch::QuicExecutor {
    QuicExec(std::shared_ptr<QuicState> q, std::shared_ptr<dispatch::Executor> fallback,
             std::function<std::string(const std::string&)> http_of)
        : QuicExecutor(q->client.get(), std::move(fallback), std::move(http_of)), state(std::move(q)) {}
    std::shared_ptr<QuicState> state;
  };
  std::shared_ptr<dispatch::Executor> quic_exec;
  if (quic && quic->client) {
    quic_exec = std::make_shared<QuicExec>(std::move(quic), quic_http_fallback ? http : nullptr, [urls](const std::string& node_id) {
      std::lock_guard<std::mutex> lock(urls->mu);
      auto it = urls->by_node.find(node_id);
      return it == urls->by_node.end() ? std::string() : it->second;
    });
  }
  // Exec bytes per transport count into /metrics (node_metrics.h).
  auto d = std::make_shared<dispatch::Dispatcher>(std::move(s), CountingExecutor(local, "local"),
                                                  CountingExecutor(http, "http"), CountingExecutor(quic_exec, "quic"));
  return d;
}

Result<void> AddDispatchService(Node& node, std::shared_ptr<holder::ExpertRuntime> rt,
                                std::shared_ptr<dispatch::Dispatcher> d) {
  net::Router& r = node.admin_router();
  ThreadPool* pool = &node.pool();
  Node* n = &node;
  // A distributed forward waits for remote holders, whose exec requests
  // (HTTP and QUIC) run on their node's pool(). Were forwards on pool() too,
  // enough concurrent forwards would hold every worker of every node while
  // waiting for each other's exec answers: every call then hits its deadline
  // (seen with 4 clients per node, tests/fault/load_test.cc). Forwards queue
  // on their own pool; exec on pool() never waits for a peer.
  auto forward_pool = std::make_shared<ThreadPool>(node.pool().size(), "forward");
  node.OnStop([forward_pool] { forward_pool->Shutdown(); });
  r.AddOnPool("POST", "/v1/moe/forward-distributed", forward_pool.get(), [rt, d, n](const net::Request& http) {
    return Answer(http, [&](const json& b) -> Result<json> {
      auto r = ForwardDistributed(*rt, *d, b, NodeSpotCheckOptions(*n));
      RecordForward(b, r);
      return r;
    });
  });
  r.AddOnPool("POST", "/v1/moe/plan-dispatch", pool, [d](const net::Request& http) {
    return Answer(http, [&](const json& b) -> Result<json> {
      return PlanDispatch(*d, b);
    });
  });
  // Spot checks and bans (docs/security.md).
  node.AddMetrics([d](std::string& out) {
    const dispatch::Dispatcher::Counters c = d->counters();
    out += fmt::format(
        "# HELP tenzro_spot_checks_total Remote expert results this node re-ran on another replica, by outcome.\n"
        "# TYPE tenzro_spot_checks_total counter\n"
        "tenzro_spot_checks_total{{outcome=\"agree\"}} {}\ntenzro_spot_checks_total{{outcome=\"mismatch\"}} {}\n"
        "tenzro_spot_checks_total{{outcome=\"inconclusive\"}} {}\ntenzro_spot_checks_total{{outcome=\"skipped\"}} {}\n"
        "# HELP tenzro_holder_bans_total Holders this node banned from its plans, by reason.\n"
        "# TYPE tenzro_holder_bans_total counter\n"
        "tenzro_holder_bans_total{{reason=\"failure\"}} {}\ntenzro_holder_bans_total{{reason=\"wrong_output\"}} {}\n"
        "# HELP tenzro_hedged_calls_total Holder calls re-sent to another replica after running past the holder's "
        "p99 (sent), and those the replica answered first (won).\n"
        "# TYPE tenzro_hedged_calls_total counter\n"
        "tenzro_hedged_calls_total{{result=\"sent\"}} {}\ntenzro_hedged_calls_total{{result=\"won\"}} {}\n",
        c.spot_agree, c.spot_mismatch, c.spot_inconclusive, c.spot_skipped, c.bans_failure, c.bans_wrong_output,
        c.hedges_sent, c.hedges_won);
  });
  return Ok();
}

}  // namespace tenzro::node
