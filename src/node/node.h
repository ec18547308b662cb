// tenzro node: the daemon behind `tenzro node run`.
//
// A Node owns, for its lifetime: one boost::asio::io_context run by the
// thread that calls Run() (the loop thread: sockets, timers, signals, route
// dispatch); two HTTP listeners, the public one (blobs, exec to peers) and
// the admin API (loopback only, bearer token); a worker pool for request CPU
// work; the job registry (its own job threads) under DATA_DIR/jobs; and the
// files DATA_DIR/node.json (where a node is, removed on clean exit),
// DATA_DIR/admin.token (mode 0600, new each start) and DATA_DIR/node.lock
// (flock held while running: one node per data dir).
// Routes and job kinds are added by the `compose` function given to Create
// (the `tenzro` binary's is node/compose.h, which builds every part of a
// holder in dependency order) or directly through
// admin_router()/public_router()/jobs() before Run().
// API: docs/formats/admin-api.md.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/thread_pool.h"
#include "net/rate_limit.h"
#include "net/router.h"
#include "net/server.h"
#include "net/url.h"
#include "node/job_registry.h"
#include "node/node_config.h"

namespace tenzro::node {

// "0.1.0".
std::string_view NodeVersion();

class Node {
 public:
  // Checks the config (admin must be loopback), takes the data-dir lock,
  // writes admin.token, opens the job registry, binds both listeners (so
  // their ports are known), adds the built-in routes, runs
  // `compose` (when given: it adds the node's parts, routes and job kinds),
  // then recovers interrupted jobs. Does not write node.json.
  // kAlreadyExists if another node holds the data dir; kInvalidArgument for a
  // bad config; kIo when a listener cannot bind; compose's error, with
  // context.
  static Result<std::unique_ptr<Node>> Create(NodeConfig config,
                                              const std::function<Result<void>(Node&)>& compose = nullptr);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Writes node.json, installs SIGINT/SIGTERM handlers and runs the loop on
  // the calling thread until a stop is requested; then stops the listeners
  // gracefully (bounded wait), cancels and joins jobs and workers, and removes
  // node.json. Call once.
  Result<void> Run();
  // Asks Run() to return. Any thread; idempotent.
  void RequestStop();

  // Register routes before Run(). Handlers on these routers run on the loop
  // thread (AddOnPool: on pool()).
  net::Router& admin_router() { return admin_router_; }
  net::Router& public_router() { return public_router_; }
  JobRegistry& jobs() { return *jobs_; }
  ThreadPool& pool() { return *pool_; }
  boost::asio::io_context& io() { return *ioc_; }

  const NodeConfig& config() const { return config_; }
  const std::string& data_dir() const { return config_.data_dir; }
  net::Endpoint http_endpoint() const { return http_->endpoint(); }
  net::Endpoint admin_endpoint() const { return admin_->endpoint(); }
  const std::string& admin_token() const { return token_; }
  // Per-peer limit on exec and blob requests (--peer-rate, --peer-burst):
  // the public listener checks POST /v1/moe/exec and GET /blobs/ by client
  // IP (429 when over); the QUIC service checks its streams by peer node id.
  // Keys: "ip:<addr>", "node:<id>". Any thread.
  net::PeerRateLimiter& peer_limiter() { return *peer_limiter_; }

  // Adds `key` to DATA_DIR/node.json and GET /v1/node/info, computed by `fn`
  // when they are written/answered (loop thread). Before Run().
  void AddInfo(std::string key, std::function<nlohmann::json()> fn);
  // Adds `key` to the dashboard's GET /v1/dashboard/state (public: no paths
  // or secrets), computed by `fn` when the state is read (loop thread; keep
  // it cheap). Before Run().
  void AddDashboardSection(std::string key, std::function<nlohmann::json()> fn);
  const std::vector<std::pair<std::string, std::function<nlohmann::json()>>>& dashboard_sections() const {
    return dashboard_;
  }
  // Runs `fn` once when the node stops, after the loop has ended and before
  // jobs and workers are shut down (e.g. announce "leaving"). Hooks run in
  // reverse order of registration. Before Run().
  void OnStop(std::function<void()> fn);
  // Adds a collector to GET /metrics (public listener, Prometheus text
  // format 0.0.4): `fn` appends complete metric families ("# HELP", "# TYPE",
  // samples) to `out` at scrape time (loop thread). Before Run().
  void AddMetrics(std::function<void(std::string& out)> fn);
  // Keeps `part` alive as long as the node (released before the worker
  // pool and the event loop are destroyed). Before Run().
  void Keep(std::shared_ptr<void> part) { kept_.push_back(std::move(part)); }
  // The body limit of POST /v1/moe/exec on the public listener, asked on
  // the loop thread for every exec request head (must be cheap); the
  // admitted limit is min(this, --max-body-bytes). Unset: --max-body-bytes.
  // The composition root sizes it from the models the node holds. Before Run().
  void SetExecBodyLimit(std::function<uint64_t()> fn) { exec_body_limit_ = std::move(fn); }

 private:
  explicit Node(NodeConfig config);
  Result<void> Init(const std::function<Result<void>(Node&)>& compose);
  void AddBuiltinRoutes();
  void BeginStop();  // loop thread
  void PollStop();   // loop thread: stops the loop once connections are gone
  nlohmann::json InfoJson() const;

  NodeConfig config_;
  std::unique_ptr<boost::asio::io_context> ioc_;  // destroyed last
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<JobRegistry> jobs_;
  net::Router admin_router_;
  net::Router public_router_;
  std::unique_ptr<net::HttpServer> http_;
  std::unique_ptr<net::HttpServer> admin_;
  std::string token_;
  std::unique_ptr<net::PeerRateLimiter> peer_limiter_;
  std::function<uint64_t()> exec_body_limit_;
  int lock_fd_ = -1;
  bool stopping_ = false;  // loop thread
  std::chrono::steady_clock::time_point started_;
  std::string started_at_;  // RFC 3339, UTC
  struct Loop;              // signal set + stop timer (Boost types kept out of this header)
  std::unique_ptr<Loop> loop_;
  std::vector<std::pair<std::string, std::function<nlohmann::json()>>> info_;
  std::vector<std::pair<std::string, std::function<nlohmann::json()>>> dashboard_;
  std::vector<std::function<void()>> stop_hooks_;
  std::vector<std::function<void(std::string&)>> metrics_;
  std::vector<std::shared_ptr<void>> kept_;
};

}  // namespace tenzro::node
