// tenzro dispatch: the holder side of an exec request — run the named
// experts on their rows and answer per expert (docs/formats/exec-frame.md).
//
// Where the experts come from is a seam (ExpertRunner): the node runs them
// from its expert cache (CacheRunner below), benchmarks from weights in
// memory. RunExec is the in-memory step (used directly by the local executor
// of a forward, which never encodes); ServeExec wraps it in frame decoding
// and encoding for the network transports (HTTP POST /v1/moe/exec today,
// QUIC next): it never fails, a bad frame gets an error frame.
//
// Per request: every requested expert that the runner holds is prefetched
// first, then experts run one at a time in request order (one pinned at a
// time, so a budget smaller than the request still works). An expert the
// runner does not hold, or whose run fails, gets its own error entry; the
// others still answer. Past the deadline the remaining experts answer
// kDeadlineExceeded without running. A d_model that does not match a held
// expert fails the whole request (kInvalidArgument).
// Thread-safe as the runner is (CacheRunner: fully).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "dispatch/exec_frame.h"
#include "runtime/expert_cache.h"

namespace tenzro::dispatch {

class ExpertRunner {
 public:
  virtual ~ExpertRunner() = default;
  // Whole-request check before anything runs: the model id and that d_model
  // fits every held expert among `experts`. kInvalidArgument otherwise.
  virtual Result<void> Check(const std::string& model, int layer, int64_t d_model, const std::vector<int>& experts) = 0;
  // Starts loading whichever of `experts` are cold; never blocks.
  virtual void Prefetch(const std::string& model, int layer, const std::vector<int>& experts) = 0;
  // y = FFN_expert(x) for n rows of d_model. kNotFound when not held.
  virtual Result<void> Run(const std::string& model, int layer, int expert, const float* x, int n, float* y) = 0;
};

struct ExecServeOptions {
  ExecLimits limits;
  std::chrono::milliseconds default_deadline{30000};  // when the request says 0
  std::chrono::milliseconds max_deadline{120000};     // caps the request's deadline_ms
  // Called once per expert that answered rows (e.g. SwarmAgent::RecordServed).
  std::function<void(const std::string& model, int layer, int expert, uint32_t rows)> on_served;
};

// Runs `req` (already checked: CheckExecRequest) on `runner`.
ExecResponse RunExec(const ExecRequest& req, ExpertRunner& runner, const ExecServeOptions& options = {});

// Decodes `frame`, RunExec, encodes the answer; an undecodable frame gets an
// error answer (request id 0). `status` (may be null) receives the whole-
// request error code, if any, for the transport's status line.
Bytes ServeExec(ByteSpan frame, ExpertRunner& runner, const ExecServeOptions& options = {},
                std::optional<ErrorCode>* status = nullptr);

// Runs experts from an ExpertCache with `pool` for the kernels (may be null).
// Model ids are normalised (catalog::NormalizeModelId). REQUIRES: the cache
// and the pool outlive the runner.
class CacheRunner : public ExpertRunner {
 public:
  CacheRunner(runtime::ExpertCache& cache, ThreadPool* pool) : cache_(cache), pool_(pool) {}
  Result<void> Check(const std::string& model, int layer, int64_t d_model, const std::vector<int>& experts) override;
  void Prefetch(const std::string& model, int layer, const std::vector<int>& experts) override;
  Result<void> Run(const std::string& model, int layer, int expert, const float* x, int n, float* y) override;

 private:
  runtime::ExpertCache& cache_;
  ThreadPool* pool_;
};

// Runs experts held in memory for one model (tests, benchmarks): weights
// added with Add (not owned; they must outlive the runner). Thread-safe once
// filled.
class MemoryRunner : public ExpertRunner {
 public:
  MemoryRunner(std::string model, ThreadPool* pool) : model_(std::move(model)), pool_(pool) {}
  void Add(int layer, int expert, const runtime::ExpertWeights* w) { experts_[{layer, expert}] = w; }
  Result<void> Check(const std::string& model, int layer, int64_t d_model, const std::vector<int>& experts) override;
  void Prefetch(const std::string&, int, const std::vector<int>&) override {}
  Result<void> Run(const std::string& model, int layer, int expert, const float* x, int n, float* y) override;

 private:
  std::string model_;
  ThreadPool* pool_;
  std::map<std::pair<int, int>, const runtime::ExpertWeights*> experts_;
};

}  // namespace tenzro::dispatch
