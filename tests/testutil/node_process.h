// Shared helper for multi-process tests: a `tenzro node run` child process on
// loopback, found through the DATA_DIR/node.json it writes, and the calls
// tests make to it (admin HTTP client, the CLI pointed at its data dir).
//
//   TempDir tmp;
//   NodeOptions o;
//   o.run_args = {"--memory-budget", "1MiB"};
//   RunningNode n = StartNode(tmp.Join("a"), o);
//   ASSERT_TRUE(n.running());
// (Designated initializers, {.run_args = ...}, trip g++'s
// -Wmissing-field-initializers under -Wextra.)
//   json s = n.CliJson({"moe", "status", "--json"});
//
// The child is SIGKILLed when the RunningNode is destroyed; Stop() ends it
// cleanly (SIGTERM) and returns its exit code.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/client.h"
#include "net/url.h"
#include "testutil/testutil.h"

namespace tenzro::testing {

struct NodeOptions {
  std::vector<std::string> global_args;  // before "node run" (e.g. "--log-level", "debug")
  std::vector<std::string> run_args;     // after "node run" (e.g. "--memory-budget", "1MiB")
  std::string log_path;                  // default: DIR + ".log"
  int threads = 2;
  std::chrono::milliseconds start_timeout{60000};
};

struct RunningNode {
  std::unique_ptr<ChildProcess> proc;
  std::string dir;
  net::Endpoint admin;  // admin API (token needed)
  net::Endpoint http;   // public listener
  std::string token;
  nlohmann::json node_json;  // DATA_DIR/node.json as the node wrote it

  bool running() const { return proc && proc->running(); }
  // "http://127.0.0.1:PORT" of the public listener.
  std::string http_url() const { return http.Url(); }
  net::HttpClient Admin(bool with_token = true) const;
  // `tenzro --data-dir DIR ARGS...`.
  RunResult Cli(std::vector<std::string> args, std::chrono::milliseconds timeout = std::chrono::seconds(120)) const;
  // Cli + EXPECT exit 0 + parse stdout as JSON (null when it is not).
  nlohmann::json CliJson(std::vector<std::string> args) const;
  // SIGTERM, then waits; the exit code (-1 on timeout or signal).
  int Stop(std::chrono::milliseconds timeout = std::chrono::seconds(30));
};

// Starts `tenzro --data-dir DIR GLOBAL... node run --threads N RUN...` and
// waits (EXPECTs) for a node.json naming this child's pid (a stale one from a
// killed node is ignored). On failure the returned node is not running().
RunningNode StartNode(const std::string& dir, const NodeOptions& options = {});

// On `n`: `moe catalog-add --model MODEL` with the bundled tiny Q4_K_M
// checkpoint, then `moe prepare-experts --model-id MODEL --layer LAYER
// --quant q4_k_m EXTRA... --wait --json`; returns the finished job's result
// (null, with a failed EXPECT, when either step fails).
nlohmann::json PrepareTinyLayer(const RunningNode& n, const std::string& model, int layer,
                                std::vector<std::string> extra = {"--gate"});

// GET /metrics on the node's public listener ("" on any failure).
std::string MetricsText(const RunningNode& n);

// The value of the sample `series` (name plus labels, exactly as rendered,
// e.g. `tenzro_hedged_calls_total{result="won"}`) in Prometheus text; -1
// when absent.
double MetricSample(const std::string& text, const std::string& series);

}  // namespace tenzro::testing
