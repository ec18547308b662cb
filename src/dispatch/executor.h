// tenzro dispatch: executors — how a forward hands one holder its batch.
//
// An Executor takes an exec request (exec_frame.h) to one holder and brings
// the answer back: LocalExecutor runs it on this node's ExpertRunner without
// encoding anything; HttpExecutor POSTs the frame to the holder's public
// /v1/moe/exec; QuicExecutor (quic_executor.h) carries the same frame on
// ALPN tenzro/moe-exec/1. The forward (forward.h) only sees this interface,
// so tests can put a failing or slow holder behind it.
//
// Errors of Exec are transport failures (kUnavailable, kDeadlineExceeded,
// kCorruption for a malformed answer, ...): the forward bans the holder. A
// holder that answered with an error frame returns OK with
// ExecResponse::error set.
// Thread-safety: Exec may be called from several threads at once.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/cancel.h"
#include "core/result.h"
#include "dispatch/exec_frame.h"
#include "dispatch/exec_server.h"
#include "dispatch/planner.h"
#include "net/client.h"

namespace tenzro::dispatch {

struct HolderTarget {
  std::string node_id;
  Transport transport = Transport::kHttp;
  std::string endpoint;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `req` on `target`, waiting at most `timeout`.
  virtual Result<ExecResponse> Exec(const HolderTarget& target, const ExecRequest& req,
                                    std::chrono::milliseconds timeout) = 0;
  // The same, ending early (kUnavailable, "cancelled") once `cancel` fires:
  // the loser of a hedged call (exec_calls.h). By default the call is not
  // interrupted (it runs to its answer or deadline and its answer is
  // dropped); QuicExecutor resets its stream.
  virtual Result<ExecResponse> ExecCancellable(const HolderTarget& target, const ExecRequest& req,
                                               std::chrono::milliseconds timeout, CancelToken& cancel) {
    (void)cancel;
    return Exec(target, req, timeout);
  }
};

// This node: RunExec on `runner`. REQUIRES: runner outlives the executor.
class LocalExecutor : public Executor {
 public:
  LocalExecutor(ExpertRunner& runner, ExecServeOptions options) : runner_(runner), options_(std::move(options)) {}
  Result<ExecResponse> Exec(const HolderTarget& target, const ExecRequest& req,
                            std::chrono::milliseconds timeout) override;

 private:
  ExpertRunner& runner_;
  ExecServeOptions options_;
};

// POST <endpoint>/v1/moe/exec. Keeps idle connections per endpoint for
// reuse (at most `max_idle_per_endpoint`); a connection that failed or whose
// call was cancelled is dropped. A cancelled call (a hedge's loser) aborts
// its connection, so it ends at once instead of at its answer or deadline.
class HttpExecutor : public Executor {
 public:
  explicit HttpExecutor(std::chrono::milliseconds connect_timeout = std::chrono::milliseconds(2000),
                        size_t max_idle_per_endpoint = 8)
      : connect_timeout_(connect_timeout), max_idle_(max_idle_per_endpoint) {}
  Result<ExecResponse> Exec(const HolderTarget& target, const ExecRequest& req,
                            std::chrono::milliseconds timeout) override;
  Result<ExecResponse> ExecCancellable(const HolderTarget& target, const ExecRequest& req,
                                       std::chrono::milliseconds timeout, CancelToken& cancel) override;

 private:
  std::unique_ptr<net::HttpClient> Take(const net::Endpoint& ep, std::chrono::milliseconds timeout);
  void Give(const std::string& key, std::unique_ptr<net::HttpClient> c);

  std::chrono::milliseconds connect_timeout_;
  size_t max_idle_;
  std::mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<net::HttpClient>>> idle_;  // "url|timeout" -> clients; mu_
};

}  // namespace tenzro::dispatch
