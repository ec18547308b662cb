#include "model/session.h"

namespace tenzro::model {

Result<void> SessionBudget::Reserve(uint64_t bytes) {
  uint64_t cur = used_.load();
  do {
    if (bytes > limit_ || cur > limit_ - bytes)
      return Error::ResourceExhausted("session memory: {} bytes needed, {} of {} in use", bytes, cur, limit_);
  } while (!used_.compare_exchange_weak(cur, cur + bytes));
  return Ok();
}

uint64_t Session::BytesFor(const HParams& hp, int max_tokens) {
  uint64_t b = 0;
  for (LayerKind k : hp.layers) {
    if (k == LayerKind::kDeltaNet) {
      b += sizeof(float) * static_cast<uint64_t>(hp.ssm_conv_kernel - 1) * hp.ssm_conv_channels();
      b += sizeof(float) * static_cast<uint64_t>(hp.ssm_n_v_heads) * hp.ssm_d_state * hp.ssm_d_v();
    } else {
      b += 2 * sizeof(float) * static_cast<uint64_t>(max_tokens) * hp.n_head_kv * hp.head_dim;
    }
  }
  return b;
}

uint64_t Session::RollbackBytes(const HParams& hp, int tokens) {
  uint64_t b = 0;
  if (tokens <= 0) return 0;
  for (LayerKind k : hp.layers) {
    if (k != LayerKind::kDeltaNet) continue;
    const uint64_t ch = static_cast<uint64_t>(hp.ssm_conv_channels());
    b += sizeof(float) * static_cast<uint64_t>(hp.ssm_conv_kernel - 1) * ch;
    b += sizeof(float) * static_cast<uint64_t>(hp.ssm_n_v_heads) * hp.ssm_d_state * hp.ssm_d_v();
    b += sizeof(float) * static_cast<uint64_t>(tokens) * (2 * ch + 2ull * hp.ssm_n_v_heads);
  }
  return b;
}

Session::Session(const HParams& hp, int max_tokens, int rollback_max, std::shared_ptr<SessionBudget> budget,
                 uint64_t reserved)
    : rollback_max_(rollback_max), max_tokens_(max_tokens), reserved_(reserved), budget_(std::move(budget)) {
  kv_.resize(hp.n_layer);
  ssm_.resize(hp.n_layer);
  if (rollback_max > 0) undo_.resize(hp.n_layer);
  for (int il = 0; il < hp.n_layer; ++il) {
    if (hp.layers[il] != LayerKind::kDeltaNet) continue;
    ssm_[il].conv.assign(static_cast<size_t>(hp.ssm_conv_kernel - 1) * hp.ssm_conv_channels(), 0.0f);
    ssm_[il].state.assign(static_cast<size_t>(hp.ssm_n_v_heads) * hp.ssm_d_state * hp.ssm_d_v(), 0.0f);
  }
}

Session::~Session() {
  if (budget_) budget_->Release(reserved_);
}

}  // namespace tenzro::model
