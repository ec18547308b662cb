// tenzro serve: one served model — its engine, tokenizer, scheduler and
// metrics, loaded in the background so the node answers /health (503,
// "loading ...") while a large checkpoint is opened.
//
// Lifecycle: Create (cheap) -> Load (opens tokenizer and engine, starts the
// scheduler; call it on any thread, once) -> requests -> destruction (stops
// the scheduler: running requests finish with kUnavailable).
// The MoE executor seam: ServeOptions::make_executor builds the executor the
// engine's MoE blocks run on (null = in-process on the checkpoint's own
// experts; the swarm executor, node/swarm_moe_executor.h, plugs in here).
// Thread-safety: ready()/status() any thread; engine()/tokenizer()/scheduler()
// only once ready() returned true (they never change after that).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/result.h"
#include "core/thread_pool.h"
#include "format/checkpoint.h"
#include "model/engine.h"
#include "model/hparams.h"
#include "model/moe_executor.h"
#include "serve/live_stats.h"
#include "serve/scheduler.h"
#include "serve/serve_metrics.h"
#include "tokenizer/tokenizer.h"

namespace tenzro::serve {

using MakeExecutor =
    std::function<Result<std::unique_ptr<model::MoeExecutor>>(const model::HParams&, const format::Checkpoint&)>;

struct ServeOptions {
  std::string model_id;      // the name clients send as "model"
  std::string checkpoint;    // GGUF path (the catalog's)
  std::string api_key;       // "" = no key required
  model::EngineOptions engine;
  SchedulerOptions scheduler;
  int max_context = 4096;    // prompt + max_tokens per request (capped by the model's context)
  MakeExecutor make_executor;  // null = in-process experts
  // With experts elsewhere: "" when every routed expert of the model has a
  // live holder, else what is missing (GET /health answers 503 with it).
  // Called on request_pool (it may read the swarm). Null = always covered.
  std::function<std::string(const model::HParams&)> coverage;
  // Where request bodies are parsed and prompts tokenized (CPU work kept off
  // the loop thread); null = the loop thread. REQUIRES: outlives the app.
  ThreadPool* request_pool = nullptr;
};

class ServeApp {
 public:
  explicit ServeApp(ServeOptions options);
  ~ServeApp();

  // Opens the tokenizer and the engine, checks they agree, starts the
  // scheduler. On failure the app stays not ready and status() says why.
  Result<void> Load();

  bool ready() const { return ready_.load(); }
  // "ok", "loading model X from PATH", or "failed to load model X: ...".
  std::string status() const;

  const ServeOptions& options() const { return options_; }
  model::Engine& engine() { return *engine_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tok_; }
  Scheduler& scheduler() { return *scheduler_; }
  ServeMetrics& metrics() { return metrics_; }
  // Tokens/s and batch size over the last ~10 s (fed by every step).
  const LiveStats& live() const { return live_; }
  // The context a request may use: min(max_context, the model's).
  int context() const { return context_; }

 private:
  ServeOptions options_;
  ServeMetrics metrics_;
  LiveStats live_{LiveStats::Clock::now()};
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  // The checkpoint make_executor's executor views (its routers, shared
  // experts): it must outlive the engine that owns that executor.
  std::unique_ptr<format::Checkpoint> spine_;
  std::unique_ptr<model::Engine> engine_;
  std::unique_ptr<Scheduler> scheduler_;
  int context_ = 0;
  std::atomic<bool> ready_{false};
  mutable std::mutex mu_;
  std::string status_;  // guarded by mu_
};

}  // namespace tenzro::serve
