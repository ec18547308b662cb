#include "node/node.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <ctime>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "core/bytes.h"
#include "core/file.h"
#include "net/bearer.h"
#include "net/json_http.h"
#include "node/admin_routes.h"
#include "runtime/parallel.h"

#ifndef TENZRO_VERSION
#define TENZRO_VERSION "0.0.0"
#endif

namespace tenzro::node {

namespace asio = boost::asio;

std::string_view NodeVersion() { return TENZRO_VERSION; }

struct Node::Loop {
  explicit Loop(asio::io_context& io) : signals(io, SIGINT, SIGTERM), stop_timer(io) {}
  asio::signal_set signals;
  asio::steady_timer stop_timer;
  std::chrono::steady_clock::time_point stop_deadline;
};

namespace {

std::string NowRfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

Node::Node(NodeConfig config) : config_(std::move(config)) {}

Node::~Node() {
  if (jobs_) jobs_->Shutdown();
  if (pool_) pool_->Shutdown();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Result<std::unique_ptr<Node>> Node::Create(NodeConfig config, const std::function<Result<void>(Node&)>& compose) {
  std::unique_ptr<Node> node(new Node(std::move(config)));
  TENZRO_CHECK_OK(node->Init(compose));
  return node;
}

Result<void> Node::Init(const std::function<Result<void>(Node&)>& compose) {
  if (sodium_init() < 0) return Error::Internal("libsodium failed to initialise");
  if (config_.data_dir.empty()) return Error::InvalidArgument("node config: data_dir is not set");
  TENZRO_TRY(net::Endpoint http_ep, net::ParseEndpoint(config_.http));
  TENZRO_TRY(net::Endpoint admin_ep, net::ParseEndpoint(config_.admin));
  if (!net::IsLoopbackHost(admin_ep.host))
    return Error::InvalidArgument("admin address '{}' is not loopback; the admin API only listens on 127.0.0.1/::1",
                                  config_.admin);
  // A data dir this node creates is private (MakeDirs leaves the mode to
  // the umask); an existing one is the operator's to set.
  const bool data_dir_existed = PathExists(config_.data_dir);
  TENZRO_CHECK_OK(MakeDirs(config_.data_dir, 0700));
  if (!data_dir_existed && ::chmod(config_.data_dir.c_str(), 0700) != 0)
    return Error::FromErrno(errno, "chmod 0700 " + config_.data_dir);

  // One node per data dir: an flock the kernel drops when the process dies.
  std::string lock_path = config_.data_dir + "/node.lock";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) return Error::FromErrno(errno, "open " + lock_path);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return Error::AlreadyExists("another tenzro node is already running for data dir {} (see {}/node.json)",
                                config_.data_dir, config_.data_dir);

  uint8_t secret[32];
  randombytes_buf(secret, sizeof secret);
  token_ = ToHex(ByteSpan(secret, sizeof secret));
  sodium_memzero(secret, sizeof secret);
  TENZRO_CHECK_OK(WriteFileAtomic(config_.data_dir + "/admin.token", std::string_view(token_ + "\n"), 0600));

  uint32_t threads = config_.threads ? config_.threads : std::max(2u, std::thread::hardware_concurrency());
  ioc_ = std::make_unique<asio::io_context>(1);
  // The work pool also runs the expert kernels (runtime::ParallelFor).
  pool_ = std::make_unique<ThreadPool>(threads, "work", runtime::kComputePoolSpin);
  TENZRO_TRY(jobs_, JobRegistry::Open(config_.data_dir + "/jobs", config_.job_threads));

  net::ServerOptions common;
  common.max_body_bytes = config_.max_body_bytes;
  common.read_timeout = std::chrono::milliseconds(config_.read_timeout_ms);
  common.producer_pool = pool_.get();
  net::RateLimitOptions rl;
  rl.rate = config_.peer_rate;
  rl.burst = config_.peer_burst;
  rl.prefix_multiple = config_.peer_prefix_multiple;
  peer_limiter_ = std::make_unique<net::PeerRateLimiter>(rl);
  common.max_connections = config_.max_connections;
  common.max_connections_per_host = config_.max_connections_per_ip;
  common.max_inflight_body_bytes = config_.max_inflight_body_bytes;
  net::ServerOptions pub = common;
  pub.name = "http";
  // Public listener: the per-peer rate limit and the per-route body limit
  // apply to the request head, before any body byte is read.
  pub.admit = [this](const net::RequestHead& head) -> net::Admission {
    net::Admission a;
    const bool exec = head.method == "POST" && head.path == "/v1/moe/exec";
    // QUIC exec requests are dispatched through the router, not this
    // listener: the QUIC service limits them by node id itself.
    if (exec || (head.method == "GET" && head.path.starts_with("/blobs/"))) {
      const std::string host(net::RemoteHost(head.remote));
      if (!peer_limiter_->AllowWithPrefix("ip:" + host, "net:" + net::IpPrefix(host))) {
        net::Response r = net::ErrorResponse(
            Error::ResourceExhausted("peer {} is over its request rate ({:g} per second, burst {}); retry later",
                                     host, config_.peer_rate, config_.peer_burst),
            429);
        r.headers.emplace_back("Retry-After", "1");
        a.refuse = std::move(r);
        return a;
      }
    }
    if (!exec) a.max_body_bytes = config_.public_body_bytes;
    else if (exec_body_limit_) a.max_body_bytes = std::min<uint64_t>(config_.max_body_bytes, exec_body_limit_());
    return a;
  };
  http_ = std::make_unique<net::HttpServer>(*ioc_, &public_router_, pub);
  net::ServerOptions adm = common;
  adm.name = "admin";
  adm.filter = [this](const net::Request& req) -> std::optional<net::Response> {
    if (net::BearerMatches(req, token_)) return std::nullopt;
    // --dashboard admin: the static page loads without the token (it holds
    // no data); its state requests carry it (node/dashboard.h).
    if (config_.dashboard == "admin" && req.method == "GET" && (req.path == "/" || req.path == "/index.html"))
      return std::nullopt;
    net::Response r = net::ErrorResponse(
        Error::PermissionDenied("missing or wrong admin token: send 'Authorization: Bearer <token>' "
                                "with the token from {}/admin.token",
                                config_.data_dir),
        401);
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
  };
  admin_ = std::make_unique<net::HttpServer>(*ioc_, &admin_router_, adm);
  TENZRO_CHECK_OK(http_->Listen(http_ep));
  TENZRO_CHECK_OK(admin_->Listen(admin_ep));
  // Belt and braces: what the admin listener actually bound is loopback
  // (a name like "localhost" resolved to something else would fail here).
  if (!net::IsLoopbackHost(admin_->endpoint().host))
    return Error::InvalidArgument("admin address '{}' bound {}, which is not loopback", config_.admin,
                                  admin_->endpoint().HostPort());

  started_ = std::chrono::steady_clock::now();
  started_at_ = NowRfc3339();
  AddBuiltinRoutes();
  if (compose) TENZRO_CHECK_OK(compose(*this));
  TENZRO_CHECK_OK(jobs_->Recover());
  loop_ = std::make_unique<Loop>(*ioc_);
  return Ok();
}

nlohmann::json Node::InfoJson() const {
  double uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  nlohmann::json j = {
      {"version", std::string(NodeVersion())},
      {"pid", static_cast<int64_t>(::getpid())},
      {"data_dir", config_.data_dir},
      {"started_at", started_at_},
      {"uptime_s", uptime},
      {"listeners", {{"http", http_->endpoint().Url()}, {"admin", admin_->endpoint().Url()}}},
      {"threads", pool_->size()},
      {"job_threads", config_.job_threads},
      {"routes", {{"admin", admin_router_.Describe()}, {"public", public_router_.Describe()}}},
  };
  for (const auto& [key, fn] : info_) j[key] = fn();
  return j;
}

void Node::AddInfo(std::string key, std::function<nlohmann::json()> fn) { info_.emplace_back(std::move(key), std::move(fn)); }

void Node::AddDashboardSection(std::string key, std::function<nlohmann::json()> fn) {
  dashboard_.emplace_back(std::move(key), std::move(fn));
}

void Node::OnStop(std::function<void()> fn) { stop_hooks_.push_back(std::move(fn)); }

void Node::AddMetrics(std::function<void(std::string&)> fn) { metrics_.push_back(std::move(fn)); }

void Node::AddBuiltinRoutes() {
  admin_router_.Add("GET", "/v1/node/info", [this](const net::Request&) { return net::JsonResponse(InfoJson()); });
  admin_router_.Add("POST", "/v1/node/shutdown", [this](const net::Request&) {
    spdlog::info("shutdown requested through the admin API");
    RequestStop();  // posted: runs after this response is queued, which is then finished
    return net::JsonResponse({{"stopping", true}});
  });
  public_router_.Add("GET", "/metrics", [this](const net::Request&) {
    std::string out;
    const double uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    out += fmt::format("# HELP tenzro_uptime_seconds Seconds since the node started.\n"
                       "# TYPE tenzro_uptime_seconds gauge\ntenzro_uptime_seconds {:.3f}\n",
                       uptime);
    out += fmt::format("# HELP tenzro_peer_rate_limited_total Exec and blob requests refused because their peer "
                       "was over --peer-rate (HTTP 429, QUIC error reply or refused stream).\n"
                       "# TYPE tenzro_peer_rate_limited_total counter\ntenzro_peer_rate_limited_total {}\n",
                       peer_limiter_->rejected());
    out += fmt::format("# HELP tenzro_peer_prefix_rate_limited_total Of those, refused because the peer's IP prefix "
                       "(IPv4 /24, IPv6 /56) was over --peer-prefix-multiple times the per-peer rate.\n"
                       "# TYPE tenzro_peer_prefix_rate_limited_total counter\ntenzro_peer_prefix_rate_limited_total {}\n",
                       peer_limiter_->rejected_by_prefix());
    for (const auto& fn : metrics_) fn(out);
    net::Response r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = std::move(out);
    return r;
  });
  public_router_.Add("GET", "/v1/health", [](const net::Request&) {
    return net::JsonResponse({{"ok", true}, {"version", std::string(NodeVersion())}});
  });
  AddJobRoutes(admin_router_, *jobs_);
  if (config_.debug_routes) AddDebugRoutes(admin_router_, *jobs_, *pool_);
}

Result<void> Node::Run() {
  std::signal(SIGPIPE, SIG_IGN);
  nlohmann::json info = {
      {"pid", static_cast<int64_t>(::getpid())},
      {"http", http_->endpoint().Url()},
      {"admin", admin_->endpoint().Url()},
      {"started_at", started_at_},
      {"version", std::string(NodeVersion())},
      {"data_dir", config_.data_dir},
  };
  for (const auto& [key, fn] : info_) info[key] = fn();
  std::string node_json = config_.data_dir + "/node.json";
  TENZRO_CHECK_OK(WriteFileAtomic(node_json, std::string_view(info.dump(2) + "\n"), 0644));
  loop_->signals.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("received signal {}, stopping", sig);
    BeginStop();
  });
  spdlog::info("tenzro node {} running: http {} admin {} data dir {}", NodeVersion(), http_->endpoint().Url(),
               admin_->endpoint().Url(), config_.data_dir);
  try {
    ioc_->run();
  } catch (const std::exception& e) {
    spdlog::critical("event loop failed: {}", e.what());
  }
  for (auto it = stop_hooks_.rbegin(); it != stop_hooks_.rend(); ++it) (*it)();
  spdlog::info("stopping jobs and workers");
  jobs_->Shutdown();
  pool_->Shutdown();
  if (::unlink(node_json.c_str()) != 0 && errno != ENOENT)
    return Error::FromErrno(errno, "remove " + node_json);
  spdlog::info("tenzro node stopped");
  return Ok();
}

void Node::RequestStop() {
  asio::post(*ioc_, [this] { BeginStop(); });
}

void Node::BeginStop() {
  if (stopping_) return;
  stopping_ = true;
  boost::system::error_code ec;
  loop_->signals.cancel(ec);
  http_->Stop();
  admin_->Stop();
  // Let busy connections finish their response, for at most 5 s.
  loop_->stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  PollStop();
}

void Node::PollStop() {
  if ((http_->active_connections() == 0 && admin_->active_connections() == 0) ||
      std::chrono::steady_clock::now() >= loop_->stop_deadline) {
    ioc_->stop();
    return;
  }
  loop_->stop_timer.expires_after(std::chrono::milliseconds(10));
  loop_->stop_timer.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) PollStop();
  });
}

}  // namespace tenzro::node
