// The swarm at the Qwen3.5-397B-A17B shape: 60 MoE layers x 512 experts =
// 30,720 experts at replication 2, declared by H holders (bench/scale_swarm.h:
// H agents in this process, each with its own identity, OpenDHT node on its
// own loopback address and port, and swarm::SwarmAgent with the node's
// default options — refresh 20 s, TTL 60 s, snapshot re-read every 2 s).
//
//   BM_Swarm/<H>  (SCALE_BENCH_HOLDERS, default 8,16,32,64; one run each)
//     converge_s   from the agents' start until every agent's snapshot holds
//                  every holder's declaration and 61,440 expert entries (the
//                  shard map then has every expert twice: checked with
//                  BuildShardMap on two agents);
//     leave_s      holder H-2 stops cleanly ("leaving"): until every other
//                  agent's snapshot lacks it;
//     dead_s       holder H-1 crashes (agent and DHT node gone, no word) at
//                  the same time: until every other agent's snapshot lacks it
//                  (bounded by the TTL, 60 s, + one snapshot read);
//     per holder per minute at steady state (the SCALE_BENCH_STEADY_S window
//     after convergence, default 40 s, over the holders alive throughout;
//     mean and the busiest holder): DHT requests in / out (OpenDHT's counts)
//     and UDP bytes in / out (the transport's socket);
//     rss_mb_per_agent (process RSS growth / H), snapshot_mb (one agent's
//     snapshot: its table holds the same records again), parts (records);
//     plan_token_ms / plan_b16_ms and copy_ms over holder 0's converged
//     snapshot (as BM_Plan, after the swarm is stopped).
//   BM_Plan/<H>/<tokens>  the planner alone over the same declarations built
//     in memory (H up to 10,000): one iteration = one decode step of `tokens`
//     tokens = 60 layers, each PlanDispatch over the model's live parts with
//     that layer's items (top-10 of 512 per token, uniform); copy_ms = one
//     copy of the live parts per layer (the forward makes one: Live());
//     live_MB = those parts in memory (one agent's
//     snapshot; its table holds them again); wire_MB = their signed
//     records, i.e. one full read of the model's DHT key from one node.
//     loss_converge: the share of DHT datagrams sent during convergence that
//     no node received (all on loopback: dropped by full socket buffers);
//     rcvbuf_drops_*: the kernel's UDP RcvbufErrors over the same spans.
// SCALE_BENCH_CONVERGE_S (default 60) bounds each convergence wait;
// SCALE_BENCH_EXPERTS (default 512) experts per layer; SCALE_BENCH_RCVBUF
// (default: the node's, 4 MiB; 0: the kernel's) the DHT sockets' receive
// buffer in bytes. The
// machine running this may be small and shared: the swarm's agents compete
// for its cores (see docs/dispatch.md, "Scale").
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "catalog/builtin_shapes.h"
#include "dispatch/planner.h"
#include "identity/identity.h"
#include "scale_swarm.h"
#include "swarm/shard_map.h"

namespace {

namespace sw = tenzro::swarm;
namespace dp = tenzro::dispatch;
using tenzro::bench::ScaleSwarm;
using Steady = std::chrono::steady_clock;

constexpr size_t kPartBytes = 60000;  // the agent's part size (swarm/agent.cc)
constexpr int kReplication = 2;

// The 397B shape; SCALE_BENCH_EXPERTS (< 512) keeps the first N experts of
// every layer (fewer declaration bytes, same holders), for runs that find
// where the DHT keeps up.
const tenzro::catalog::ModelShape& Shape() {
  static const tenzro::catalog::ModelShape s = [] {
    tenzro::catalog::ModelShape m = *tenzro::catalog::BuiltinShape("qwen3.5-397b-a17b");
    const char* env = std::getenv("SCALE_BENCH_EXPERTS");
    if (const int n = env ? std::atoi(env) : 0; n > 0 && n < m.n_expert) {
      m.n_expert = n;
      for (auto& l : m.layers)
        if (l.n_expert > 0) l.n_expert = n;
    }
    return m;
  }();
  return s;
}

double EnvSeconds(const char* name, double def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : def;
}

double Since(Steady::time_point t0) { return std::chrono::duration<double>(Steady::now() - t0).count(); }

// ---- the planner ----

// The declarations H holders publish, as readers hold them (parts);
// `wire_bytes` (optional) receives the bytes of their signed records, i.e.
// what one full read of the model's key carries from one storing node.
std::vector<sw::Declaration> BuildLive(int h, uint64_t* wire_bytes = nullptr) {
  std::vector<sw::Declaration> live;
  auto shares = tenzro::bench::ScaleShares(Shape(), h);
  if (wire_bytes) *wire_bytes = 0;
  for (int k = 0; k < h; ++k) {
    const tenzro::identity::Identity id = tenzro::identity::Identity::Generate();
    sw::Declaration d;
    d.node_id = id.node_id();
    d.model = Shape().id;
    const std::string host = tenzro::bench::ScaleHost(k);
    d.endpoints = {{"quic", fmt::format("{}:4433", host)}, {"http", fmt::format("http://{}:8080", host)}};
    d.experts = std::move(shares[k]);
    d.seq = 1;
    d.timestamp_ms = 1;
    auto parts = sw::Split(d, kPartBytes);
    for (auto& p : *parts) {
      if (wire_bytes) *wire_bytes += sw::EncodeRecord(p, id)->size();
      live.push_back(std::move(p));
    }
  }
  return live;
}

// One decode step of `tokens` tokens: per MoE layer, the items (top-k of the
// layer's experts per token, uniform).
std::vector<std::vector<dp::PlanItem>> Step(int tokens, std::mt19937& rng) {
  const auto& s = Shape();
  std::vector<std::vector<dp::PlanItem>> layers;
  std::vector<int> ids;
  for (int l = 0; l < s.n_layer; ++l) {
    const int n = s.layers[l].n_expert;
    if (n == 0) continue;
    std::map<int, std::vector<int>> by_expert;
    ids.resize(n);
    for (int t = 0; t < tokens; ++t) {
      std::iota(ids.begin(), ids.end(), 0);
      for (int j = 0; j < s.n_expert_used; ++j) {
        std::swap(ids[j], ids[j + rng() % (n - j)]);
        by_expert[ids[j]].push_back(t);
      }
    }
    std::vector<dp::PlanItem> items;
    for (auto& [e, toks] : by_expert) items.push_back({l, e, std::move(toks)});
    layers.push_back(std::move(items));
  }
  return layers;
}

struct PlanCost {
  double plan_ms = 0;   // per step (every layer)
  double copy_ms = 0;   // per step, one copy of the live parts per layer
  double calls = 0;     // remote calls per layer
  int holders = 0;      // holders the planner considered
};

PlanCost TimePlan(const std::vector<sw::Declaration>& live, int tokens, int steps) {
  std::mt19937 rng(17);
  dp::PlanInput in;
  in.self_node_id = std::string(64, 'f');
  in.quic = true;
  in.live = live;
  PlanCost c;
  size_t calls = 0, layers = 0;
  for (int i = 0; i < steps; ++i) {
    const auto step = Step(tokens, rng);
    for (const auto& items : step) {
      const auto t0 = Steady::now();
      std::vector<sw::Declaration> copy = live;
      benchmark::DoNotOptimize(copy.data());
      c.copy_ms += Since(t0) * 1e3;
      const auto t1 = Steady::now();
      dp::Plan p = dp::PlanDispatch(items, in);
      c.plan_ms += Since(t1) * 1e3;
      calls += p.batches.size();
      c.holders = p.holders_considered;
      ++layers;
    }
  }
  c.plan_ms /= steps;
  c.copy_ms /= steps;
  c.calls = static_cast<double>(calls) / std::max<size_t>(1, layers);
  return c;
}

void BM_Plan(benchmark::State& state) {
  const int h = static_cast<int>(state.range(0)), tokens = static_cast<int>(state.range(1));
  uint64_t wire = 0;
  const std::vector<sw::Declaration> live = BuildLive(h, &wire);
  size_t held = 0;
  for (const auto& d : live) held += tenzro::bench::DeclarationBytes(d);
  std::mt19937 rng(17);
  dp::PlanInput in;
  in.self_node_id = std::string(64, 'f');
  in.quic = true;
  in.live = live;
  size_t calls = 0, layers = 0;
  int holders = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const auto step = Step(tokens, rng);
    state.ResumeTiming();
    for (const auto& items : step) {
      dp::Plan p = dp::PlanDispatch(items, in);
      calls += p.batches.size();
      holders = p.holders_considered;
      ++layers;
    }
  }
  const PlanCost copy = TimePlan(live, tokens, 1);
  state.counters["holders"] = holders;
  state.counters["parts"] = static_cast<double>(live.size());
  state.counters["calls_per_layer"] = static_cast<double>(calls) / std::max<size_t>(1, layers);
  state.counters["copy_ms"] = copy.copy_ms;
  state.counters["wire_MB"] = wire / 1e6;
  state.counters["live_MB"] = held / 1e6;
}
BENCHMARK(BM_Plan)
    ->ArgsProduct({{16, 64, 256, 1024, 4096, 10000}, {1, 16}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// ---- the swarm ----

struct Coverage {
  uint64_t entries = 0;
  std::set<std::string> holders;
};

Coverage CoverageOf(const sw::LiveSnapshot& s) {
  Coverage c;
  for (const auto& d : s.live) {
    c.entries += d.experts.size();
    c.holders.insert(d.node_id);
  }
  return c;
}

struct Traffic {
  double req_in = 0, req_out = 0, bytes_in = 0, bytes_out = 0;
};

uint64_t Sum(const std::array<uint64_t, sw::DhtStats::kRequestTypes>& a) {
  return std::accumulate(a.begin(), a.end(), uint64_t{0});
}

void BM_Swarm(benchmark::State& state) {
  const int h = static_cast<int>(state.range(0));
  const std::string model = Shape().id;
  const uint64_t want_entries = Shape().total_experts() * kReplication;
  const double converge_limit = EnvSeconds("SCALE_BENCH_CONVERGE_S", 60);
  const double steady_window = EnvSeconds("SCALE_BENCH_STEADY_S", 40);
  for (auto _ : state) {
    const uint64_t rss0 = tenzro::bench::ResidentBytes();
    sw::DhtOptions dht;  // the node's defaults, but for SCALE_BENCH_RCVBUF
    dht.receive_buffer_bytes = static_cast<int>(EnvSeconds("SCALE_BENCH_RCVBUF", dht.receive_buffer_bytes));
    ScaleSwarm swarm(Shape(), sw::AgentOptions{}, dht);
    const auto tn = Steady::now();
    if (auto r = swarm.StartNodes(h, std::chrono::seconds(30)); !r) {
      state.SkipWithError(r.error().ToString().c_str());
      return;
    }
    const double join_s = Since(tn);
    auto& hs = swarm.holders();
    std::fprintf(stderr, "[scale] H=%d: %d DHT nodes up in %.1f s; starting agents\n", h, h, join_s);

    // Convergence.
    const uint64_t drops0 = tenzro::bench::UdpRcvbufErrors();
    std::vector<sw::DhtStats> s0(h);
    for (int k = 0; k < h; ++k) s0[k] = hs[k].transport->stats();
    const auto t0 = Steady::now();
    swarm.StartAgents();
    const double started_s = Since(t0);
    int complete = 0;
    double last_print = 0, min_cov = 0;
    while (complete < h && Since(t0) < converge_limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      complete = 0;
      min_cov = 1;
      for (auto& x : hs) {
        if (x.complete_ms < 0) {
          auto snap = x.agent->Snapshot(model);
          const Coverage c = snap ? CoverageOf(*snap) : Coverage{};
          min_cov = std::min(min_cov, static_cast<double>(c.entries) / want_entries);
          if (c.entries == want_entries && c.holders.size() == static_cast<size_t>(h))
            x.complete_ms = static_cast<int64_t>(Since(t0) * 1e3);
        }
        complete += x.complete_ms >= 0;
      }
      if (Since(t0) - last_print >= 5) {
        last_print = Since(t0);
        std::fprintf(stderr, "[scale] H=%d t=%.0f s: %d/%d agents complete, least coverage %.1f %%\n", h, last_print,
                     complete, h, 100 * min_cov);
      }
    }
    const double converge_s = complete == h ? Since(t0) : -1;
    // Datagrams sent and not received (all nodes alive, loopback): lost in
    // the receivers' socket buffers.
    double sent = 0, received = 0;
    for (int k = 0; k < h; ++k) {
      const sw::DhtStats s = hs[k].transport->stats();
      sent += static_cast<double>(s.datagrams_out - s0[k].datagrams_out);
      received += static_cast<double>(s.datagrams_in - s0[k].datagrams_in);
    }
    const double converge_loss = sent > 0 ? 1 - received / sent : 0;
    const double converge_drops = static_cast<double>(tenzro::bench::UdpRcvbufErrors() - drops0);
    std::fprintf(stderr, "[scale] H=%d: %s after %.1f s (agents started in %.1f s); %.1f %% of datagrams lost\n", h,
                 complete == h ? "converged" : "NOT converged", Since(t0), started_s, 100 * converge_loss);

    // Every expert twice, in the shard map of two agents.
    int bad_maps = 0;
    for (int k : {0, h - 1}) {
      auto snap = hs[k].agent->Snapshot(model);
      auto m = sw::BuildShardMap(Shape(), snap->live);
      const bool all_twice = m && m->covered_experts == m->total_experts &&
                             std::all_of(m->experts.begin(), m->experts.end(),
                                         [](const sw::ExpertReplication& e) { return e.replicas == kReplication; });
      bad_maps += !all_twice;
    }
    auto snap0 = hs[0].agent->Snapshot(model);
    const std::vector<sw::Declaration> live0 = snap0->live;
    size_t snap_bytes = sizeof(sw::LiveSnapshot);
    for (const auto& d : snap0->live) snap_bytes += tenzro::bench::DeclarationBytes(d);
    const double rss_per_agent = static_cast<double>(tenzro::bench::ResidentBytes() - rss0) / h;

    // Steady state, with one clean leave and one crash at its start.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const int leaver = h - 2, dead = h - 1;
    std::vector<sw::DhtStats> s1(h);
    for (int k = 0; k < h - 2; ++k) s1[k] = hs[k].transport->stats();
    const auto tw = Steady::now();
    const uint64_t drops1 = tenzro::bench::UdpRcvbufErrors();
    const std::string leaver_id = hs[leaver].node_id, dead_id = hs[dead].node_id;
    std::thread stop_leaver([&] { swarm.StopHolder(leaver, /*leave=*/true); });
    swarm.StopHolder(dead, /*leave=*/false);
    stop_leaver.join();
    double leave_s = -1, dead_s = -1;
    const double gone_limit = std::max(steady_window, 75.0);
    while (Since(tw) < steady_window || (dead_s < 0 && Since(tw) < gone_limit)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      bool leaver_seen = false, dead_seen = false;
      for (int k = 0; k < h - 2; ++k) {
        auto snap = hs[k].agent->Snapshot(model);
        for (const auto& d : snap->live) {
          leaver_seen |= d.node_id == leaver_id;
          dead_seen |= d.node_id == dead_id;
        }
      }
      if (!leaver_seen && leave_s < 0) leave_s = Since(tw);
      if (!dead_seen && dead_s < 0) {
        dead_s = Since(tw);
        std::fprintf(stderr, "[scale] H=%d: crashed holder gone everywhere after %.1f s (clean leave: %.1f s)\n", h,
                     dead_s, leave_s);
      }
    }
    const double window_s = Since(tw);
    const double steady_drops_pm = (tenzro::bench::UdpRcvbufErrors() - drops1) * 60.0 / window_s;
    Traffic mean, busiest;
    for (int k = 0; k < h - 2; ++k) {
      const sw::DhtStats s2 = hs[k].transport->stats();
      const double per_min = 60.0 / window_s;
      Traffic t{(Sum(s2.requests_in) - Sum(s1[k].requests_in)) * per_min,
                (Sum(s2.requests_out) - Sum(s1[k].requests_out)) * per_min,
                (s2.bytes_in - s1[k].bytes_in) * per_min, (s2.bytes_out - s1[k].bytes_out) * per_min};
      mean.req_in += t.req_in / (h - 2);
      mean.req_out += t.req_out / (h - 2);
      mean.bytes_in += t.bytes_in / (h - 2);
      mean.bytes_out += t.bytes_out / (h - 2);
      busiest.req_in = std::max(busiest.req_in, t.req_in);
      busiest.req_out = std::max(busiest.req_out, t.req_out);
      busiest.bytes_in = std::max(busiest.bytes_in, t.bytes_in);
      busiest.bytes_out = std::max(busiest.bytes_out, t.bytes_out);
    }
    const auto ts = Steady::now();
    swarm.Stop();
    std::fprintf(stderr, "[scale] H=%d: stopped in %.1f s; timing the planner\n", h, Since(ts));

    const PlanCost token = TimePlan(live0, 1, 5), batch = TimePlan(live0, 16, 2);
    state.SetIterationTime(Since(tn));
    state.counters["join_s"] = join_s;
    state.counters["converge_s"] = converge_s;
    state.counters["coverage_min"] = min_cov;
    state.counters["complete"] = complete;  // agents whose snapshot converged
    state.counters["bad_maps"] = bad_maps;
    state.counters["loss_converge"] = converge_loss;
    state.counters["rcvbuf_drops_converge"] = converge_drops;
    state.counters["rcvbuf_drops_pm"] = steady_drops_pm;
    state.counters["leave_s"] = leave_s;
    state.counters["dead_s"] = dead_s;
    state.counters["req_in_pm"] = mean.req_in;
    state.counters["req_out_pm"] = mean.req_out;
    state.counters["MB_in_pm"] = mean.bytes_in / 1e6;
    state.counters["MB_out_pm"] = mean.bytes_out / 1e6;
    state.counters["max_req_in_pm"] = busiest.req_in;
    state.counters["max_MB_in_pm"] = busiest.bytes_in / 1e6;
    state.counters["max_MB_out_pm"] = busiest.bytes_out / 1e6;
    state.counters["rss_MB_per_agent"] = rss_per_agent / 1e6;
    state.counters["snapshot_MB"] = snap_bytes / 1e6;
    state.counters["parts"] = static_cast<double>(live0.size());
    state.counters["plan_token_ms"] = token.plan_ms;
    state.counters["plan_b16_ms"] = batch.plan_ms;
    state.counters["copy_ms"] = token.copy_ms;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  const char* env = std::getenv("SCALE_BENCH_HOLDERS");
  std::string list = env && *env ? env : "8,16,32,64";
  for (size_t at = 0; at < list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    if (int h = std::atoi(list.substr(at, comma - at).c_str()); h >= 4) sizes.push_back(h);
    at = comma + 1;
  }
  for (int h : sizes)
    benchmark::RegisterBenchmark("BM_Swarm", BM_Swarm)
        ->Arg(h)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kSecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
