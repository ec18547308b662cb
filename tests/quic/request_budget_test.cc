// The endpoint-wide budget on in-flight request bytes (quic/request_budget.h)
// with real QUIC peers on loopback: flooders with many streams of large
// requests against a small budget are refused (stream reset, kStreamBusy ->
// kResourceExhausted) while the bytes the server holds never pass the budget;
// an honest peer on another address still gets every small call answered;
// everything is released once the flood is over.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "identity/identity.h"
#include "quic/quic_client.h"
#include "quic/request_budget.h"
#include "quic/rpc.h"

namespace tenzro::quic {
namespace {

constexpr const char* kAlpn = "tenzro/test-budget/1";
constexpr uint64_t kMiB = 1u << 20;

TEST(RequestBudgetTest, ChargesAndReleasesPerIpAndInTotal) {
  auto b = std::make_shared<RequestBudget>(10, 6);
  EXPECT_TRUE(b->TryCharge("a", 6));
  EXPECT_FALSE(b->TryCharge("a", 1));  // a's share
  EXPECT_TRUE(b->TryCharge("b", 4));
  EXPECT_FALSE(b->TryCharge("c", 1));  // the total
  EXPECT_EQ(b->stats().in_flight, 10u);
  EXPECT_EQ(b->stats().refused, 1u);
  EXPECT_EQ(b->stats().refused_per_ip, 1u);
  b->Release("a", 6);
  {
    RequestCharge c(b, "c");
    EXPECT_TRUE(c.Grow(3));
    EXPECT_TRUE(c.Grow(3));
    EXPECT_FALSE(c.Grow(1));  // c's share
    RequestCharge moved = std::move(c);
    EXPECT_EQ(moved.bytes(), 6u);
    EXPECT_EQ(b->stats().in_flight, 10u);
  }
  EXPECT_EQ(b->stats().in_flight, 4u);  // released with the charge
  EXPECT_EQ(b->stats().peak, 10u);
  b->Release("b", 4);
  EXPECT_EQ(b->stats().in_flight, 0u);
  EXPECT_EQ(b->stats().ips, 0u);
}

// A server whose handler holds each request `hold` before replying with its
// size (on threads of its own, joined before the server goes).
class BudgetServer {
 public:
  BudgetServer(EndpointOptions opts, std::chrono::milliseconds hold) : hold_(hold) {
    server_ = QuicClient::Start(id_, {"127.0.0.1", 0}, opts).value();
    server_->RunOnLoop([&](Endpoint& ep) {
      ep.AddProtocol(kAlpn, MakeRpcProtocol(ep.io(), [this](const std::string&, Bytes req, Reply reply) {
        std::lock_guard<std::mutex> lock(mu_);
        workers_.emplace_back([this, n = req.size(), reply = std::move(reply)]() mutable {
          std::this_thread::sleep_for(hold_);
          std::string s = std::to_string(n);
          reply(Bytes(s.begin(), s.end()));
        });
      }));
    });
    budget_ = server_->endpoint().request_budget();
  }
  ~BudgetServer() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& t : workers_) t.join();
  }
  PeerAddr addr() { return {id_.node_id(), server_->endpoint().local_endpoint()}; }
  RequestBudget& budget() { return *budget_; }
  EndpointStats Stats() {
    EndpointStats st;
    server_->RunOnLoop([&](Endpoint& ep) { st = ep.stats(); });
    return st;
  }

 private:
  identity::Identity id_ = identity::Identity::Generate();
  std::chrono::milliseconds hold_;
  std::unique_ptr<QuicClient> server_;
  std::shared_ptr<RequestBudget> budget_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

struct FloodResult {
  int ok = 0, busy = 0, other = 0;
};

// `clients` keys on `ip`, each with `threads` callers sending `calls`
// requests of `bytes`.
FloodResult Flood(BudgetServer& s, const std::string& ip, int clients, int threads, int calls, size_t bytes) {
  std::vector<std::unique_ptr<QuicClient>> cs;
  for (int i = 0; i < clients; ++i) cs.push_back(QuicClient::Start(identity::Identity::Generate(), {ip, 0}).value());
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::vector<std::thread> ts;
  const Bytes req(bytes, 0x5a);
  for (int c = 0; c < clients; ++c)
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, c] {
        for (int i = 0; i < calls; ++i) {
          CallOptions o;
          o.total_timeout = std::chrono::seconds(30);
          auto r = CallRpc(*cs[c], s.addr(), kAlpn, req, o);
          if (r) ++ok;
          else if (r.error().code() == ErrorCode::kResourceExhausted) ++busy;
          else {
            ++other;
            ADD_FAILURE() << r.error().ToString();
          }
        }
      });
  for (auto& t : ts) t.join();
  return {ok.load(), busy.load(), other.load()};
}

// Polls the budget's own counter until `stop`; returns the largest value seen.
uint64_t WatchMax(RequestBudget& b, const std::atomic<bool>& stop) {
  uint64_t most = 0;
  while (!stop) {
    most = std::max(most, b.stats().in_flight);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return most;
}

TEST(QuicRequestBudgetTest, FloodOfLargeRequestsIsRefusedAndMemoryStaysWithinTheBudget) {
  EndpointOptions o;
  o.max_inflight_request_bytes = 4 * kMiB;
  o.max_inflight_request_bytes_per_ip = 3 * kMiB;
  BudgetServer s(o, std::chrono::milliseconds(100));

  std::atomic<bool> stop{false};
  uint64_t seen_max = 0;
  std::thread watcher([&] { seen_max = WatchMax(s.budget(), stop); });
  // Honest small calls from another address, all through the flood.
  std::atomic<bool> flooding{true};
  std::atomic<int> honest_ok{0}, honest_failed{0};
  std::thread honest([&] {
    auto c = QuicClient::Start(identity::Identity::Generate(), {"127.0.0.2", 0}).value();
    const Bytes small(1000, 1);
    while (flooding) {
      auto r = CallRpc(*c, s.addr(), kAlpn, small);
      if (r && std::string(r->begin(), r->end()) == "1000") ++honest_ok;
      else {
        ++honest_failed;
        ADD_FAILURE() << (r ? "wrong answer" : r.error().ToString());
      }
    }
  });
  // Three keys on 127.0.0.1, 8 streams each, 1 MiB requests: 24 MiB offered at once.
  const FloodResult f = Flood(s, "127.0.0.1", 3, 8, 4, kMiB);
  flooding = false;
  honest.join();
  stop = true;
  watcher.join();

  const EndpointStats st = s.Stats();
  std::printf("flood: %d answered, %d refused busy; honest %d ok; peak in flight %.2f MiB (budget 4, per IP 3); "
              "refused by total %llu, by IP share %llu\n",
              f.ok, f.busy, honest_ok.load(), static_cast<double>(st.inflight_request_peak) / kMiB,
              static_cast<unsigned long long>(st.requests_refused_budget),
              static_cast<unsigned long long>(st.requests_refused_budget_per_ip));
  EXPECT_EQ(f.other, 0);
  EXPECT_GT(f.busy, 0);
  EXPECT_GT(f.ok, 0);
  EXPECT_GT(st.requests_refused_budget_per_ip, 0u);
  EXPECT_LE(st.inflight_request_peak, 4 * kMiB);
  EXPECT_LE(seen_max, 4 * kMiB);
  EXPECT_GT(honest_ok.load(), 0);
  EXPECT_EQ(honest_failed.load(), 0);

  // Everything is released once the replies went out.
  for (int i = 0; i < 200 && s.budget().stats().in_flight > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(s.budget().stats().in_flight, 0u);
  EXPECT_EQ(s.Stats().inflight_request_bytes, 0u);
}

TEST(QuicRequestBudgetTest, TheTotalBindsManyAddressesAndResetStreamsFreeTheirBytes) {
  EndpointOptions o;
  o.max_inflight_request_bytes = 3 * kMiB;
  o.max_inflight_request_bytes_per_ip = 0;  // the total only
  BudgetServer s(o, std::chrono::milliseconds(50));
  std::atomic<bool> stop{false};
  uint64_t seen_max = 0;
  std::thread watcher([&] { seen_max = WatchMax(s.budget(), stop); });
  FloodResult a, b;
  std::thread other([&] { b = Flood(s, "127.0.0.3", 2, 6, 3, kMiB); });
  a = Flood(s, "127.0.0.1", 2, 6, 3, kMiB);
  other.join();
  stop = true;
  watcher.join();
  const EndpointStats st = s.Stats();
  EXPECT_EQ(a.other + b.other, 0);
  EXPECT_GT(a.busy + b.busy, 0);
  EXPECT_GT(st.requests_refused_budget, 0u);
  EXPECT_EQ(st.requests_refused_budget_per_ip, 0u);
  EXPECT_LE(st.inflight_request_peak, 3 * kMiB);
  EXPECT_LE(seen_max, 3 * kMiB);

  // A caller that gives up half-way (its reader resets the stream) frees
  // what it had sent: the request was never complete.
  {
    auto c = QuicClient::Start(identity::Identity::Generate()).value();
    CallOptions co;
    co.total_timeout = std::chrono::milliseconds(1);  // ends before the request is out
    (void)CallRpc(*c, s.addr(), kAlpn, Bytes(2 * kMiB, 7), co);
  }
  for (int i = 0; i < 300 && s.budget().stats().in_flight > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(s.budget().stats().in_flight, 0u);
  // And the endpoint still serves.
  auto c = QuicClient::Start(identity::Identity::Generate()).value();
  auto r = CallRpc(*c, s.addr(), kAlpn, Bytes(10, 1));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(std::string(r->begin(), r->end()), "10");
}

}  // namespace
}  // namespace tenzro::quic
