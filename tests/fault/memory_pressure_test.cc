// Memory-budget pressure under concurrent forwards (docs/reliability.md): a
// node M with a budget of about four experts holds all 16 experts of both
// layers (and the gates); four threads run local forwards of alternating
// layers at once while another polls M's status. Every output equals the
// reference node's (unlimited budget), warm bytes never exceed the budget,
// experts are promoted and demoted, the node keeps serving.
#include <atomic>
#include <mutex>

#include "fault/fault_util.h"

namespace tenzro::fault {
namespace {

TEST(MemoryPressureTest, ConcurrentForwardsStayWithinBudget) {
  TempDir tmp;
  Reference ref;
  StartReference(ref, tmp.Join("r"));
  ASSERT_FALSE(HasFatalFailure());
  const uint64_t expert_bytes = ref.Expert(0, 0)["bytes"];
  const uint64_t budget = 1024 * 1024;  // ~4 of the 16 experts (255584 bytes each as blobs)
  NodeOptions o;
  o.run_args = {"--memory-budget", "1MiB"};
  o.threads = 4;
  RunningNode m = StartNode(tmp.Join("m"), o);
  ASSERT_TRUE(m.running());
  for (int layer = 0; layer < 2; ++layer) {
    Call g = LoadGate(m, layer, ref.GateUri(layer), ref.node.http_url());
    ASSERT_TRUE(g.ok()) << g.message();
    for (int e = 0; e < kExperts; ++e) {
      Call c = LoadExpert(m, layer, e, ref.ExpertUri(layer, e), ref.node.http_url());
      ASSERT_TRUE(c.ok()) << c.message();
    }
  }

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> max_warm{0}, polls{0};
  std::mutex mu;
  std::string poll_error;
  std::thread poller([&] {
    while (!stop.load()) {
      Call s = AdminCall(m, "GET", "/v1/moe/status");
      if (!s.ok()) {
        std::lock_guard<std::mutex> l(mu);
        poll_error = s.message();
        return;
      }
      const uint64_t warm = s.body["memory"]["warm_bytes"];
      uint64_t prev = max_warm.load();
      while (warm > prev && !max_warm.compare_exchange_weak(prev, warm)) {
      }
      ++polls;
      std::this_thread::sleep_for(milliseconds(10));  // sampling period, not synchronisation
    }
  });
  constexpr int kThreads = 4, kPerThread = 12;
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> clients;
  std::string first_error;
  for (int t = 0; t < kThreads; ++t)
    clients.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int layer = (t + i) % 2;
        Call f = Forward(m, layer, /*distributed=*/false);
        if (!f.ok()) {
          ++failed;
          std::lock_guard<std::mutex> l(mu);
          if (first_error.empty()) first_error = f.message();
          continue;
        }
        if (OutputBytes(f.body) != ref.local[layer]) ++wrong;
      }
    });
  for (auto& c : clients) c.join();
  stop = true;
  poller.join();
  EXPECT_EQ(poll_error, "");
  EXPECT_EQ(failed.load(), 0) << first_error;
  EXPECT_EQ(wrong.load(), 0) << "outputs differ from the single-node reference";

  Call s = AdminCall(m, "GET", "/v1/moe/status");
  ASSERT_TRUE(s.ok()) << s.message();
  const json& mem = s.body["memory"];
  const json& ctr = s.body["counters"];
  std::printf("[fault] memory pressure: budget %llu, expert blob %llu, max warm polled %llu (%llu polls), "
              "node max_warm_bytes %llu, promotions %llu, demotions %llu\n",
              (unsigned long long)budget, (unsigned long long)expert_bytes, (unsigned long long)max_warm.load(),
              (unsigned long long)polls.load(), (unsigned long long)mem["max_warm_bytes"].get<uint64_t>(),
              (unsigned long long)ctr["promotions"].get<uint64_t>(),
              (unsigned long long)ctr["demotions"].get<uint64_t>());
  EXPECT_EQ(mem["budget_bytes"].get<uint64_t>(), budget);
  EXPECT_GE(polls.load(), 1u);
  EXPECT_LE(max_warm.load(), budget);
  EXPECT_LE(mem["max_warm_bytes"].get<uint64_t>(), budget);
  EXPECT_GT(ctr["promotions"].get<uint64_t>(), 4u);
  EXPECT_GT(ctr["demotions"].get<uint64_t>(), 0u);
  EXPECT_TRUE(Healthy(m));
  EXPECT_EQ(StoreProblems(m.dir + "/blobs"), "");
  EXPECT_EQ(m.Stop(), 0) << m.proc->Log();
  EXPECT_EQ(ref.node.Stop(), 0);
}

}  // namespace
}  // namespace tenzro::fault
