// tenzro serve: continuous batching of generation requests over one engine.
//
// Requests (a prompt of token ids, max tokens, sampling params, the
// end-of-generation ids) wait in a bounded queue and join the running batch
// at step boundaries. One worker thread loops; each iteration is one *step*:
//
//   1. retire cancelled requests (their sessions are freed here);
//   2. admit waiting requests while fewer than max_active run: each gets a
//      model::Session of prompt + max_tokens positions (a request the session
//      budget cannot take waits while others run, and fails with
//      kResourceExhausted when nothing runs);
//   3. gather every active sequence's input: one token per decoding
//      sequence, and for prefilling sequences the next prompt chunk, all
//      within max_step_tokens (decoders first, so a long prompt never stalls
//      them; a prompt is prefilled over several steps);
//   4. call Engine::Step once for all of them (each MoE layer is one executor
//      call for every user);
//   5. for every sequence whose prompt is complete, sample the next token with
//      its own model::Sampler, deliver it (on_token), and retire it on an
//      end-of-generation id, max_tokens, a full session or on_token == false.
//
// Speculative decoding (options.draft.draft_max > 0): a decoding sequence
// feeds its last token plus a prompt-lookup draft (model/draft.h) in the
// same step as everyone else (all logits for it, rollback on), so each layer
// still makes one MoE call; step 5 then verifies the draft row by row
// (greedy: exact; at a temperature: model::Sampler::SampleDraft's rule, the
// same distribution), delivers the accepted tokens and the next one, and
// rolls the session back to what it kept (model::Engine::Rollback). Drafts
// take from the step's token budget after every decoder's own token, and
// never go past max_tokens or the session. Greedy output is the same with
// and without drafts.
//
// Determinism: a request's tokens depend only on its prompt, params and seed,
// never on the rest of the batch (the engine computes rows independently and
// each request has its own sampler; chunked prefill gives the same bits as a
// one-step prefill, docs/engine.md).
// Callbacks run on the worker thread: they must be quick and must not call
// back into the scheduler except Cancel(). on_done is called exactly once per
// accepted request (finish, error or cancel), after its last on_token and
// after the step that finished it is counted (stats, step observer).
// Thread-safety: Submit, Cancel, stats and Requests are safe from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <vector>

#include "core/result.h"
#include "model/engine.h"
#include "model/generator.h"
#include "model/sampler.h"

namespace tenzro::serve {

struct SchedulerOptions {
  int max_active = 8;         // sequences in the running batch
  int max_waiting = 32;       // queued beyond them; more is kResourceExhausted
  int max_step_tokens = 256;  // tokens fed per step, all sequences together (>= max_active)
  model::DraftOptions draft;   // draft.draft_max 0: no speculative decoding
  // In place of prompt lookup (tests): as model::GenerateOptions::drafter.
  std::function<std::vector<int32_t>(std::span<const int32_t> history, int max)> drafter;
};

struct TokenEvent {
  int32_t id = 0;
  std::optional<model::LogprobResult> logprob;  // when the request asked (top_logprobs >= 0)
};

struct FinishEvent {
  Result<void> status;  // an error: the engine's or sampler's, kResourceExhausted (no session), kUnavailable (cancelled / shut down)
  model::FinishReason reason = model::FinishReason::kLength;
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

struct GenRequest {
  std::vector<int32_t> prompt;  // non-empty, ids < n_vocab
  int max_tokens = 16;          // >= 1
  model::SamplingParams sampling;
  std::vector<int32_t> eog;     // end-of-generation ids (not delivered)
  int top_logprobs = -1;        // < 0: no logprobs; else logprobs with this many alternatives
  // Return false to stop (a stop string matched): finishes with kStop.
  std::function<bool(const TokenEvent&)> on_token;
  std::function<void(const FinishEvent&)> on_done;
};

struct SchedulerStats {
  int active = 0;
  int queued = 0;
  uint64_t requests = 0;           // accepted by Submit
  uint64_t steps = 0;              // Engine::Step calls
  uint64_t prompt_tokens = 0;      // prompt tokens fed
  uint64_t generated_tokens = 0;   // tokens delivered
  uint64_t decode_rows = 0;        // rows fed by decoding sequences (own token + drafts)
  uint64_t drafted_tokens = 0;     // drafted tokens fed
  uint64_t accepted_tokens = 0;    // of those, accepted (delivered without a step of their own)
  double last_step_ms = 0;
  uint64_t session_bytes = 0;      // engine session budget in use
  uint64_t session_budget = 0;
};

// What one step did, for metrics and tests.
struct StepInfo {
  int sequences = 0;  // in the Engine::Step call
  int tokens = 0;     // rows fed
  double ms = 0;
  int generated = 0;  // tokens delivered by this step
  int drafted = 0;    // drafted tokens fed in it
  int accepted = 0;   // of those, accepted
};

// One request as the scheduler last published it (after its admission or its
// latest step): a copy, so reading it never waits for a step.
struct RequestSnapshot {
  uint64_t id = 0;
  bool queued = false;    // still waiting for a place in the batch
  int prompt_tokens = 0;
  int prefilled = 0;      // prompt tokens fed so far
  int generated = 0;      // tokens delivered so far
  int max_tokens = 0;
  std::chrono::steady_clock::time_point submitted;
};

class Scheduler {
 public:
  // REQUIRES: `engine` outlives the scheduler; nothing else calls
  // engine->Step while it runs. Does not start the worker (Start()).
  Scheduler(model::Engine* engine, SchedulerOptions options);
  // Stops the worker; requests still queued or running get on_done with
  // kUnavailable.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts the worker thread (requests submitted before wait for it). Once.
  void Start();

  // Queues `req` and returns its id. kInvalidArgument for an empty prompt,
  // an id out of the vocabulary, max_tokens < 1, bad sampling params or a
  // missing callback; kResourceExhausted when max_active + max_waiting
  // requests are already in; kUnavailable after shutdown.
  Result<uint64_t> Submit(GenRequest req);

  // Asks to drop request `id` (client gone): it is retired, its session
  // freed and on_done called (kUnavailable) at the next step boundary. No
  // effect for an unknown or finished id. Any thread, including callbacks.
  void Cancel(uint64_t id);

  // Called on the worker after each step (set before Start()).
  void SetStepObserver(std::function<void(const StepInfo&)> fn) { observer_ = std::move(fn); }

  SchedulerStats stats() const;
  // The running requests (admission order), then the queued ones, at most
  // `max` in all. Costs one lock and O(max) copies: at most max_active
  // running entries are kept, the queue is only read.
  std::vector<RequestSnapshot> Requests(size_t max) const;
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Seq;
  void Loop();
  void RetireCancelled();
  void Admit();
  bool RunStep();  // false when nothing ran
  // Samples and delivers one token for `s` from `row`; true when it goes on.
  bool Advance(Seq& s, std::span<const float> row);
  // Delivers `tok` (chosen from `row`); `kept` = positions in the session
  // once the tokens before it are kept. True when the sequence goes on.
  bool Deliver(Seq& s, int32_t tok, std::span<const float> row, int kept);
  // A decoder's step outcome with a draft: verify, deliver, roll back.
  // Returns the drafted tokens accepted.
  int Verify(Seq& s, std::span<const float> rows);
  void Finish(Seq& s, Result<void> status, model::FinishReason reason);
  // REQUIRES: mu_ held, on the worker. Mirrors active_ into active_count_
  // and running_.
  void PublishLocked();

  model::Engine* engine_;
  const SchedulerOptions options_;
  std::function<void(const StepInfo&)> observer_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t next_id_ = 1;
  std::deque<std::unique_ptr<Seq>> waiting_;  // guarded by mu_
  std::unordered_set<uint64_t> cancelled_;    // guarded by mu_
  int active_count_ = 0;                      // guarded by mu_ (mirror of active_.size())
  SchedulerStats counters_;                   // guarded by mu_ (steps, tokens, last_step_ms)
  std::vector<RequestSnapshot> running_;      // guarded by mu_ (mirror of active_)

  std::vector<std::unique_ptr<Seq>> active_;  // worker thread only
  std::vector<float> logits_;                 // worker thread only
  bool defer_done_ = false;                   // worker: inside a step, on_done waits for its end
  std::vector<std::function<void()>> deferred_;  // worker: those on_done calls
  std::thread worker_;
};

}  // namespace tenzro::serve
