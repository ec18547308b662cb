// tenzro model: one sequence's state — what the engine remembers between
// steps.
//
// Per softmax-attention layer, a KV cache of f32 keys and values
// ([position][n_head_kv * head_dim] each); per delta-net layer, the last
// conv_kernel - 1 conv inputs ([conv_kernel - 1][channels]) and the recurrent
// state ([n_v_heads][d_state][d_v]). Byte accounting: a session reserves
// everything it may ever use at creation (max_tokens positions of KV plus the
// fixed recurrent state) against the engine's session budget, and gives it
// back when destroyed; the KV vectors grow as tokens arrive, never past the
// reservation. So the budget bounds memory whatever the requests do.
//
// Rollback (speculative decoding, Engine::Rollback): a session created with
// rollback on may be fed a step with SeqInput::rollback set, then keep only
// the first j of that step's tokens. KV caches are simply truncated; a
// delta-net layer's state cannot be, so such a step keeps, per delta-net
// layer, the conv and recurrent state from before it plus each token's conv
// input, conv output and (decay, beta) per head, and the rollback replays the
// first j tokens' delta rule from there (the same kernel on the same inputs:
// bit-identical to a step that fed only those j). Those bytes are reserved
// with the session (RollbackBytes: one more copy of the fixed delta-net state
// plus the per-token inputs of the rollback step size the session was
// created for, at most kMaxRollbackTokens), so the budget bounds them too.
//
// A session is used by one step at a time (the engine's caller serialises).
// A step that fails midway leaves the state inconsistent: the session is
// then marked broken and refuses further steps.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/result.h"
#include "model/hparams.h"

namespace tenzro::model {

// Bytes reserved by live sessions against a limit; shared by the engine and
// its sessions (a session may outlive nothing but keeps this alive).
class SessionBudget {
 public:
  explicit SessionBudget(uint64_t limit) : limit_(limit) {}
  // kResourceExhausted (with the figures) when `bytes` does not fit.
  Result<void> Reserve(uint64_t bytes);
  void Release(uint64_t bytes) { used_.fetch_sub(bytes); }
  uint64_t used() const { return used_.load(); }
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  int n_past() const { return n_past_; }          // positions already in the state
  int max_tokens() const { return max_tokens_; }  // capacity
  uint64_t reserved_bytes() const { return reserved_; }
  bool broken() const { return broken_; }
  // The tokens fed so far (prompt and generated), in order.
  const std::vector<int32_t>& tokens() const { return tokens_; }

  // Bytes a session of `max_tokens` positions reserves for a model.
  static uint64_t BytesFor(const HParams& hp, int max_tokens);
  // Tokens one rollback step may feed at most, and the extra bytes a session
  // whose rollback steps feed up to `tokens` reserves for them (0 for 0).
  static constexpr int kMaxRollbackTokens = 64;
  static uint64_t RollbackBytes(const HParams& hp, int tokens);
  // Tokens a rollback step on this session may feed (0: no rollback).
  int rollback_max() const { return rollback_max_; }
  // Tokens the last step fed with SeqInput::rollback (0: none, or already
  // rolled back / followed by another step).
  int rollback_tokens() const { return undo_n_; }

  // --- for the engine's layer code (engine.cc, attention.cc, delta_net.cc) ---
  struct Kv {
    std::vector<float> k, v;  // [pos][n_head_kv * head_dim]
  };
  struct Ssm {
    std::vector<float> conv;   // [conv_kernel - 1][channels], oldest first
    std::vector<float> state;  // [n_v_heads][d_state][d_v]
  };
  // What a rollback step keeps per delta-net layer (n = the step's tokens).
  struct SsmUndo {
    std::vector<float> conv0;   // conv state before the step
    std::vector<float> state0;  // recurrent state before the step
    std::vector<float> x;       // [n][channels] conv inputs
    std::vector<float> y;       // [n][channels] q | k | v after conv, SiLU, L2 norm, q scale
    std::vector<float> gb;      // [n][n_v_heads][2] decay and beta
  };
  Kv& kv(int layer) { return kv_[layer]; }
  Ssm& ssm(int layer) { return ssm_[layer]; }
  SsmUndo& undo(int layer) { return undo_[layer]; }

 private:
  friend class Engine;
  Session(const HParams& hp, int max_tokens, int rollback_max, std::shared_ptr<SessionBudget> budget,
          uint64_t reserved);

  std::vector<Kv> kv_;    // per layer (empty vectors for delta-net layers)
  std::vector<Ssm> ssm_;  // per layer (empty for attention layers)
  std::vector<SsmUndo> undo_;  // per layer, rollback sessions only
  int undo_n_ = 0;
  int rollback_max_ = 0;
  std::vector<int32_t> tokens_;
  int n_past_ = 0;
  int max_tokens_ = 0;
  bool broken_ = false;
  uint64_t reserved_ = 0;
  std::shared_ptr<SessionBudget> budget_;
};

}  // namespace tenzro::model
