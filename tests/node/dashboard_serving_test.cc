// The dashboard's "serving" section (node/dashboard.h, node/serve_service.h)
// through the real binary: a node serving the bundled tiny model with its
// experts in-process (--serve-experts local, no swarm). A few completions
// move the totals and tokens/s; a long streamed request is listed live while
// it runs and gone once it ends. A node without --serve has no section.
// Plus serve::LiveStats (the rates' ring) on an injected clock.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <nlohmann/json.hpp>

#include "net/client.h"
#include "serve/live_stats.h"
#include "testutil/node_process.h"
#include "testutil/testutil.h"

namespace tenzro::testing {
namespace {

using nlohmann::json;

constexpr const char* kModelId = "tiny-qwen35moe";

json State(const RunningNode& n) {
  net::HttpClient c(n.http);
  auto r = c.Send("GET", "/v1/dashboard/state");
  if (!r || !r->ok()) return json();
  return json::parse(r->body, nullptr, false);
}

TEST(LiveStatsTest, RatesOverTheLastTenSeconds) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const auto t0 = serve::LiveStats::Clock::time_point() + seconds(1000);
  serve::LiveStats live(t0);
  EXPECT_EQ(live.Read(t0 + seconds(1)).generated_per_s, 0);
  EXPECT_EQ(live.Read(t0 + seconds(1)).mean_batch, 0);
  // 2 s after the start: 4 steps of 2 sequences, 2 tokens each.
  for (int i = 0; i < 4; ++i) live.ObserveStep(t0 + milliseconds(500 * i), {2, 2, 1.0, 2});
  auto r = live.Read(t0 + seconds(2));
  EXPECT_DOUBLE_EQ(r.window_s, 2);
  EXPECT_DOUBLE_EQ(r.generated_per_s, 4);
  EXPECT_DOUBLE_EQ(r.mean_batch, 2);
  EXPECT_EQ(r.steps, 4u);
  // One step every 10 ms for 30 s (3000 steps, one token each): memory
  // stays a ring of 64; the rate is that of the last 10 s.
  for (int i = 0; i < 3000; ++i) live.ObserveStep(t0 + seconds(10) + milliseconds(10 * i), {1, 1, 1.0, 1});
  r = live.Read(t0 + seconds(40));
  EXPECT_DOUBLE_EQ(r.window_s, 10);
  EXPECT_NEAR(r.generated_per_s, 100, 100 * 0.2 / 10 + 1e-9);  // the window's start is within 200 ms
  EXPECT_DOUBLE_EQ(r.mean_batch, 1);
  // Idle for a minute: nothing in the window.
  r = live.Read(t0 + seconds(100));
  EXPECT_EQ(r.generated_per_s, 0);
  EXPECT_EQ(r.steps, 0u);
  EXPECT_EQ(r.mean_batch, 0);
}

TEST(DashboardServingTest, TotalsTokensPerSecondAndLiveRequests) {
  TempDir tmp;
  const std::string dir = tmp.Join("n");
  auto add = RunTenzro({"--data-dir", dir, "moe", "catalog-add", "--model", kModelId, "--checkpoint",
                        DataPath("model/tiny-qwen35moe-tok-BF16.gguf")});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  NodeOptions o;
  o.run_args = {"--serve", kModelId, "--serve-experts", "local", "--serve-threads", "2"};
  RunningNode n = StartNode(dir, o);
  ASSERT_TRUE(n.running());
  net::HttpClient c(n.http);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = c.Send("GET", "/health");
        return r && r->status == 200;
      },
      std::chrono::seconds(60)))
      << n.proc->Log();

  json st = State(n);
  ASSERT_TRUE(st.contains("serving")) << st.dump();
  json sv = st["serving"];
  EXPECT_EQ(sv["model"], kModelId);
  EXPECT_EQ(sv["status"], "ok");
  EXPECT_EQ(sv["totals"]["requests"], 0);
  EXPECT_EQ(sv["totals"]["generated_tokens"], 0);
  EXPECT_EQ(sv["generated_tokens_per_s"], 0.0);
  EXPECT_TRUE(sv["requests"].empty());

  // Three completions of 16 tokens each (no early end of generation).
  constexpr int kRuns = 3, kMax = 16;
  for (int i = 0; i < kRuns; ++i) {
    const std::string body =
        json{{"model", kModelId}, {"prompt", {51, 71, 68, 10 + i}}, {"max_tokens", kMax}, {"ignore_eos", true}}.dump();
    auto r = c.Send("POST", "/v1/completions", body);
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : r.error().ToString());
  }
  sv = State(n)["serving"];
  EXPECT_EQ(sv["totals"]["requests"], kRuns) << sv.dump();
  EXPECT_EQ(sv["totals"]["prompt_tokens"], kRuns * 4);
  EXPECT_EQ(sv["totals"]["generated_tokens"], kRuns * kMax);
  EXPECT_GE(sv["totals"]["steps"].get<int>(), kRuns * kMax);
  // All 48 tokens fell within the last 10 s (the node started well within it
  // or the window is 10 s): the rate is generated / window.
  const double tps = sv["generated_tokens_per_s"].get<double>();
  const double window = sv["window_s"].get<double>();
  EXPECT_GT(tps, 0) << sv.dump();
  EXPECT_GT(window, 0);
  EXPECT_LE(window, 10.001);
  if (window < 9.5) {
    EXPECT_NEAR(tps * window, kRuns * kMax, 1.0) << sv.dump();
  }
  EXPECT_NEAR(sv["mean_batch"].get<double>(), 1.0, 1e-9);
  EXPECT_EQ(sv["active"], 0);
  EXPECT_EQ(sv["queued"], 0);

  // A long stream: listed while it runs, with its generated count moving.
  std::atomic<bool> streaming{false}, stop{false};
  std::thread t([&] {
    net::HttpClient sc(n.http);
    const std::string body = json{{"model", kModelId}, {"prompt", {51, 71, 68}}, {"max_tokens", 4000},
                                  {"ignore_eos", true}, {"stream", true}}
                                 .dump();
    (void)sc.SendStreaming("POST", "/v1/completions", body, "application/json", {}, [&](ByteSpan) -> Result<void> {
      streaming = true;
      if (stop) return Error::Unavailable("done");
      return Ok();
    });
  });
  ASSERT_TRUE(WaitFor([&] { return streaming.load(); }, std::chrono::seconds(30)));
  json live;
  ASSERT_TRUE(WaitFor(
      [&] {
        live = State(n)["serving"];
        return live["requests"].size() == 1 && live["requests"][0]["generated"].get<int>() >= 2;
      },
      std::chrono::seconds(30)))
      << live.dump();
  const json r0 = live["requests"][0];
  EXPECT_EQ(r0["state"], "decode");
  EXPECT_EQ(r0["prompt_tokens"], 3);
  EXPECT_EQ(r0["max_tokens"], 4000);
  EXPECT_GE(r0["age_ms"].get<int64_t>(), 0);
  EXPECT_EQ(live["active"], 1);
  EXPECT_GT(live["session_bytes"].get<uint64_t>(), 0u);
  json later;
  ASSERT_TRUE(WaitFor(
      [&] {
        later = State(n)["serving"];
        return later["requests"].size() == 1 && later["requests"][0]["generated"] > r0["generated"];
      },
      std::chrono::seconds(30)))
      << later.dump();
  EXPECT_EQ(later["requests"][0]["id"], r0["id"]);
  EXPECT_GE(later["requests"][0]["age_ms"].get<int64_t>(), r0["age_ms"].get<int64_t>());
  EXPECT_GT(later["generated_tokens_per_s"].get<double>(), 0);
  stop = true;
  t.join();
  // The client is gone: the request is cancelled and leaves the list.
  json after;
  EXPECT_TRUE(WaitFor(
      [&] {
        after = State(n)["serving"];
        return after["requests"].empty() && after["active"] == 0;
      },
      std::chrono::seconds(30)))
      << after.dump();
  EXPECT_EQ(after["totals"]["requests"], kRuns + 1);
}

TEST(DashboardServingTest, NoServingSectionWithoutServe) {
  TempDir tmp;
  RunningNode n = StartNode(tmp.Join("n"), NodeOptions{});
  ASSERT_TRUE(n.running());
  json st = State(n);
  ASSERT_TRUE(st.is_object());
  EXPECT_TRUE(st.contains("recent_forwards"));
  EXPECT_FALSE(st.contains("serving")) << st.dump();
}

}  // namespace
}  // namespace tenzro::testing
