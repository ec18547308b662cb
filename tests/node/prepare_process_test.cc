// Multi-process: node A prepares experts of the tiny fixture and serves them;
// a second data dir (B) fetches them by URI over HTTP with verification; a
// peer that flips one byte of the stream is detected and rejected; ranged and
// last-chunk requests verify.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "blob/blob_store.h"
#include "blob/blob_uri.h"
#include "core/file.h"
#include "net/client.h"
#include "net/router.h"
#include "net/server.h"
#include "net/url.h"
#include "testutil/node_process.h"

namespace tenzro::node {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using tenzro::testing::ChildProcess;
using tenzro::testing::DataPath;
using tenzro::testing::RunTenzro;
using tenzro::testing::TempDir;
using tenzro::testing::TenzroBin;
using tenzro::testing::WaitFor;

using tenzro::testing::RunningNode;
using tenzro::testing::StartNode;

json PrepareTiny(const std::string& dir, const std::string& experts) {
  auto add = RunTenzro({"--data-dir", dir, "moe", "catalog-add", "--model", "tiny-qwen35moe", "--checkpoint",
                        DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf")});
  EXPECT_EQ(add.exit_code, 0) << add.err;
  auto started = RunTenzro({"--data-dir", dir, "moe", "prepare-experts", "--model-id", "tiny-qwen35moe", "--layer",
                            "1", "--experts", experts, "--quant", "q4_k_m", "--gate"});
  EXPECT_EQ(started.exit_code, 0) << started.err;
  json s = json::parse(started.out, nullptr, false);
  EXPECT_TRUE(s.contains("job_id")) << started.out;
  std::string id = s.value("job_id", "");
  auto status = RunTenzro({"--data-dir", dir, "moe", "prepare-status", "--job-id", id, "--wait", "--json"});
  EXPECT_EQ(status.exit_code, 0) << status.err << status.out;
  return json::parse(status.out, nullptr, false);
}

TEST(PrepareProcess, PrepareFetchVerifyAndRejectTampering) {
  TempDir tmp;
  RunningNode a = StartNode(tmp.Join("a"));
  ASSERT_TRUE(a.proc->running());
  json job = PrepareTiny(a.dir, "0,3");
  ASSERT_EQ(job.value("state", ""), "done") << job.dump(2);
  const json& result = job["result"];
  ASSERT_EQ(result["experts"].size(), 2u);
  const json& e3 = result["experts"][1];
  EXPECT_EQ(e3["expert"], 3);
  EXPECT_EQ(e3["projections"]["down"]["format"], "q6_K");  // layer 1 of 2 under q4_k_m
  EXPECT_TRUE(e3["projections"]["gate"]["source"]["byte_range_copy"].get<bool>());
  EXPECT_EQ(e3["projections"]["gate"]["source"]["tensor"], "blk.1.ffn_gate_exps.weight");
  ASSERT_TRUE(result.contains("gate"));
  std::string uri = e3["uri"];
  uint64_t size = e3["bytes"];

  // Human-readable status names the source byte range.
  auto human = RunTenzro({"--data-dir", a.dir, "moe", "prepare-status", "--job-id", job["id"]});
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("byte-range copy"), std::string::npos) << human.out;

  // B fetches by URI from A, verified.
  std::string b = tmp.Join("b");
  auto got = RunTenzro({"--data-dir", b, "blob", "get", uri, "--from", a.http_url(), "--json", "-o", tmp.Join("e3.gguf")});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_EQ(json::parse(got.out)["size"], size);
  auto local = blob::BlobStore::Open(b + "/blobs");
  ASSERT_TRUE(local);
  auto hash = blob::ParseHashOrUri(uri);
  ASSERT_TRUE(hash);
  EXPECT_TRUE((*local)->Has(*hash));
  EXPECT_TRUE((*local)->Verify(*hash));
  EXPECT_EQ(testing::ReadAll(tmp.Join("e3.gguf")).size(), size);

  // Ranged and last-chunk requests verify.
  auto ranged = RunTenzro({"--data-dir", tmp.Join("c"), "blob", "get", uri, "--from", a.http_url(), "--ranges", "20..40",
                           "--json"});
  ASSERT_EQ(ranged.exit_code, 0) << ranged.err;
  EXPECT_EQ(json::parse(ranged.out)["verified_bytes"], 20 * 1024);
  auto last = RunTenzro({"--data-dir", tmp.Join("c"), "blob", "get", uri, "--from", a.http_url(), "--ranges", "last",
                         "--json"});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  json lj = json::parse(last.out);
  EXPECT_EQ(lj["size"], size) << "the last chunk proves the size";

  // A tampering peer: relays A's stream with one byte flipped.
  auto a_ep = net::ParseEndpoint(a.http_url());
  ASSERT_TRUE(a_ep);
  for (size_t flip_at : {size_t{3}, size_t{8 + 64 + 100}, size_t{size / 2}}) {
    boost::asio::io_context ioc;
    net::Router router;
    router.Add("GET", "/blobs/", [&](const net::Request& req) {
      net::HttpClient up(*a_ep);
      auto r = up.Send("GET", req.target);
      std::string body = r ? r->body : std::string();
      if (flip_at < body.size()) body[flip_at] = static_cast<char>(body[flip_at] ^ 0x01);
      net::Response resp = net::Response::Text(200, body);
      resp.content_type = "application/octet-stream";
      return resp;
    });
    net::HttpServer evil(ioc, &router, {});
    ASSERT_TRUE(evil.Listen({"127.0.0.1", 0}));
    std::string evil_url = evil.endpoint().Url();
    std::thread loop([&] { ioc.run_for(std::chrono::seconds(60)); });
    std::string d = tmp.Join("victim");
    auto bad = RunTenzro({"--data-dir", d, "blob", "get", uri, "--from", evil_url});
    ioc.stop();
    loop.join();
    EXPECT_NE(bad.exit_code, 0) << "flip at " << flip_at;
    EXPECT_NE(bad.err.find(evil.endpoint().HostPort()), std::string::npos) << bad.err;
    auto vs = blob::BlobStore::Open(d + "/blobs");
    ASSERT_TRUE(vs);
    EXPECT_FALSE((*vs)->Has(*hash)) << "a tampered blob must never become visible";
    for (const auto& f : std::filesystem::directory_iterator(d + "/blobs"))
      ADD_FAILURE() << "left behind: " << f.path();
  }

  a.proc->Signal(SIGTERM);
  EXPECT_EQ(a.proc->Wait(seconds(20)), 0) << a.proc->Log();
}

TEST(PrepareProcess, BadRequestsFailClearlyAndNodeKeepsServing) {
  TempDir tmp;
  RunningNode a = StartNode(tmp.Join("a"));
  ASSERT_TRUE(a.proc->running());
  auto unknown = RunTenzro({"--data-dir", a.dir, "moe", "prepare-experts", "--model-id", "nope", "--layer", "0"});
  EXPECT_EQ(unknown.exit_code, 3) << unknown.err;
  EXPECT_NE(unknown.err.find("catalog-add"), std::string::npos) << unknown.err;
  auto badq = RunTenzro({"--data-dir", a.dir, "moe", "prepare-experts", "--model-id", "x", "--layer", "0", "--quant",
                         "q9_z"});
  EXPECT_EQ(badq.exit_code, 2) << badq.err;
  // Out-of-range expert: the job fails with a clear message; nothing is published.
  auto add = RunTenzro({"--data-dir", a.dir, "moe", "catalog-add", "--model", "tiny-qwen35moe", "--checkpoint",
                        DataPath("moe/tiny-qwen35moe-BF16.gguf")});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  auto started = RunTenzro({"--data-dir", a.dir, "moe", "prepare-experts", "--model-id", "tiny-qwen35moe", "--layer",
                            "0", "--experts", "0,9"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  std::string id = json::parse(started.out)["job_id"];
  auto status = RunTenzro({"--data-dir", a.dir, "moe", "prepare-status", "--job-id", id, "--wait", "--json"});
  EXPECT_NE(status.exit_code, 0);
  json job = json::parse(status.out, nullptr, false);
  EXPECT_EQ(job.value("state", ""), "failed") << status.out;
  EXPECT_NE(job["error"].value("message", "").find("expert 9 out of range"), std::string::npos) << status.out;
  auto listed = RunTenzro({"--data-dir", a.dir, "blob", "ls", "--json"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out.find("\"hash\""), std::string::npos) << "no blob may be published: " << listed.out;
  auto info = RunTenzro({"--data-dir", a.dir, "node", "info"});
  EXPECT_EQ(info.exit_code, 0) << "the node keeps serving: " << info.err;
  a.proc->Signal(SIGTERM);
  EXPECT_EQ(a.proc->Wait(seconds(20)), 0);
}

}  // namespace
}  // namespace tenzro::node
