// In-process server + client on loopback: the loop runs on a test thread.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "core/thread_pool.h"
#include "net/client.h"
#include "net/json_http.h"
#include "net/server.h"

namespace tenzro::net {
namespace {

// Produces `total` bytes (value = offset % 251) in pieces; fails at `fail_at`.
BodyProducer Counting(uint64_t total, uint64_t fail_at = UINT64_MAX) {
  auto pos = std::make_shared<uint64_t>(0);
  return [=](std::span<uint8_t> buf) -> Result<size_t> {
    if (*pos >= fail_at) return Error::Io("disk on fire at {}", *pos);
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), total - *pos));
    for (size_t i = 0; i < n; ++i) buf[i] = static_cast<uint8_t>((*pos + i) % 251);
    *pos += n;
    return n;
  };
}

class HttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.Add("POST", "/echo", [](const Request& q) {
      Response r = Response::Text(200, q.body);
      r.headers.emplace_back("x-method", q.method);
      return r;
    });
    router_.Add("GET", "/stream/chunked", [](const Request&) {
      return Response::Stream("application/octet-stream", Counting(1'000'003));
    });
    router_.Add("GET", "/stream/sized", [](const Request&) {
      return Response::Stream("application/octet-stream", Counting(300'000), 300'000);
    });
    router_.Add("GET", "/stream/fail", [](const Request&) {
      return Response::Stream("application/octet-stream", Counting(1'000'000, 200'000));
    });
    router_.Add("GET", "/stream/short", [](const Request&) {
      return Response::Stream("application/octet-stream", Counting(1000), 5000);
    });
    router_.AddOnPool("POST", "/json", &pool_, [](const Request& q) {
      auto j = ParseJsonBody(q.body);
      if (!j) return ErrorResponse(j.error());
      return JsonResponse({{"got", *j}});
    });
    router_.AddAsync("GET", "/slow", [this](std::shared_ptr<const Request>, Responder resp) {
      pool_.Submit([resp] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        resp.Send(Response::Text(200, "late"));
      });
    });
    ServerOptions opts;
    opts.max_body_bytes = 1000;
    opts.producer_pool = &pool_;
    opts.stream_chunk_bytes = 64 * 1024;
    server_ = std::make_unique<HttpServer>(ioc_, &router_, opts);
    ASSERT_TRUE(server_->Listen({"127.0.0.1", 0}));
    ASSERT_NE(server_->endpoint().port, 0);
    loop_ = std::thread([this] { ioc_.run(); });
  }
  void TearDown() override {
    boost::asio::post(ioc_, [this] { server_->Stop(); });
    // The loop returns once every connection is closed.
    loop_.join();
    pool_.Shutdown();
  }

  boost::asio::io_context ioc_;
  ThreadPool pool_{2, "test"};
  Router router_;
  std::unique_ptr<HttpServer> server_;
  std::thread loop_;
};

TEST_F(HttpTest, EchoWithKeepAlive) {
  HttpClient c(server_->endpoint());
  for (int i = 0; i < 3; ++i) {
    auto r = c.Send("POST", "/echo", "hello " + std::to_string(i), "text/plain");
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hello " + std::to_string(i));
    EXPECT_EQ(r->Header("X-Method"), "POST");
  }
  EXPECT_EQ(server_->active_connections(), 1u);  // one kept-alive connection
}

TEST_F(HttpTest, OversizeBodyAnswers413AndServerKeepsServing) {
  HttpClient c(server_->endpoint());
  auto r = c.Send("POST", "/echo", std::string(5000, 'x'), "text/plain");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(ErrorFromHttp(r->status, r->body).code(), ErrorCode::kResourceExhausted);
  auto ok = c.Send("POST", "/echo", "small", "text/plain");
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->body, "small");
}

TEST_F(HttpTest, JsonOnPoolAndMalformedJson) {
  HttpClient c(server_->endpoint());
  auto good = c.Send("POST", "/json", R"({"k": [1, 2]})");
  ASSERT_TRUE(good);
  auto j = JsonFromHttp(good->status, good->body);
  ASSERT_TRUE(j) << j.error().ToString();
  EXPECT_EQ((*j)["got"]["k"][1], 2);
  auto bad = c.Send("POST", "/json", R"({"k": )");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  auto e = JsonFromHttp(bad->status, bad->body);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.error().message().find("not valid JSON"), std::string::npos);
}

TEST_F(HttpTest, StreamedBodiesChunkedAndSized) {
  HttpClient c(server_->endpoint());
  for (auto [path, total] : {std::pair<const char*, uint64_t>{"/stream/chunked", 1'000'003}, {"/stream/sized", 300'000}}) {
    uint64_t seen = 0;
    bool in_order = true;
    auto r = c.SendStreaming("GET", path, {}, {}, {}, [&](ByteSpan piece) -> Result<void> {
      for (uint8_t b : piece) in_order &= b == (seen++ % 251);
      return Ok();
    });
    ASSERT_TRUE(r) << path << ": " << r.error().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(seen, total) << path;
    EXPECT_TRUE(in_order) << path;
    EXPECT_TRUE(r->body.empty());
  }
  // The buffered variant sees the same bytes.
  auto whole = c.Send("GET", "/stream/chunked");
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->body.size(), 1'000'003u);
}

TEST_F(HttpTest, ProducerFailureTruncatesInsteadOfCompleting) {
  HttpClient c(server_->endpoint());
  uint64_t seen = 0;
  auto r = c.SendStreaming("GET", "/stream/fail", {}, {}, {}, [&](ByteSpan p) -> Result<void> {
    seen += p.size();
    return Ok();
  });
  ASSERT_FALSE(r);
  EXPECT_LT(seen, 1'000'000u);
  auto s = c.Send("GET", "/stream/short");  // declared 5000, produced 1000
  EXPECT_FALSE(s);
  auto again = c.Send("POST", "/echo", "still alive", "text/plain");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->body, "still alive");
}

TEST_F(HttpTest, SinkErrorAndClientLimits) {
  HttpClient c(server_->endpoint());
  auto r = c.SendStreaming("GET", "/stream/chunked", {}, {}, {},
                           [](ByteSpan) -> Result<void> { return Error::Corruption("bad hash"); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruption);
  ClientOptions small;
  small.max_response_bytes = 1000;
  HttpClient limited(server_->endpoint(), small);
  auto big = limited.Send("GET", "/stream/sized");
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code(), ErrorCode::kResourceExhausted);
  ClientOptions quick;
  quick.timeout = std::chrono::milliseconds(50);
  HttpClient impatient(server_->endpoint(), quick);
  auto slow = impatient.Send("GET", "/slow");
  ASSERT_FALSE(slow);
  EXPECT_EQ(slow.error().code(), ErrorCode::kDeadlineExceeded);
}

TEST_F(HttpTest, AsyncHandlerAndNotFound) {
  HttpClient c(server_->endpoint());
  auto r = c.Send("GET", "/slow");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "late");
  auto nf = c.Send("GET", "/missing");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
}

TEST(HttpClientTest, ConnectionRefusedIsUnavailable) {
  // Bind then close a listener to find a port nobody listens on.
  boost::asio::io_context ioc;
  Router router;
  Endpoint ep;
  {
    HttpServer s(ioc, &router, {});
    ASSERT_TRUE(s.Listen({"127.0.0.1", 0}));
    ep = s.endpoint();
  }
  HttpClient c(ep);
  auto r = c.Send("GET", "/");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message().find(ep.Url()), std::string::npos);
}

TEST(HttpServerTest, ListenErrorsNameTheAddress) {
  boost::asio::io_context ioc;
  Router router;
  HttpServer a(ioc, &router, {});
  ASSERT_TRUE(a.Listen({"127.0.0.1", 0}));
  HttpServer b(ioc, &router, {});
  auto r = b.Listen(a.endpoint());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find(a.endpoint().HostPort()), std::string::npos);
}

}  // namespace
}  // namespace tenzro::net
