// Load (docs/reliability.md, "Load"): a 4-node swarm on loopback (every node
// holds both gates and 8 of the 16 experts, replication 2, memory budget
// 4 MiB), then N = 4 and N = 16 client threads each sending distributed
// forwards (layers alternating) straight to the HTTP route of one node
// (thread i -> node i % 4, keep-alive connection) for a fixed time. Prints
// throughput, p50/p99 latency, errors and every node's peak VmRSS against its
// budget. Asserts: no errors, every output bit-identical to the
// single-node reference, peak RSS <= budget + kRssOverhead.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "fault/fault_util.h"

namespace tenzro::fault {
namespace {

constexpr uint64_t kBudget = 4ull << 20;
// Measured: peak VmRSS 22.4 MiB per node with a 4 MiB budget (18.4 MiB over
// it: binary, OpenDHT, QUIC, thread stacks, buffers; docs/reliability.md,
// "Load"). The bound leaves about 3.5x margin for other machines and builds.
constexpr uint64_t kRssOverhead = 64ull << 20;
constexpr double kSecondsPerRun = 3.0;

struct RunStats {
  int clients = 0;
  uint64_t ok = 0, errors = 0, wrong = 0;
  double seconds = 0;
  std::vector<double> latency_ms;
  std::string first_error;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

TEST(LoadTest, ConcurrentForwardsOnFourNodes) {
  TempDir tmp;
  Reference ref;
  StartReference(ref, tmp.Join("r"));
  ASSERT_FALSE(HasFatalFailure());
  std::vector<RunningNode> n;
  for (int k = 0; k < 4; ++k) {
    NodeOptions o;
    o.run_args = SwarmFlags(30, {"--memory-budget", "4MiB"});
    if (k > 0) o.run_args.insert(o.run_args.end(), {"--bootstrap", DhtAddr(n[0])});
    n.push_back(StartNode(tmp.Join("l" + std::to_string(k)), o));
    ASSERT_TRUE(n[k].running());
  }
  for (int k = 0; k < 4; ++k) {
    for (int layer = 0; layer < 2; ++layer) {
      Call g = LoadGate(n[k], layer, ref.GateUri(layer), ref.node.http_url());
      ASSERT_TRUE(g.ok()) << g.message();
    }
  }
  for (int g = 0; g < 2 * kExperts; ++g) {
    const int layer = g / kExperts, e = g % kExperts;
    for (int k : {g % 4, (g + 1) % 4}) {
      Call c = LoadExpert(n[k], layer, e, ref.ExpertUri(layer, e), ref.node.http_url());
      ASSERT_TRUE(c.ok()) << c.message();
    }
  }
  for (int k = 0; k < 4; ++k) ASSERT_TRUE(WaitFor([&] { return Converged(n[k], {0, 1}, 3); }, seconds(60))) << k;

  const std::string body[2] = {ForwardBody(0), ForwardBody(1)};
  std::vector<uint64_t> peak_rss(4, 0);
  auto sample_rss = [&] {
    for (int k = 0; k < 4; ++k) peak_rss[k] = std::max(peak_rss[k], RssBytes(n[k].proc->pid()));
  };
  std::vector<RunStats> runs;
  for (int clients : {4, 16}) {
    RunStats st;
    st.clients = clients;
    std::mutex mu;
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    const auto t0 = Clock::now();
    for (int c = 0; c < clients; ++c)
      threads.emplace_back([&, c] {
        const RunningNode& node = n[c % 4];
        net::ClientOptions o;
        o.timeout = seconds(30);
        net::HttpClient http(node.admin, o);
        http.SetBearerToken(node.token);
        std::vector<double> lat;
        uint64_t ok = 0, errors = 0, wrong = 0;
        std::string err;
        for (int i = 0; !stop.load(); ++i) {
          const int layer = (c + i) % 2;
          const auto s = Clock::now();
          auto r = http.Send("POST", "/v1/moe/forward-distributed", body[layer]);
          const double ms = std::chrono::duration<double, std::milli>(Clock::now() - s).count();
          if (!r || r->status != 200) {
            ++errors;
            if (err.empty()) err = r ? r->body.substr(0, 300) : r.error().ToString();
            continue;
          }
          lat.push_back(ms);
          ++ok;
          if (OutputBytes(json::parse(r->body, nullptr, false)) != ref.local[layer]) ++wrong;
        }
        std::lock_guard<std::mutex> l(mu);
        st.ok += ok;
        st.errors += errors;
        st.wrong += wrong;
        st.latency_ms.insert(st.latency_ms.end(), lat.begin(), lat.end());
        if (st.first_error.empty()) st.first_error = err;
      });
    while (SecondsSince(t0) < kSecondsPerRun) {
      sample_rss();
      std::this_thread::sleep_for(milliseconds(100));  // the run's duration and RSS sampling period
    }
    stop = true;
    for (auto& t : threads) t.join();
    st.seconds = SecondsSince(t0);
    sample_rss();
    std::printf("[load] %2d clients, %.1f s: %llu forwards, %.1f forwards/s, p50 %.1f ms, p99 %.1f ms, "
                "%llu errors, %llu wrong outputs\n",
                clients, st.seconds, (unsigned long long)st.ok, static_cast<double>(st.ok) / st.seconds,
                Percentile(st.latency_ms, 0.5), Percentile(st.latency_ms, 0.99), (unsigned long long)st.errors,
                (unsigned long long)st.wrong);
    runs.push_back(std::move(st));
  }
  for (int k = 0; k < 4; ++k) {
    Call s = AdminCall(n[k], "GET", "/v1/moe/status");
    ASSERT_TRUE(s.ok()) << s.message();
    const uint64_t max_warm = s.body["memory"]["max_warm_bytes"];
    std::printf("[load] node %d: peak VmRSS %.1f MiB, budget %.1f MiB, max warm %.2f MiB, RSS - budget %.1f MiB\n", k,
                peak_rss[k] / 1048576.0, kBudget / 1048576.0, max_warm / 1048576.0,
                (static_cast<double>(peak_rss[k]) - static_cast<double>(kBudget)) / 1048576.0);
    EXPECT_LE(max_warm, kBudget);
    EXPECT_GT(peak_rss[k], 0u);
    EXPECT_LE(peak_rss[k], kBudget + kRssOverhead) << "node " << k;
  }
  for (const RunStats& st : runs) {
    EXPECT_EQ(st.errors, 0u) << st.clients << " clients: " << st.first_error;
    EXPECT_EQ(st.wrong, 0u) << st.clients << " clients";
    EXPECT_GT(st.ok, 0u);
  }
  for (int k = 0; k < 4; ++k) EXPECT_TRUE(Healthy(n[k]));
  for (auto& node : n) node.proc->Signal(SIGTERM);
  ref.node.proc->Signal(SIGTERM);
  for (auto& node : n) EXPECT_EQ(node.proc->Wait(seconds(30)), 0);
  EXPECT_EQ(ref.node.proc->Wait(seconds(30)), 0);
}

}  // namespace
}  // namespace tenzro::fault
