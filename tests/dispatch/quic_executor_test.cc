// The QUIC executor of the distributed forward against a QUIC holder that
// serves exec frames with ServeExec, and its HTTP fallback.
#include <gtest/gtest.h>

#include <atomic>

#include "dispatch/exec_server.h"
#include "dispatch/quic_executor.h"
#include "identity/identity.h"
#include "quic/rpc.h"

namespace tenzro::dispatch {
namespace {

// y = 2x + expert, for any expert of model "m".
class DoublingRunner : public ExpertRunner {
 public:
  Result<void> Check(const std::string& model, int, int64_t, const std::vector<int>&) override {
    if (model != "m") return Error::InvalidArgument("unknown model {}", model);
    return Ok();
  }
  void Prefetch(const std::string&, int, const std::vector<int>&) override {}
  Result<void> Run(const std::string&, int, int expert, const float* x, int n, float* y) override {
    for (int i = 0; i < n * 4; ++i) y[i] = 2 * x[i] + static_cast<float>(expert);
    return Ok();
  }
};

ExecRequest Request() {
  ExecRequest req;
  req.request_id = 42;
  req.model = "m";
  req.layer = 3;
  req.d_model = 4;
  for (int e : {1, 5}) {
    ExecBatch b;
    b.expert = e;
    b.n_rows = 2;
    for (int i = 0; i < 8; ++i) b.rows.push_back(static_cast<float>(i) * 0.5f);
    req.experts.push_back(b);
  }
  return req;
}

// Records calls instead of doing HTTP.
class FakeHttp : public Executor {
 public:
  Result<ExecResponse> Exec(const HolderTarget& t, const ExecRequest& req,
                                      std::chrono::milliseconds) override {
    ++calls;
    last_endpoint = t.endpoint;
    ExecResponse r;
    r.request_id = req.request_id;
    return r;
  }
  std::atomic<int> calls{0};
  std::string last_endpoint;
};

TEST(QuicExecutor, RunsExecFramesOverQuicAndFallsBackToHttp) {
  identity::Identity holder_id = identity::Identity::Generate();
  auto holder = quic::QuicClient::Start(holder_id).value();
  auto runner = std::make_shared<DoublingRunner>();
  holder->RunOnLoop([&](quic::Endpoint& ep) {
    auto serve = [runner](const std::string&, Bytes req, quic::Reply reply) {
      reply(ServeExec(req, *runner));  // a test: inline, not on a pool
    };
    ep.AddProtocol(quic::kExecAlpn, quic::MakeRpcProtocol(ep.io(), serve));
  });
  auto client = quic::QuicClient::Start(identity::Identity::Generate()).value();
  auto http = std::make_shared<FakeHttp>();
  QuicExecutor ex(client.get(), http, [](const std::string&) { return std::string("http://127.0.0.1:1"); });
  std::string addr = holder->endpoint().local_endpoint().HostPort();

  auto r = ex.Exec({holder_id.node_id(), Transport::kQuic, addr}, Request(), std::chrono::seconds(5));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_FALSE(r->error);
  EXPECT_EQ(r->request_id, 42u);
  ASSERT_EQ(r->experts.size(), 2u);
  EXPECT_EQ(r->experts[1].expert, 5);
  ASSERT_EQ(r->experts[1].rows.size(), 8u);
  EXPECT_FLOAT_EQ(r->experts[1].rows[3], 2 * 1.5f + 5);
  EXPECT_EQ(http->calls.load(), 0);

  // An answer with an error frame is an answer, not a transport failure.
  ExecRequest bad = Request();
  bad.model = "other";
  auto e = ex.Exec({holder_id.node_id(), Transport::kQuic, addr}, bad, std::chrono::seconds(5));
  ASSERT_TRUE(e) << e.error().ToString();
  ASSERT_TRUE(e->error);
  EXPECT_EQ(http->calls.load(), 0);

  // Nobody on that port: HTTP fallback within the timeout.
  auto fb = ex.Exec({holder_id.node_id(), Transport::kQuic, "127.0.0.1:9"}, Request(),
                    std::chrono::milliseconds(3000));
  ASSERT_TRUE(fb) << fb.error().ToString();
  EXPECT_EQ(http->calls.load(), 1);
  EXPECT_EQ(http->last_endpoint, "http://127.0.0.1:1");
  EXPECT_EQ(ex.fallbacks(), 1u);

  // A holder whose key is not the node id: refused, never retried on HTTP.
  auto wrong = ex.Exec({identity::Identity::Generate().node_id(), Transport::kQuic, addr}, Request(),
                       std::chrono::seconds(5));
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(http->calls.load(), 1);
}

}  // namespace
}  // namespace tenzro::dispatch
