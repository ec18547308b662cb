// POST /v1/moe/exec on real loopback HTTP servers (in-process, one loop
// thread each) and the HttpExecutor: hostile bodies get error frames, never a
// crash; a forward over HTTP equals the local block bit for bit, and survives
// a stopped holder and a holder that misses its deadline.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstring>
#include <thread>

#include "dispatch/exec_route.h"
#include "dispatch/forward.h"
#include "net/client.h"
#include "net/server.h"
#include "runtime/moe_block.h"
#include "runtime/test_weights.h"

namespace tenzro::dispatch {
namespace {

// f32 rows (exact): the distributed forward is the local block bit for bit.
// (The default, bf16, rounds: WireDtypeMatchesTheLocalBlockRoundedTheSameWay.)
ForwardOptions Exact() {
  ForwardOptions o;
  o.dtype = RowType::kF32;
  return o;
}

using quant::GgmlType;
using runtime::testing::RandomActs;
using runtime::testing::RandomMatrix;
using std::chrono::milliseconds;

constexpr int64_t kEmbd = 256, kFf = 256;
constexpr int kExperts = 6, kTok = 5;
const std::string kModel = "m";

std::vector<runtime::ExpertWeights>& Experts() {
  static std::vector<runtime::ExpertWeights> w = [] {
    std::vector<runtime::ExpertWeights> v;
    for (int e = 0; e < kExperts; ++e)
      v.push_back({RandomMatrix(GgmlType::Q4_K, kFf, kEmbd, 10 + e), RandomMatrix(GgmlType::Q4_K, kFf, kEmbd, 30 + e),
                   RandomMatrix(GgmlType::Q4_K, kEmbd, kFf, 50 + e)});
    return v;
  }();
  return w;
}

// Sleeps before every run (a holder that misses deadlines).
class SlowRunner : public MemoryRunner {
 public:
  using MemoryRunner::MemoryRunner;
  Result<void> Run(const std::string& m, int l, int e, const float* x, int n, float* y) override {
    std::this_thread::sleep_for(milliseconds(1500));
    return MemoryRunner::Run(m, l, e, x, n, y);
  }
};

// One holder: an HTTP server whose router has only the exec route.
class Holder {
 public:
  Holder(std::string id, const std::vector<int>& experts, bool slow = false) : id_(std::move(id)) {
    runner_ = slow ? std::make_shared<SlowRunner>(kModel, nullptr) : std::make_shared<MemoryRunner>(kModel, nullptr);
    for (int e : experts) runner_->Add(0, e, &Experts()[e]);
    AddExecRoute(router_, &pool_, runner_, {});
    net::ServerOptions o;
    o.max_body_bytes = 1 << 20;
    server_ = std::make_unique<net::HttpServer>(ioc_, &router_, o);
    EXPECT_TRUE(server_->Listen({"127.0.0.1", 0}));
    loop_ = std::thread([this] { ioc_.run(); });
    for (int e : experts) decl_.experts.push_back({0, e, "q4_k", "q4_k", "q4_k", "", swarm::Tier::kWarm, 0});
    decl_.node_id = id_;
    decl_.model = kModel;
    decl_.endpoints.push_back({"http", server_->endpoint().Url()});
  }
  ~Holder() { Stop(); }
  void Stop() {
    if (!loop_.joinable()) return;
    boost::asio::post(ioc_, [this] { server_->Stop(); });
    loop_.join();
    pool_.Shutdown();
  }
  const swarm::Declaration& decl() const { return decl_; }
  net::Endpoint endpoint() const { return server_->endpoint(); }

 private:
  std::string id_;
  boost::asio::io_context ioc_;
  ThreadPool pool_{2, "holder"};
  net::Router router_;
  std::shared_ptr<MemoryRunner> runner_;
  std::unique_ptr<net::HttpServer> server_;
  std::thread loop_;
  swarm::Declaration decl_;
};

Result<ExecResponse> Post(const net::Endpoint& ep, const Bytes& body, int* status) {
  net::HttpClient c(ep);
  TENZRO_TRY(net::ClientResponse r, c.Send("POST", "/v1/moe/exec",
                                           std::string_view(reinterpret_cast<const char*>(body.data()), body.size()),
                                           kExecContentType));
  *status = r.status;
  EXPECT_EQ(r.content_type, kExecContentType);
  return DecodeExecResponse(ByteSpan(reinterpret_cast<const uint8_t*>(r.body.data()), r.body.size()));
}

ExecRequest Request(int expert, uint32_t d_model = kEmbd) {
  ExecRequest r;
  r.request_id = 77;
  r.model = kModel;
  r.d_model = d_model;
  r.experts.push_back({expert, 2, RandomActs(2 * d_model, 3)});
  return r;
}

TEST(ExecHttpTest, HostileBodiesGetErrorFrames) {
  Holder h("a", {0, 1});
  int status = 0;
  // Not a frame at all.
  auto r = Post(h.endpoint(), Bytes{'h', 'e', 'l', 'l', 'o'}, &status);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(status, 422);
  ASSERT_TRUE(r->error.has_value());
  EXPECT_EQ(r->error->code(), ErrorCode::kCorruption);
  // Wrong d_model for a held expert.
  ExecRequest q = Request(0, 512);
  r = Post(h.endpoint(), EncodeExecRequest(q), &status);
  ASSERT_TRUE(r);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(r->request_id, 77u);
  EXPECT_NE(r->error->message().find("d_model 512"), std::string::npos) << r->error->message();
  // NaN in a row.
  q = Request(0);
  q.experts[0].rows[5] = std::nanf("");
  r = Post(h.endpoint(), EncodeExecRequest(q), &status);
  ASSERT_TRUE(r);
  EXPECT_EQ(status, 400);
  EXPECT_NE(r->error->message().find("NaN"), std::string::npos);
  // An expert it does not hold: a per-expert error in a 200 answer, the
  // others still computed.
  q = Request(4);
  q.experts.push_back({1, 1, RandomActs(kEmbd, 4)});
  r = Post(h.endpoint(), EncodeExecRequest(q), &status);
  ASSERT_TRUE(r);
  EXPECT_EQ(status, 200);
  ASSERT_EQ(r->experts.size(), 2u);
  EXPECT_EQ(r->experts[0].error->code(), ErrorCode::kNotFound);
  EXPECT_FALSE(r->experts[1].error);
  std::vector<float> y(kEmbd);
  ASSERT_TRUE(runtime::ExpertFfn(Experts()[1], q.experts[1].rows.data(), 1, y.data()));
  EXPECT_EQ(r->experts[1].rows, y);
  // Over the server's body limit: the JSON 413 of every route.
  net::HttpClient c(h.endpoint());
  auto big = c.Send("POST", "/v1/moe/exec", std::string(2 << 20, 'x'), kExecContentType);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
}

struct Net {
  std::vector<std::unique_ptr<Holder>> holders;
  std::unique_ptr<Dispatcher> d;
  MemoryRunner self{kModel, nullptr};
  Net() {
    Dispatcher::Sources s;
    s.self_node_id = "self";
    s.live = [this](const std::string&) -> Result<std::vector<swarm::Declaration>> {
      std::vector<swarm::Declaration> v;
      for (const auto& h : holders) v.push_back(h->decl());
      return v;
    };
    s.local = [](const std::string&) { return std::set<std::pair<int, int>>{}; };
    d = std::make_unique<Dispatcher>(s, std::make_shared<LocalExecutor>(self, ExecServeOptions{}),
                                     std::make_shared<HttpExecutor>());
  }
};

struct Block {
  std::vector<float> x = RandomActs(kTok * kEmbd, 9);
  std::vector<runtime::TokenRouting> routing;
  std::vector<float> want = std::vector<float>(kTok * kEmbd);
  Block() {
    // Token t -> experts t % 6 and (t + 3) % 6.
    for (int t = 0; t < kTok; ++t) routing.push_back({{{t % kExperts, 0.6f}, {(t + 3) % kExperts, 0.4f}}});
    std::vector<const runtime::ExpertWeights*> ptrs;
    for (const auto& e : Experts()) ptrs.push_back(&e);
    EXPECT_TRUE(runtime::ComputeRoutedExperts(ptrs, routing, x.data(), kEmbd, want.data()));
  }
  ForwardInput Input() const {
    ForwardInput in;
    in.model = kModel;
    in.d_model = kEmbd;
    in.n_tok = kTok;
    in.x = x.data();
    in.routing = routing;
    return in;
  }
};

TEST(ExecHttpTest, ForwardOverHttpWithAStoppedHolder) {
  Net n;
  n.holders.push_back(std::make_unique<Holder>("a", std::vector<int>{0, 1, 2, 3}));
  n.holders.push_back(std::make_unique<Holder>("b", std::vector<int>{2, 3, 4, 5}));
  n.holders.push_back(std::make_unique<Holder>("c", std::vector<int>{0, 1, 4, 5}));
  Block b;
  std::vector<float> out(kTok * kEmbd);
  auto r = n.d->Forward(b.Input(), Exact(), out.data());
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(std::memcmp(out.data(), b.want.data(), out.size() * 4), 0);
  // a holds experts 0-3 and b or c the other two: the planner asks two holders.
  EXPECT_EQ(r->calls.size(), 2u);
  for (const auto& c : r->calls) {
    EXPECT_GT(c.compute_ms, 0);
    EXPECT_GE(c.rtt_ms, c.compute_ms);
  }
  // Stop "a" and make b and c look busy (rows queued), so the plan picks a
  // first: its items move to b / c and a is banned.
  n.holders[0]->Stop();
  n.d->stats().Begin("b", 100000);
  n.d->stats().Begin("c", 100000);
  for (int i = 0; i < 3; ++i) {
    std::fill(out.begin(), out.end(), 0.0f);
    r = n.d->Forward(b.Input(), Exact(), out.data());
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(std::memcmp(out.data(), b.want.data(), out.size() * 4), 0);
    EXPECT_EQ(r->rounds, i == 0 ? 2 : 1) << ReportToJson(*r).dump();
  }
  EXPECT_EQ(n.d->stats().Banned(std::chrono::steady_clock::now()).count("a"), 1u);
}

TEST(ExecHttpTest, AHolderPastItsDeadlineIsReplaced) {
  Net n;
  n.holders.push_back(std::make_unique<Holder>("a", std::vector<int>{0, 1, 2, 3, 4, 5}, /*slow=*/true));
  n.holders.push_back(std::make_unique<Holder>("b", std::vector<int>{0, 1, 2, 3, 4, 5}));
  Block b;
  ForwardOptions o = Exact();
  o.holder_timeout = milliseconds(300);
  std::vector<float> out(kTok * kEmbd);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = n.d->Forward(b.Input(), o, out.data());
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1400));
  EXPECT_EQ(std::memcmp(out.data(), b.want.data(), out.size() * 4), 0);
  bool deadline = false;
  for (const auto& c : r->calls) deadline |= c.error && c.error->code() == ErrorCode::kDeadlineExceeded;
  EXPECT_TRUE(deadline) << ReportToJson(*r).dump();
  EXPECT_EQ(r->rounds, 2);
}

// A hedge's loser over HTTP: cancelling the call aborts its connection, so
// the call ends at once (not when the slow holder answers 1.5 s later or at
// its 30 s deadline), and the executor's next call to that holder works on
// a fresh connection.
TEST(ExecHttpTest, ACancelledCallEndsAtOnce) {
  Holder slow("a", {0}, /*slow=*/true);
  HttpExecutor ex;
  const HolderTarget t{"a", Transport::kHttp, slow.endpoint().Url()};
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(100));
    cancel.Cancel();
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = ex.ExecCancellable(t, Request(0), std::chrono::seconds(30), cancel);
  const auto took = std::chrono::steady_clock::now() - t0;
  canceller.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable) << r.error().ToString();
  EXPECT_NE(r.error().ToString().find("cancelled"), std::string::npos) << r.error().ToString();
  EXPECT_LT(took, milliseconds(1000));  // the holder sleeps 1,500 ms
  auto again = ex.Exec(t, Request(0), std::chrono::seconds(30));
  ASSERT_TRUE(again) << again.error().ToString();
  ASSERT_EQ(again->experts.size(), 1u);
  EXPECT_FALSE(again->experts[0].error);
  // Already cancelled before the call: it still ends at once.
  CancelToken done;
  done.Cancel();
  auto pre = ex.ExecCancellable(t, Request(0), std::chrono::seconds(30), done);
  EXPECT_FALSE(pre);
}

}  // namespace
}  // namespace tenzro::dispatch
