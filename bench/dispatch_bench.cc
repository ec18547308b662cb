// The distributed forward of one MoE block on loopback, against the same
// block computed locally in the same run.
//
// Layer: Qwen3.5-122B-shaped — 256 experts, 8 active per token (softmax
// top-8, renormalised), n_embd 3072, expert FFN 1024, plus a shared expert
// of FFN 1024; weights q4_K (gate/up/down, the q4_k_m layers without the
// Q6_K down rule), random bits. To keep memory at ~170 MiB, 32 distinct
// random experts back the 256 ids (expert e uses weights e % 32; every call
// still streams a full expert's bytes, far beyond the CPU caches).
// Holders: 3 in-process HTTP servers on 127.0.0.1 (own loop thread, own
// worker), expert e on holder e % 3; the orchestrator holds none, so every
// routed expert crosses the loopback as an exec frame (POST /v1/moe/exec).
// Each holder computes single-threaded (ExpertFfn on its HTTP worker).
//
//   BM_Distributed/<tokens>/<dtype 0 f32, 1 bf16>  gate + shared here, plan,
//       3 holders over HTTP, combine. Counters (ms per forward): gate, shared,
//       plan, exec (wall of the concurrent phase), compute_max (slowest
//       holder's own compute), net_mean (rtt - compute, mean over holders),
//       combine, overhead (plan + exec + combine - compute_max).
//   BM_Local/<tokens>  the same block with runtime::ComputeMoeBlock, every
//       expert in memory, on the calling thread (1 thread: the same compute
//       one holder does; BM_Local/<tokens>/3: a pool of 2 + the caller).
// The machine running this may be small and shared: compare within one run.
#include <benchmark/benchmark.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "dispatch/exec_route.h"
#include "dispatch/forward.h"
#include "net/server.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "runtime/moe_block.h"

namespace {

namespace rt = tenzro::runtime;
namespace dp = tenzro::dispatch;
using tenzro::Bytes;
using tenzro::quant::GgmlType;

constexpr int kExperts = 256, kActive = 8, kDistinct = 32, kHolders = 3;
constexpr int64_t kEmbd = 3072, kFf = 1024;
const std::string kModel = "qwen3.5-122b-shaped";

rt::WeightMatrix RandomQ4K(int64_t rows, int64_t row_len, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> scale(0.5e-3f, 2e-3f);
  const uint64_t n_blocks = rows * row_len / 256;
  Bytes data(n_blocks * sizeof(tenzro::quant::block_q4_K));
  for (size_t i = 0; i + 4 <= data.size(); i += 4) {
    const uint32_t v = rng();
    std::memcpy(&data[i], &v, 4);
  }
  auto* b = reinterpret_cast<tenzro::quant::block_q4_K*>(data.data());
  for (uint64_t i = 0; i < n_blocks; ++i) {
    b[i].d = tenzro::quant::Fp32ToFp16(scale(rng));
    b[i].dmin = tenzro::quant::Fp32ToFp16(scale(rng));
  }
  return *rt::WeightMatrix::Own(GgmlType::Q4_K, row_len, rows, std::move(data));
}

rt::ExpertWeights RandomExpert(uint32_t seed) {
  return {RandomQ4K(kFf, kEmbd, seed), RandomQ4K(kFf, kEmbd, seed + 1), RandomQ4K(kEmbd, kFf, seed + 2)};
}

class HolderServer {
 public:
  HolderServer(const std::vector<const rt::ExpertWeights*>& experts, int index) {
    runner_ = std::make_shared<dp::MemoryRunner>(kModel, nullptr);
    decl_.node_id = std::string(64, static_cast<char>('a' + index));
    decl_.model = kModel;
    for (int e = index; e < kExperts; e += kHolders) {
      runner_->Add(0, e, experts[e]);
      decl_.experts.push_back({0, e, "q4_k", "q4_k", "q4_k", "", tenzro::swarm::Tier::kWarm, 0});
    }
    dp::AddExecRoute(router_, &pool_, runner_, {});
    tenzro::net::ServerOptions o;
    o.max_body_bytes = 256 << 20;
    server_ = std::make_unique<tenzro::net::HttpServer>(ioc_, &router_, o);
    (void)server_->Listen({"127.0.0.1", 0});
    decl_.endpoints.push_back({"http", server_->endpoint().Url()});
    loop_ = std::thread([this] { ioc_.run(); });
  }
  ~HolderServer() {
    boost::asio::post(ioc_, [this] { server_->Stop(); });
    loop_.join();
    pool_.Shutdown();
  }
  const tenzro::swarm::Declaration& decl() const { return decl_; }

 private:
  boost::asio::io_context ioc_;
  tenzro::ThreadPool pool_{1, "holder"};
  tenzro::net::Router router_;
  std::shared_ptr<dp::MemoryRunner> runner_;
  std::unique_ptr<tenzro::net::HttpServer> server_;
  std::thread loop_;
  tenzro::swarm::Declaration decl_;
};

struct Setup {
  std::vector<rt::ExpertWeights> distinct;
  std::vector<const rt::ExpertWeights*> experts;
  rt::MoeBlockWeights block;
  std::vector<std::unique_ptr<HolderServer>> holders;
  dp::MemoryRunner self{kModel, nullptr};
  std::unique_ptr<dp::Dispatcher> dispatcher;
  std::vector<float> x;

  Setup() {
    for (int i = 0; i < kDistinct; ++i) distinct.push_back(RandomExpert(100 + 3 * i));
    for (int e = 0; e < kExperts; ++e) experts.push_back(&distinct[e % kDistinct]);
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    Bytes router(static_cast<size_t>(kExperts) * kEmbd * 4);
    std::vector<float> rw(static_cast<size_t>(kExperts) * kEmbd);
    for (float& v : rw) v = 0.02f * nd(rng);
    std::memcpy(router.data(), rw.data(), router.size());
    block.router.w = *rt::WeightMatrix::Own(GgmlType::F32, kEmbd, kExperts, std::move(router));
    block.routing.top_k = kActive;
    block.experts = experts;
    rt::SharedExpertWeights sh;
    sh.ffn = RandomExpert(9000);
    block.shared = std::move(sh);
    x.resize(64 * kEmbd);
    for (float& v : x) v = nd(rng);
    for (int h = 0; h < kHolders; ++h) holders.push_back(std::make_unique<HolderServer>(experts, h));
    dp::Dispatcher::Sources s;
    s.self_node_id = std::string(64, 's');
    s.live = [this](const std::string&) -> tenzro::Result<std::vector<tenzro::swarm::Declaration>> {
      std::vector<tenzro::swarm::Declaration> v;
      for (const auto& h : holders) v.push_back(h->decl());
      return v;
    };
    s.local = [](const std::string&) { return std::set<std::pair<int, int>>{}; };
    dispatcher = std::make_unique<dp::Dispatcher>(s, std::make_shared<dp::LocalExecutor>(self, dp::ExecServeOptions{}),
                                                  std::make_shared<dp::HttpExecutor>());
  }
};

Setup& S() {
  static Setup s;
  return s;
}

double Ms(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void BM_Distributed(benchmark::State& state) {
  Setup& s = S();
  const int n_tok = static_cast<int>(state.range(0));
  dp::ForwardOptions opt;
  opt.dtype = state.range(1) == 0 ? dp::RowType::kF32 : dp::RowType::kBf16;
  std::vector<float> out(static_cast<size_t>(n_tok) * kEmbd), shared(out.size());
  double gate = 0, shm = 0, plan = 0, exec = 0, comp = 0, net = 0, comb = 0, over = 0, total = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto routing = rt::Route(s.block.router, s.block.routing, s.x.data(), n_tok);
    auto t1 = std::chrono::steady_clock::now();
    (void)rt::SharedExpertFfn(*s.block.shared, s.x.data(), n_tok, shared.data());
    auto t2 = std::chrono::steady_clock::now();
    dp::ForwardInput in{kModel, 0, kEmbd, n_tok, s.x.data(), std::move(*routing), shared.data()};
    auto r = s.dispatcher->Forward(in, opt, out.data());
    auto t3 = std::chrono::steady_clock::now();
    if (!r) {
      state.SkipWithError(r.error().ToString().c_str());
      return;
    }
    double cmax = 0, nsum = 0;
    for (const auto& c : r->calls) {
      cmax = std::max(cmax, c.compute_ms);
      nsum += c.rtt_ms - c.compute_ms;
    }
    gate += Ms(t1 - t0);
    shm += Ms(t2 - t1);
    plan += r->plan_ms;
    exec += r->exec_ms;
    comp += cmax;
    net += nsum / std::max<size_t>(1, r->calls.size());
    comb += r->combine_ms;
    over += r->plan_ms + r->exec_ms + r->combine_ms - cmax;
    total += Ms(t3 - t0);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["gate_ms"] = gate / n;
  state.counters["shared_ms"] = shm / n;
  state.counters["plan_ms"] = plan / n;
  state.counters["exec_ms"] = exec / n;
  state.counters["compute_max_ms"] = comp / n;
  state.counters["net_mean_ms"] = net / n;
  state.counters["combine_ms"] = comb / n;
  state.counters["overhead_ms"] = over / n;
  state.counters["total_ms"] = total / n;
}
BENCHMARK(BM_Distributed)->Args({1, 0})->Args({64, 0})->Args({64, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Local(benchmark::State& state) {
  Setup& s = S();
  const int n_tok = static_cast<int>(state.range(0));
  std::unique_ptr<tenzro::ThreadPool> pool;
  if (state.range(1) > 1) pool = std::make_unique<tenzro::ThreadPool>(state.range(1) - 1, "local");
  std::vector<float> out(static_cast<size_t>(n_tok) * kEmbd);
  double total = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = rt::ComputeMoeBlock(s.block, s.x.data(), n_tok, out.data(), pool.get());
    total += Ms(std::chrono::steady_clock::now() - t0);
    if (!r) {
      state.SkipWithError(r.error().ToString().c_str());
      return;
    }
  }
  state.counters["total_ms"] = total / static_cast<double>(state.iterations());
}
BENCHMARK(BM_Local)
    ->Args({1, 1})
    ->Args({64, 1})
    ->Args({1, 3})
    ->Args({64, 3})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
