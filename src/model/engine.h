// tenzro model: the engine — a whole model's forward pass on this node.
//
// The engine owns the dense spine (embeddings, attention and delta-net
// layers, norms, output head; weights.h) and runs it; each layer's MoE block
// goes to a MoeExecutor (in-process on the checkpoint's experts by default,
// or on the swarm). Data flow of one step (docs/engine.md):
//
//   tokens -> embedding rows -> for each layer:
//       x += mix(RMSNorm(x) * attn_norm)          attention or delta net
//       x += moe(RMSNorm(x) * ffn_norm)           one MoeExecutor::Run per layer
//   -> RMSNorm(x) * output_norm -> output -> logits (the rows asked for)
//
// A step takes several sequences at once (continuous batching): their new
// tokens are stacked, every matrix and every MoE block runs once over all of
// them, and the per-sequence state lives in each Session. A prompt is fed in
// one step (prefill), then one token per step (decode); both run the same
// arithmetic, and a sequence's logits do not depend on the others in a step.
//
// Speculative decoding: a step may feed a sequence's last token plus drafted
// ones with rollback on (SeqInput::rollback, all_logits), and Rollback then
// keeps the first j of them: afterwards the session is bit for bit what
// feeding only those j tokens would have made it (session.h says what is
// kept and what it costs).
//
// Thread-safety: Step and NewSession may be called from one thread at a
// time; the engine's pool parallelises inside a step. Sessions may be
// destroyed from any thread.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "format/checkpoint.h"
#include "model/hparams.h"
#include "model/moe_executor.h"
#include "model/session.h"
#include "model/weights.h"

namespace tenzro::model {

struct EngineOptions {
  int threads = 0;                        // compute threads (<= 0: hardware threads)
  uint64_t session_budget = 1ull << 30;   // bytes all live sessions may reserve together
  // With the in-process MoE executor: each routed expert's rows rounded as
  // this wire dtype (LocalMoeExecutor), so the engine matches a swarm run
  // with the same dtype bit for bit. f32 here (exact); the CLI and the node
  // pass their --wire-dtype / wire_dtype setting (default bf16).
  runtime::WireDtype wire_dtype = runtime::WireDtype::kF32;
};

class Engine {
 public:
  // Opens the GGUF checkpoint or spine blob at `path` and views its dense
  // weights. With `moe` null, the MoE blocks run in-process on the
  // checkpoint's own experts (all must be present). Errors: the checkpoint's
  // (kCorruption, kIo, ...), kUnsupported for an architecture not in the
  // table (arch.h), kNotFound / kInvalidArgument naming a missing or
  // misshapen tensor or metadata key.
  static Result<std::unique_ptr<Engine>> Open(const std::string& path, const EngineOptions& options = {},
                                              std::unique_ptr<MoeExecutor> moe = nullptr);
  ~Engine();

  const HParams& hparams() const { return hp_; }
  const ModelWeights& weights() const { return w_; }
  const format::Checkpoint& checkpoint() const { return *ckpt_; }
  ThreadPool* pool() const { return pool_.get(); }
  const SessionBudget& budget() const { return *budget_; }

  // A sequence that can hold `max_tokens` positions (<= 0: the model's
  // training context); with rollback_tokens > 0, rollback steps of up to
  // that many tokens are allowed and what they need is reserved too
  // (Session::RollbackBytes). kResourceExhausted when the session budget
  // cannot take it; kInvalidArgument for a size over 1M positions or
  // rollback_tokens outside [0, Session::kMaxRollbackTokens].
  Result<std::unique_ptr<Session>> NewSession(int max_tokens = 0, int rollback_tokens = 0);

  struct SeqInput {
    Session* session;
    std::span<const int32_t> tokens;  // at least one
    bool all_logits = false;          // logits for every token, else the last only
    // Keep what Rollback needs (at most the session's rollback_max() tokens,
    // else kInvalidArgument).
    bool rollback = false;
  };
  // Feeds each sequence's tokens and writes logits into `logits` (resized):
  // per sequence in batch order, all_logits ? tokens.size() : 1 rows of
  // n_vocab floats. Checked before any state changes (kInvalidArgument): a
  // token id outside the vocabulary, a session twice in the batch, a broken
  // session, no tokens; kResourceExhausted when a session would pass its
  // max_tokens. A failure after that (the MoE executor's) marks the
  // sessions of the step broken.
  Result<void> Step(std::span<const SeqInput> batch, std::vector<float>& logits);

  // Keeps the first `keep` of the tokens the session's last step fed with
  // rollback on and forgets the rest (n_past, tokens(), KV caches, delta-net
  // state). Costs a replay of `keep` tokens' delta rule per delta-net layer
  // (no matrix products). Once per such step: kInvalidArgument when the last
  // step was not a rollback step, it was already rolled back, or `keep` is
  // outside [0, tokens fed]. Same thread rule as Step.
  Result<void> Rollback(Session* session, int keep);

 private:
  Engine() = default;
  Result<void> RunLayers(const std::vector<struct SeqSlice>& seqs, int n_rows);

  std::unique_ptr<format::Checkpoint> ckpt_;
  HParams hp_;
  ModelWeights w_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<MoeExecutor> moe_;
  std::shared_ptr<SessionBudget> budget_;
  // Step scratch (reused across steps).
  std::vector<float> x_, h_, y_;
};

}  // namespace tenzro::model
