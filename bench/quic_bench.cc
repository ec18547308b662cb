// QUIC vs HTTP on loopback, side by side in one run, over the same holder:
//   BM_ExecRtt/<transport>/<tokens>  one exec request (1 expert, `tokens` rows
//        of d_model 2048, f32 rows) and its answer through the executor the
//        distributed forward uses (QuicExecutor / HttpExecutor); the runner
//        copies rows, so the time is transport + framing. Counters p50_us and
//        p99_us over all iterations.
//   BM_FirstCall                     a fresh client's first exec call: the
//        QUIC handshake plus one 1-row call.
//   BM_BlobFetch/<transport>         a 64 MiB blob, every chunk group verified
//        (FetchRangesQuic over /iroh-bytes/4 vs FetchRangesHttp over GET /blobs/);
//        counters: the holder's packets per send system call, gso (1 = UDP
//        segmentation offload in use).
// Both servers share one io_context thread and one worker pool, as in a node.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <future>
#include <random>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include "blob/blob_store.h"
#include "dispatch/exec_route.h"
#include "dispatch/executor.h"
#include "dispatch/quic_executor.h"
#include "net/router.h"
#include "net/server.h"
#include "quic/iroh_blobs.h"
#include "quic/rpc.h"
#include "transfer/http_blobs.h"

namespace {

using namespace tenzro;

constexpr uint32_t kDModel = 2048;
constexpr size_t kBlobBytes = 64u << 20;

// y = x: transport cost only.
class CopyRunner : public dispatch::ExpertRunner {
 public:
  Result<void> Check(const std::string&, int, int64_t, const std::vector<int>&) override { return Ok(); }
  void Prefetch(const std::string&, int, const std::vector<int>&) override {}
  Result<void> Run(const std::string&, int, int, const float* x, int n, float* y) override {
    std::memcpy(y, x, sizeof(float) * static_cast<size_t>(n) * kDModel);
    return Ok();
  }
};

struct Holder {
  std::string dir;
  boost::asio::io_context io{1};
  ThreadPool pool{2, "bench"};
  net::Router router;
  std::unique_ptr<net::HttpServer> http;
  std::unique_ptr<quic::Endpoint> quic;
  std::shared_ptr<blob::BlobStore> store;
  blob::Blake3Hash blob_hash;
  identity::Identity id = identity::Identity::Generate();
  std::thread loop;

  Holder() {
    dir = (std::filesystem::temp_directory_path() / ("tenzro-quic-bench-" + std::to_string(::getpid()))).string();
    store = std::move(*blob::BlobStore::Open(dir));
    Bytes data(kBlobBytes);
    std::mt19937_64 rng(7);
    for (size_t i = 0; i < data.size(); i += 8) {
      uint64_t v = rng();
      std::memcpy(&data[i], &v, 8);
    }
    blob_hash = store->Put(data)->hash;
    auto runner = std::make_shared<CopyRunner>();
    dispatch::AddExecRoute(router, &pool, runner, {});
    transfer::AddBlobRoutes(router, store);
    http = std::make_unique<net::HttpServer>(io, &router, net::ServerOptions{});
    if (!http->Listen({"127.0.0.1", 0})) std::abort();
    quic = std::move(*quic::Endpoint::Create(io, id, {"127.0.0.1", 0}));
    quic->AddProtocol(quic::kExecAlpn, quic::MakeRpcProtocol(io, [this, runner](const std::string&, Bytes req, quic::Reply reply) {
      pool.Submit([runner, req = std::move(req), reply] { reply(dispatch::ServeExec(req, *runner)); });
    }));
    quic->AddProtocol(quic::kIrohBlobsAlpn, quic::MakeBlobsProvider(io, store, &pool));
    loop = std::thread([this] {
      auto guard = boost::asio::make_work_guard(io);
      io.run();
    });
  }
  ~Holder() {
    boost::asio::post(io, [this] { quic->Shutdown(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    io.stop();
    loop.join();
    pool.Shutdown();
    quic.reset();
    std::filesystem::remove_all(dir);
  }
  quic::PeerAddr quic_peer() { return {id.node_id(), quic->local_endpoint()}; }
};

Holder& TheHolder() {
  static Holder* h = new Holder();  // shared by every benchmark; leaked at exit
  return *h;
}

quic::QuicClient& TheClient() {
  static auto c = quic::QuicClient::Start(identity::Identity::Generate()).value().release();
  return *c;
}

dispatch::ExecRequest Request(uint32_t tokens) {
  dispatch::ExecRequest req;
  req.model = "bench";
  req.d_model = kDModel;
  dispatch::ExecBatch b;
  b.expert = 3;
  b.n_rows = tokens;
  b.rows.assign(static_cast<size_t>(tokens) * kDModel, 0.25f);
  req.experts.push_back(std::move(b));
  return req;
}

void Percentiles(benchmark::State& state, std::vector<double>& us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
}

void BM_ExecRtt(benchmark::State& state) {
  bool use_quic = state.range(0) == 1;
  auto tokens = static_cast<uint32_t>(state.range(1));
  Holder& h = TheHolder();
  static dispatch::QuicExecutor qex(&TheClient());
  static dispatch::HttpExecutor hex;
  dispatch::HolderTarget target = use_quic
                                      ? dispatch::HolderTarget{h.id.node_id(), dispatch::Transport::kQuic,
                                                               h.quic->local_endpoint().HostPort()}
                                      : dispatch::HolderTarget{h.id.node_id(), dispatch::Transport::kHttp,
                                                               h.http->endpoint().Url()};
  dispatch::Executor& ex = use_quic ? static_cast<dispatch::Executor&>(qex) : hex;
  dispatch::ExecRequest req = Request(tokens);
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = ex.Exec(target, req, std::chrono::seconds(10));
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (!r || r->error || r->experts.size() != 1 || r->experts[0].error) {
      {  // both endpoints' connection state, to diagnose a stall
        std::promise<void> p;
        boost::asio::post(h.io, [&] { fprintf(stderr, "SERVER %s\n", h.quic->StatsJson().dump().c_str()); p.set_value(); });
        p.get_future().wait();
        TheClient().RunOnLoop([](quic::Endpoint& ep) { fprintf(stderr, "CLIENT %s\n", ep.StatsJson().dump().c_str()); });
      }
      state.SkipWithError(r ? "holder answered an error" : r.error().ToString().c_str());
      break;
    }
  }
  Percentiles(state, us);
  state.SetLabel(use_quic ? "quic" : "http");
  state.SetBytesProcessed(state.iterations() * 2 * int64_t{tokens} * kDModel * 4);
}
BENCHMARK(BM_ExecRtt)
    ->ArgNames({"quic", "tokens"})
    ->Args({1, 1})
    ->Args({0, 1})
    ->Args({1, 64})
    ->Args({0, 64})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// A fresh client's first exec call (1 row): the QUIC handshake (1 RTT on
// loopback, plus whatever waits on a timer) and the call; BM_ExecRtt/quic:1
// is the call alone. Starting and stopping the client is not timed.
void BM_FirstCall(benchmark::State& state) {
  Holder& h = TheHolder();
  dispatch::HolderTarget target{h.id.node_id(), dispatch::Transport::kQuic, h.quic->local_endpoint().HostPort()};
  dispatch::ExecRequest req = Request(1);
  std::vector<double> us;
  for (auto _ : state) {
    state.PauseTiming();
    auto client = quic::QuicClient::Start(identity::Identity::Generate());
    if (!client) {
      state.SkipWithError(client.error().ToString().c_str());
      break;
    }
    auto ex = std::make_unique<dispatch::QuicExecutor>(client->get());
    state.ResumeTiming();
    auto t0 = std::chrono::steady_clock::now();
    auto r = ex->Exec(target, req, std::chrono::seconds(10));
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    state.PauseTiming();
    ex.reset();
    client->reset();
    state.ResumeTiming();
    if (!r || r->error) {
      state.SkipWithError(r ? "holder answered an error" : r.error().ToString().c_str());
      break;
    }
  }
  Percentiles(state, us);
  state.SetLabel("quic handshake + 1 call");
}
BENCHMARK(BM_FirstCall)->Iterations(30)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_BlobFetch(benchmark::State& state) {
  bool use_quic = state.range(0) == 1;
  Holder& h = TheHolder();
  auto server_stats = [&h] {
    std::promise<quic::EndpointStats> p;
    boost::asio::post(h.io, [&] { p.set_value(h.quic->stats()); });
    return p.get_future().get();
  };
  const quic::EndpointStats s0 = server_stats();
  for (auto _ : state) {
    uint64_t got = 0;
    auto sink = [&](uint64_t, ByteSpan b) -> Result<void> {
      got += b.size();
      return Ok();
    };
    Result<std::optional<uint64_t>> r =
        use_quic ? quic::FetchRangesQuic(TheClient(), h.quic_peer(), h.blob_hash, blob::ChunkRanges::All(), sink)
                 : transfer::FetchRangesHttp(h.blob_hash, blob::ChunkRanges::All(), h.http->endpoint(), sink);
    if (!r || got != kBlobBytes) {
      state.SkipWithError(r ? "short fetch" : r.error().ToString().c_str());
      break;
    }
  }
  if (use_quic) {
    // The holder's sends: packets per system call (UDP_SEGMENT runs and
    // sendmmsg batches) and whether segmentation offload is on.
    const quic::EndpointStats s1 = server_stats();
    const double calls = static_cast<double>(s1.send_calls - s0.send_calls);
    state.counters["pkts_per_send"] = calls > 0 ? static_cast<double>(s1.datagrams_out - s0.datagrams_out) / calls : 0;
    state.counters["gso"] = s1.gso ? 1 : 0;
  }
  state.SetLabel(use_quic ? "quic /iroh-bytes/4" : "http GET /blobs/");
  state.SetBytesProcessed(state.iterations() * int64_t{kBlobBytes});
}
BENCHMARK(BM_BlobFetch)->ArgName("quic")->Arg(1)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
