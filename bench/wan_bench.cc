// Decode tokens/s under WAN conditions (issue 17 item 5; docs/dispatch.md
// "WAN conditions"): the loopback swarm of bench/serve_swarm.h (no
// reference node) with a WanRelay (tests/testutil/wan_relay.h) in front of
// every holder. Holder k runs with `--advertise 127.0.0.<k+1>`; its relay
// listens there on the holder's own http (TCP) and quic (UDP) ports and
// forwards to 127.0.0.1, so every coordinator -> holder call (exec over
// QUIC, health over HTTP) crosses the simulated link, both directions.
//
// Each benchmark (manual time, one iteration) sets every relay to one-way
// delay RTT/2 each way and loss p each way, checks the relay (median GET
// /v1/health round trip through it minus direct = the RTT it was asked
// for), then runs S concurrent streamed completions (serve_swarm.h's
// RunStreams). WAN_BENCH_LAYERS layers (default 2), prompt WAN_BENCH_PROMPT
// ids (16), WAN_BENCH_TOKENS tokens (24; 12 at 50 ms). Counters:
//   tok_s_stream     decode tokens/s of one stream: 1 / mean inter-token
//                    time on the serving node (tenzro_serve_inter_token_seconds;
//                    the HTTP client hands a short streamed response over in
//                    one piece, docs/serving.md "Throughput")
//   tok_s_total      tok_s_stream x S
//   ttft_ms          mean time to first token on the serving node
//   step_ms, batch   as serve_bench
//   rtt_check_ms     measured: relay GET round trip - direct (asked: rtt_ms)
//   relay_delay_ms   the relays' own mean arrival->delivery delay during the
//                    run, both directions summed (asked: rtt_ms)
//   bound_tok_s      1 / (layers x RTT + token time at RTT 0 with S streams):
//                    the bound 1 / (layers x (RTT + slowest compute)), the
//                    compute measured by the RTT-0 run of the same S (its
//                    decode inter-token time: every layer's compute, the
//                    output head and the loopback calls)
//   bound_ratio      bound_tok_s / tok_s_stream (1 = at the bound)
//   rt_per_layer     (token time - token time at RTT 0) / (layers x RTT):
//                    the round trips a layer actually paid (1 = one)
//   tok_s_48L, bound_48L   both extrapolated to 48 layers (the per-layer
//                    time x 48)
//   dgrams, lost     UDP datagrams the relays delivered / dropped (both
//                    directions, all holders)
//   retx             TCP chunks the relays delayed for "loss"
//   quic_exec_kB     exec bytes node 0 sent and received over QUIC
// The console table at the end has one row per case.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "serve_swarm.h"
#include "testutil/wan_relay.h"

namespace {

using namespace tenzro::bench;  // NOLINT: the bench's own helpers
using tenzro::testing::WanForward;
using tenzro::testing::WanLink;
using tenzro::testing::WanProto;
using tenzro::testing::WanRelay;
using tenzro::testing::WanRelayOptions;
using tenzro::testing::WanRelayStats;

const int kLayers = EnvInt("WAN_BENCH_LAYERS", 2);
const int kPrompt = EnvInt("WAN_BENCH_PROMPT", 16);
const int kTokens = EnvInt("WAN_BENCH_TOKENS", 24);

struct Wan {
  std::unique_ptr<Swarm> swarm;
  std::vector<std::unique_ptr<WanRelay>> relays;  // [k-1] in front of holder k
  std::vector<tenzro::net::Endpoint> via, direct;  // holder k's http through / around its relay
};
std::unique_ptr<Wan> g_wan;

// Holder k (1..kHolders) is reached at 127.0.0.<k+1>.
std::string HolderHost(int k) { return "127.0.0." + std::to_string(k + 1); }

void StartRelay(Wan& w, int k, const RunningNode& h) {
  const std::string quic = h.node_json.value("quic", nlohmann::json::object()).value("address", "");
  const size_t colon = quic.rfind(':');
  if (quic.rfind(HolderHost(k) + ":", 0) != 0 || colon == std::string::npos)
    Die("holder " + std::to_string(k) + " advertises quic '" + quic + "', not " + HolderHost(k));
  const auto qport = static_cast<uint16_t>(std::stoi(quic.substr(colon + 1)));
  WanRelayOptions o;
  o.listen_host = HolderHost(k);
  o.target_host = "127.0.0.1";
  o.forwards = {{WanProto::kTcp, h.http.port, h.http.port}, {WanProto::kUdp, qport, qport}};
  o.max_queue_bytes = 64u << 20;
  o.seed = static_cast<uint64_t>(k);
  auto r = WanRelay::Start(o);
  if (!r) Die("relay for holder " + std::to_string(k) + ": " + r.error().ToString());
  w.relays.push_back(std::move(*r));
  w.via.push_back({HolderHost(k), h.http.port});
  w.direct.push_back(h.http);
}

Wan& Setup() {
  if (g_wan) return *g_wan;
  g_wan = std::make_unique<Wan>();
  Wan& w = *g_wan;
  SwarmOptions o;
  o.layers = kLayers;
  o.reference = false;
  o.holder_args = [](int k) { return std::vector<std::string>{"--advertise", HolderHost(k)}; };
  o.holder_started = [&w](int k, const RunningNode& h) { StartRelay(w, k, h); };
  w.swarm = StartSwarm(o);
  Row warm;
  std::string error;
  if (!RunStreams(w.swarm->nodes[0], kLayers, 1, kPrompt, 4, &warm, &error)) Die("warm-up: " + error);
  std::fprintf(stderr, "wan_bench: %d layers x %d experts, 4 nodes and %d relays up in %.1f s\n", kLayers, kExperts,
               kHolders, w.swarm->setup_s);
  return w;
}

void SetLinks(Wan& w, double rtt_ms, double loss) {
  WanLink l;
  l.latency_ms = rtt_ms / 2;
  l.loss = loss;
  for (auto& r : w.relays) r->SetLinks(l, l);
}

// Median GET /v1/health round trip through the relays minus direct, over
// every holder (a fresh connection each: its TCP handshake is local).
double RttCheckMs(Wan& w) {
  std::vector<double> diff;
  for (size_t k = 0; k < w.via.size(); ++k) {
    auto one = [](const tenzro::net::Endpoint& ep) {
      tenzro::net::HttpClient c(ep);
      const auto t0 = Clock::now();
      auto r = c.Send("GET", "/v1/health");
      return r && r->status == 200 ? Ms(Clock::now() - t0) : -1.0;
    };
    for (int i = 0; i < 3; ++i) diff.push_back(one(w.via[k]) - one(w.direct[k]));
  }
  std::sort(diff.begin(), diff.end());
  return diff[diff.size() / 2];
}

WanRelayStats SumStats(Wan& w) {
  WanRelayStats t;
  for (auto& r : w.relays) {
    WanRelayStats s = r->Stats();
    for (auto [a, b] : {std::pair{&t.to_target, &s.to_target}, std::pair{&t.to_client, &s.to_client}}) {
      a->bytes += b->bytes;
      a->datagrams += b->datagrams;
      a->chunks += b->chunks;
      a->lost += b->lost;
      a->retransmits += b->retransmits;
      a->overflow += b->overflow;
      a->delay_ms_sum += b->delay_ms_sum;
    }
  }
  return t;
}

double QuicExecBytes(const RunningNode& n) {
  double b = 0;
  for (const auto& [k, v] : Metrics(n))
    if (k.find("tenzro_transport_bytes_total") == 0 && k.find("transport=\"quic\"") != std::string::npos &&
        k.find("traffic=\"exec\"") != std::string::npos)
      b += v;
  return b;
}

struct Case {
  double rtt_ms, loss;
  int streams;
  Row row;
  double rtt_check_ms, relay_delay_ms, bound_tok_s, dgrams, lost, retx, quic_kb;
};
std::map<std::tuple<double, double, int>, Case> g_cases;
std::map<std::tuple<double, double, int>, std::string> g_failed;  // a case's first stream error
std::map<int, double> g_token0_ms;  // streams -> decode inter-token time at RTT 0

bool Run(Wan& w, double rtt_ms, double loss, int streams, Case* c, std::string* error) {
  SetLinks(w, rtt_ms, loss);
  c->rtt_ms = rtt_ms;
  c->loss = loss;
  c->streams = streams;
  c->rtt_check_ms = RttCheckMs(w);
  const WanRelayStats s0 = SumStats(w);
  const double q0 = QuicExecBytes(w.swarm->nodes[0]);
  const int tokens = rtt_ms >= 50 ? std::max(4, kTokens / 2) : kTokens;
  if (!RunStreams(w.swarm->nodes[0], kLayers, streams, kPrompt, tokens, &c->row, error)) return false;
  c->row.tok_s_stream = c->row.itl_tok_s;
  c->row.tok_s_total = c->row.itl_tok_s * streams;
  c->row.ttft_ms = c->row.server_ttft_ms;
  const WanRelayStats s1 = SumStats(w);
  auto mean = [](const auto& a, const auto& b) {
    const double n = static_cast<double>(b.datagrams + b.chunks - a.datagrams - a.chunks);
    return n > 0 ? (b.delay_ms_sum - a.delay_ms_sum) / n : 0.0;
  };
  c->relay_delay_ms = mean(s0.to_target, s1.to_target) + mean(s0.to_client, s1.to_client);
  c->dgrams = static_cast<double>(s1.to_target.datagrams + s1.to_client.datagrams - s0.to_target.datagrams -
                                  s0.to_client.datagrams);
  c->lost = static_cast<double>(s1.to_target.lost + s1.to_client.lost - s0.to_target.lost - s0.to_client.lost);
  c->retx = static_cast<double>(s1.to_target.retransmits + s1.to_client.retransmits - s0.to_target.retransmits -
                                s0.to_client.retransmits);
  c->quic_kb = (QuicExecBytes(w.swarm->nodes[0]) - q0) / 1024;
  return true;
}

// The decode inter-token time at RTT 0 with `streams` streams (measured
// once, on first need).
double Token0Ms(Wan& w, int streams, std::string* error) {
  if (auto it = g_token0_ms.find(streams); it != g_token0_ms.end()) return it->second;
  Case c{};
  if (!Run(w, 0, 0, streams, &c, error)) return -1;
  if (c.row.tok_s_stream <= 0) {
    *error = "no inter-token times at RTT 0";
    return -1;
  }
  c.bound_tok_s = c.row.tok_s_stream;
  g_cases[{0.0, 0.0, streams}] = c;
  return g_token0_ms[streams] = 1000 / c.row.tok_s_stream;
}

double RoundTripsPerLayer(double rtt_ms, double tok_s, double token0_ms) {
  return rtt_ms > 0 && tok_s > 0 ? (1000 / tok_s - token0_ms) / (kLayers * rtt_ms) : 0;
}

void BM_Wan(benchmark::State& state) {
  Wan& w = Setup();
  const double rtt_ms = static_cast<double>(state.range(0));
  const double loss = static_cast<double>(state.range(1)) / 1000;
  const int streams = static_cast<int>(state.range(2));
  for (auto _ : state) {
    std::string error;
    const double token0 = Token0Ms(w, streams, &error);
    Case c{};
    const bool baseline = rtt_ms == 0 && loss == 0;  // Token0Ms ran it
    if (token0 <= 0 || (!baseline && !Run(w, rtt_ms, loss, streams, &c, &error))) {
      g_failed[{rtt_ms, loss, streams}] = error.substr(0, 160);
      state.SkipWithError(error.c_str());
      return;
    }
    if (baseline) c = g_cases[{0.0, 0.0, streams}];
    state.SetIterationTime(c.row.wall_ms / 1000);
    c.bound_tok_s = 1000 / (kLayers * rtt_ms + token0);
    const double layer_ms0 = token0 / kLayers;
    state.counters["rtt_ms"] = rtt_ms;
    state.counters["rtt_check_ms"] = c.rtt_check_ms;
    state.counters["relay_delay_ms"] = c.relay_delay_ms;
    state.counters["tok_s_stream"] = c.row.tok_s_stream;
    state.counters["tok_s_total"] = c.row.tok_s_total;
    state.counters["ttft_ms"] = c.row.ttft_ms;
    state.counters["step_ms"] = c.row.step_ms;
    state.counters["batch"] = c.row.batch;
    state.counters["bound_tok_s"] = c.bound_tok_s;
    state.counters["bound_ratio"] = c.row.tok_s_stream > 0 ? c.bound_tok_s / c.row.tok_s_stream : 0;
    state.counters["tok_s_48L"] = c.row.tok_s_stream * kLayers / 48;
    state.counters["bound_48L"] = 1000 / (48 * (rtt_ms + layer_ms0));
    state.counters["rt_per_layer"] = RoundTripsPerLayer(rtt_ms, c.row.tok_s_stream, token0);
    state.counters["dgrams"] = c.dgrams;
    state.counters["lost"] = c.lost;
    state.counters["retx"] = c.retx;
    state.counters["quic_exec_kB"] = c.quic_kb;
    g_cases[{rtt_ms, loss, streams}] = c;
  }
}

void Cases(benchmark::internal::Benchmark* b) {
  for (int streams : {1, kMaxStreams}) b->Args({0, 0, streams});
  for (int rtt : {1, 10, 50})
    for (int loss_permille : {0, 10})
      for (int streams : {1, kMaxStreams}) b->Args({rtt, loss_permille, streams});
  b->ArgNames({"rtt_ms", "loss_permille", "streams"})
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_Wan)->Apply(Cases);

void PrintTable() {
  if (g_cases.empty()) return;
  std::printf("\nwan_bench: %d layers, %d experts top-8 on %d holders behind relays, prompt %d, max_tokens %d "
              "(%d at 50 ms)\n",
              kLayers, kExperts, kHolders, kPrompt, kTokens, std::max(4, kTokens / 2));
  std::printf("%6s %5s %7s %8s %8s %9s %8s %6s %6s %8s %6s %7s %9s %9s %7s %5s\n", "rtt_ms", "loss", "streams",
              "rtt_chk", "relay_d", "tok/s/str", "bound", "ratio", "rt/L", "step_ms", "batch", "ttft", "48L tok/s",
              "48L bound", "dgrams", "lost");
  for (const auto& [key, c] : g_cases) {
    const double token0 = g_token0_ms.count(c.streams) ? g_token0_ms[c.streams] : 0;
    const double bound48 = token0 > 0 ? 1000 / (48 * (c.rtt_ms + token0 / kLayers)) : 0;
    std::printf("%6.0f %4.0f%% %7d %8.2f %8.2f %9.2f %8.2f %6.2f %6.2f %8.1f %6.1f %7.0f %9.3f %9.3f %7.0f %5.0f\n",
                c.rtt_ms, c.loss * 100, c.streams, c.rtt_check_ms, c.relay_delay_ms, c.row.tok_s_stream, c.bound_tok_s,
                c.row.tok_s_stream > 0 ? c.bound_tok_s / c.row.tok_s_stream : 0.0,
                RoundTripsPerLayer(c.rtt_ms, c.row.tok_s_stream, token0), c.row.step_ms, c.row.batch, c.row.ttft_ms,
                c.row.tok_s_stream * kLayers / 48, bound48, c.dgrams, c.lost);
  }
  for (const auto& [key, error] : g_failed)
    std::printf("%6.0f %4.0f%% %7d failed: %s\n", std::get<0>(key), std::get<1>(key) * 100, std::get<2>(key),
                error.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  PrintTable();
  if (g_wan) {
    StopSwarm(*g_wan->swarm);
    for (auto& r : g_wan->relays) r->Stop();
    g_wan.reset();  // removes the temp dir
  }
  benchmark::Shutdown();
  return 0;
}
