#include "net/router.h"

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "net/json_http.h"
#include "net/url.h"

namespace tenzro::net {
namespace {

// Dispatches a request through `r` and returns the response it produced.
Response Call(const Router& r, std::string method, std::string path) {
  auto req = std::make_shared<Request>();
  req->method = std::move(method);
  req->path = std::move(path);
  Response out;
  bool got = false;
  r.Dispatch(req, Responder([&](Response resp) {
    out = std::move(resp);
    got = true;
  }));
  EXPECT_TRUE(got);
  return out;
}

TEST(RouterTest, ExactPrefixAndLongestPrefix) {
  Router r;
  r.Add("GET", "/v1/jobs", [](const Request&) { return Response::Text(200, "list"); });
  r.Add("GET", "/v1/jobs/", [](const Request& q) { return Response::Text(200, "job:" + q.route_suffix); });
  r.Add("GET", "/v1/", [](const Request& q) { return Response::Text(200, "v1:" + q.route_suffix); });
  EXPECT_EQ(Call(r, "GET", "/v1/jobs").body, "list");
  EXPECT_EQ(Call(r, "GET", "/v1/jobs/ab12").body, "job:ab12");
  EXPECT_EQ(Call(r, "GET", "/v1/other").body, "v1:other");
}

TEST(RouterTest, NotFoundAndMethodNotAllowedAreJson) {
  Router r;
  r.Add("POST", "/v1/node/shutdown", [](const Request&) { return Response::Text(200, "ok"); });
  Response nf = Call(r, "GET", "/nope");
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(nf.content_type, "application/json");
  EXPECT_EQ(ErrorFromHttp(nf.status, nf.body).code(), ErrorCode::kNotFound);
  EXPECT_EQ(Call(r, "GET", "/v1/node/shutdown").status, 405);
}

TEST(RouterTest, ReplaceAndThrowingHandler) {
  Router r;
  r.Add("GET", "/a", [](const Request&) { return Response::Text(200, "one"); });
  r.Add("GET", "/a", [](const Request&) { return Response::Text(200, "two"); });
  r.Add("GET", "/boom", [](const Request&) -> Response { throw std::runtime_error("kaput"); });
  EXPECT_EQ(Call(r, "GET", "/a").body, "two");
  Response b = Call(r, "GET", "/boom");
  EXPECT_EQ(b.status, 500);
  EXPECT_NE(b.body.find("kaput"), std::string::npos);
  EXPECT_EQ(r.Describe().size(), 2u);
}

TEST(RouterTest, DroppedResponderSends500) {
  Router r;
  r.AddAsync("GET", "/drop", [](std::shared_ptr<const Request>, Responder) {});
  Response d = Call(r, "GET", "/drop");
  EXPECT_EQ(d.status, 500);
  EXPECT_EQ(ErrorFromHttp(d.status, d.body).code(), ErrorCode::kInternal);
}

TEST(RouterTest, OnPoolRunsOffThread) {
  ThreadPool pool(2, "t");
  Router r;
  std::thread::id caller = std::this_thread::get_id();
  r.AddOnPool("GET", "/cpu", &pool, [caller](const Request&) {
    return Response::Text(200, std::this_thread::get_id() == caller ? "same" : "other");
  });
  auto req = std::make_shared<Request>();
  req->method = "GET";
  req->path = "/cpu";
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Response> out;
  r.Dispatch(req, Responder([&](Response resp) {
    std::lock_guard<std::mutex> l(mu);
    out = std::move(resp);
    cv.notify_all();
  }));
  std::unique_lock<std::mutex> l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(10), [&] { return out.has_value(); }));
  EXPECT_EQ(out->body, "other");
}

TEST(JsonHttpTest, ErrorRoundTripAndStatusMapping) {
  Response e = ErrorResponse(Error::InvalidArgument("field 'x' is missing"));
  EXPECT_EQ(e.status, 400);
  Error back = ErrorFromHttp(e.status, e.body);
  EXPECT_EQ(back.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(back.message(), "field 'x' is missing");
  EXPECT_EQ(HttpStatusFor(ErrorCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusFor(ErrorCode::kUnavailable), 503);
  EXPECT_EQ(ErrorFromHttp(502, "<html>bad gateway</html>").code(), ErrorCode::kUnavailable);
  for (int c = 1; c <= static_cast<int>(ErrorCode::kInternal); ++c)
    EXPECT_EQ(ErrorCodeFromName(ErrorCodeName(static_cast<ErrorCode>(c))), static_cast<ErrorCode>(c));
}

TEST(JsonHttpTest, ParseJsonBodyNamesTheProblem) {
  EXPECT_TRUE(ParseJsonBody(R"({"a": 1})"));
  auto empty = ParseJsonBody("  ");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message().find("empty"), std::string::npos);
  auto bad = ParseJsonBody(R"({"a": )");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("not valid JSON"), std::string::npos);
}

TEST(UrlTest, ParseEndpoint) {
  auto a = ParseEndpoint("127.0.0.1:8080");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8080);
  auto b = ParseEndpoint("http://localhost:0/");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "localhost");
  EXPECT_EQ(b->port, 0);
  auto c = ParseEndpoint("[::1]:9");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->HostPort(), "[::1]:9");
  EXPECT_EQ(c->Url(), "http://[::1]:9");
  for (const char* bad : {"", "host", "host:", ":80", "host:99999", "host:8x", "https://a:1", "http://a:1/x", "::1:80"})
    EXPECT_FALSE(ParseEndpoint(bad)) << bad;
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("127.evil.com"));
  EXPECT_FALSE(IsLoopbackHost("203.0.113.7"));
}

TEST(UrlTest, QueryParams) {
  Request q;
  q.query = "a=1&name=hello%20world&flag&bad=%zz";
  EXPECT_EQ(q.QueryParam("a"), "1");
  EXPECT_EQ(q.QueryParam("name"), "hello world");
  EXPECT_EQ(q.QueryParam("flag"), "");
  EXPECT_EQ(q.QueryParam("bad"), std::nullopt);
  EXPECT_EQ(q.QueryParam("missing"), std::nullopt);
  EXPECT_FALSE(PercentDecode("%4"));
}

}  // namespace
}  // namespace tenzro::net
