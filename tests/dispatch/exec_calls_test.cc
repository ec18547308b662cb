// RunCalls on the call pool (exec_calls.h): remote calls on pool threads,
// the local one on the caller; no deadlock when the pool is saturated or
// when the caller is itself a thread of the pool; answers checked against
// their request; no executor is an error.
#include "dispatch/exec_calls.h"
#include "dispatch/forward.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <thread>

namespace tenzro::dispatch {
namespace {

// Answers every request after `delay`, recording the threads it ran on.
class EchoExecutor : public Executor {
 public:
  explicit EchoExecutor(std::chrono::milliseconds delay = std::chrono::milliseconds(0)) : delay_(delay) {}
  Result<ExecResponse> Exec(const HolderTarget&, const ExecRequest& req, std::chrono::milliseconds) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads_.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(delay_);
    ExecResponse r;
    r.request_id = corrupt_ ? req.request_id + 1 : req.request_id;
    r.layer = req.layer;
    r.d_model = req.d_model;
    return r;
  }
  std::set<std::thread::id> threads() {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_;
  }
  bool corrupt_ = false;

 private:
  const std::chrono::milliseconds delay_;
  std::mutex mu_;
  std::set<std::thread::id> threads_;
};

std::vector<Call> Calls(int remote, bool local) {
  std::vector<Call> calls;
  for (int i = 0; i < remote + (local ? 1 : 0); ++i) {
    Call& c = calls.emplace_back();
    c.batch.node_id = std::string(64, static_cast<char>('a' + i));
    c.batch.transport = local && i == remote ? Transport::kLocal : Transport::kHttp;
    c.req.request_id = 100 + i;
    c.req.d_model = 8;
    c.timeout = std::chrono::milliseconds(1000);
  }
  return calls;
}

TEST(ExecCallsTest, RemoteCallsOnThePoolLocalOnTheCaller) {
  ThreadPool pool(4, "calls");
  // The local call outlasts the pool's wake-up, so the pool takes every remote call.
  EchoExecutor remote(std::chrono::milliseconds(20)), local(std::chrono::milliseconds(200));
  HolderStatsTable stats;
  std::vector<Call> calls = Calls(3, /*local=*/true);
  RunCalls(calls, [&](Transport t) -> Executor* { return t == Transport::kLocal ? &local : &remote; }, stats, pool);
  for (const Call& c : calls) {
    ASSERT_TRUE(c.resp) << c.resp.error().ToString();
    EXPECT_EQ(c.resp->request_id, c.req.request_id);
    EXPECT_GT(c.rtt_ms, 0);
  }
  EXPECT_EQ(local.threads(), (std::set<std::thread::id>{std::this_thread::get_id()}));
  EXPECT_EQ(remote.threads().count(std::this_thread::get_id()), 0u);  // the pool was free: it ran them
  EXPECT_EQ(stats.Snapshot().size(), 3u);                              // remote calls measured
}

TEST(ExecCallsTest, SaturatedPoolDoesNotBlockTheCaller) {
  ThreadPool pool(1, "calls");
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  pool.Submit([released] { released.wait(); });  // the only thread is busy
  EchoExecutor ex;
  HolderStatsTable stats;
  std::vector<Call> calls = Calls(3, /*local=*/false);
  RunCalls(calls, [&](Transport) -> Executor* { return &ex; }, stats, pool);  // runs them itself
  for (const Call& c : calls) EXPECT_TRUE(c.resp);
  EXPECT_EQ(ex.threads(), (std::set<std::thread::id>{std::this_thread::get_id()}));
  release.set_value();
}

TEST(ExecCallsTest, CallerOnAPoolThreadDoesNotDeadlock) {
  ThreadPool pool(1, "calls");
  EchoExecutor ex;
  HolderStatsTable stats;
  std::vector<Call> calls = Calls(2, /*local=*/false);
  std::promise<void> done;
  pool.Submit([&] {
    RunCalls(calls, [&](Transport) -> Executor* { return &ex; }, stats, pool);
    done.set_value();
  });
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  for (const Call& c : calls) EXPECT_TRUE(c.resp);
}

TEST(ExecCallsTest, WrongAnswerAndMissingExecutorFailTheCall) {
  ThreadPool pool(2, "calls");
  EchoExecutor ex;
  ex.corrupt_ = true;
  HolderStatsTable stats;
  std::vector<Call> calls = Calls(1, /*local=*/true);
  RunCalls(calls, [&](Transport t) -> Executor* { return t == Transport::kLocal ? nullptr : &ex; }, stats, pool);
  ASSERT_FALSE(calls[0].resp);
  EXPECT_EQ(calls[0].resp.error().code(), ErrorCode::kCorruption);
  EXPECT_EQ(calls[0].Outcome().status, CallStatus::kFailed);
  ASSERT_FALSE(calls[1].resp);
  EXPECT_EQ(calls[1].resp.error().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(calls[1].Outcome().remote);
}

TEST(ExecCallsTest, SlowStartRoundTripsDoubleTheWindowEachTrip) {
  EXPECT_EQ(SlowStartRoundTrips(0), 0);
  EXPECT_EQ(SlowStartRoundTrips(1), 1);
  EXPECT_EQ(SlowStartRoundTrips(12000), 1);        // the initial window
  EXPECT_EQ(SlowStartRoundTrips(12001), 2);
  EXPECT_EQ(SlowStartRoundTrips(3 * 12000), 2);    // 12 + 24 KB
  EXPECT_EQ(SlowStartRoundTrips(7 * 12000), 3);    // 12 + 24 + 48 KB
  EXPECT_EQ(SlowStartRoundTrips(800000), 7);       // a 133-row bf16 prefill call at d_model 3072
}

// A measured holder 50 ms away: a one-row decode call keeps the short
// deadline, a prefill-sized call gets one base per extra slow-start round
// trip (the WAN bench's 16 streams at 50 ms and 1 % loss ran past the old
// deadline in every round), capped by holder_timeout.
TEST(ExecCallsTest, CallTimeoutScalesWithTheBytesAndTheHoldersRoundTrip) {
  ForwardOptions opt;  // min 1 s, factor 20, max 10 s
  HolderBatch b;
  b.node_id = "h";
  b.transport = Transport::kQuic;
  std::map<std::string, HolderStats> stats;
  stats["h"].measured = true;
  stats["h"].rtt_ms = 50;
  stats["h"].rows_per_s = 20000;
  b.rows = 1;
  EXPECT_EQ(CallTimeout(b, stats, opt, true, 6144).count(), 1001);  // 20 x (50 + 0.05) ms
  b.rows = 133;
  const auto big = CallTimeout(b, stats, opt, true, 133 * 6144);
  EXPECT_EQ(big.count(), 7133);  // 20 x (7 x 50 + 6.65) ms
  EXPECT_EQ(CallTimeout(b, stats, opt, true, 0).count(), 1133);  // bytes unknown: the fit alone
  EXPECT_EQ(CallTimeout(b, stats, opt, true, 64ull << 20).count(), 10000);  // capped by holder_timeout
  stats["h"].rows_queued = 2000;  // other calls' rows ahead of this one: 100 ms more
  EXPECT_EQ(CallTimeout(b, stats, opt, true, 133 * 6144).count(), 9133);
  stats["h"].rows_queued = 0;
  stats["h"].rtt_ms = 2;  // loopback: the 1 s floor
  EXPECT_EQ(CallTimeout(b, stats, opt, true, 133 * 6144).count(), 1000);
  EXPECT_EQ(CallTimeout(b, stats, opt, false, 133 * 6144).count(), 10000);  // not adaptive
}

}  // namespace
}  // namespace tenzro::dispatch
