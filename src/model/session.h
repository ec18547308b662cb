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

  // --- for the engine's layer code (engine.cc, attention.cc, delta_net.cc) ---
  struct Kv {
    std::vector<float> k, v;  // [pos][n_head_kv * head_dim]
  };
  struct Ssm {
    std::vector<float> conv;   // [conv_kernel - 1][channels], oldest first
    std::vector<float> state;  // [n_v_heads][d_state][d_v]
  };
  Kv& kv(int layer) { return kv_[layer]; }
  Ssm& ssm(int layer) { return ssm_[layer]; }

 private:
  friend class Engine;
  Session(const HParams& hp, int max_tokens, std::shared_ptr<SessionBudget> budget, uint64_t reserved);

  std::vector<Kv> kv_;    // per layer (empty vectors for delta-net layers)
  std::vector<Ssm> ssm_;  // per layer (empty for attention layers)
  std::vector<int32_t> tokens_;
  int n_past_ = 0;
  int max_tokens_ = 0;
  bool broken_ = false;
  uint64_t reserved_ = 0;
  std::shared_ptr<SessionBudget> budget_;
};

}  // namespace tenzro::model
