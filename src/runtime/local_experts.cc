#include "runtime/local_experts.h"

#include <cstring>

#include <fmt/format.h>

namespace tenzro::runtime {

Result<void> LocalExperts::Run(const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                               float* out) {
  const int n_tok = static_cast<int>(routing.size());
  TENZRO_CHECK_OK(CheckWireRow(wire_, n_embd));
  // slot_of[t] = first slot of token t in the per-(token, k) output buffer.
  const std::vector<size_t> slot_of = RoutingSlots(routing);
  // Tokens (and their slot) per expert, in token order; experts ascending.
  std::map<int, ExpertTokens> by_expert;
  for (int t = 0; t < n_tok; ++t)
    for (size_t k = 0; k < routing[t].experts.size(); ++k) {
      const int e = routing[t].experts[k].expert;
      TENZRO_CHECK_OK(CheckChoice(t, e));
      by_expert[e].push_back({t, slot_of[t] + k});
    }
  TENZRO_CHECK_OK(Prepare(by_expert));
  std::vector<float> ys(slot_of[n_tok] * n_embd);
  for (const auto& [e, toks] : by_expert) TENZRO_CHECK_OK(RunExpert(e, toks, x, n_embd, ys.data()));
  CombineRouted(routing, slot_of, ys.data(), n_embd, out);
  return Ok();
}

Result<void> LocalExperts::RunBatch(const ExpertWeights& w, int e, const ExpertTokens& toks, const float* x,
                                    int64_t n_embd, float* ys) {
  if (w.n_embd() != n_embd)
    return Error::InvalidArgument("expert {} has n_embd {}, the block {}", e, w.n_embd(), n_embd);
  const int nb = static_cast<int>(toks.size());
  xb_.resize(static_cast<size_t>(nb) * n_embd);
  yb_.resize(xb_.size());
  for (int i = 0; i < nb; ++i)
    std::memcpy(xb_.data() + i * n_embd, x + toks[i].first * n_embd, n_embd * sizeof(float));
  RoundWireRows(wire_, xb_.data(), xb_.size());
  auto st = ExpertFfn(w, xb_.data(), nb, yb_.data(), pool_);
  if (!st) return st.error().WithContext(fmt::format("expert {}", e));
  RoundWireRows(wire_, yb_.data(), yb_.size());
  for (int i = 0; i < nb; ++i)
    std::memcpy(ys + toks[i].second * n_embd, yb_.data() + i * n_embd, n_embd * sizeof(float));
  return Ok();
}

Result<void> InProcessExperts::CheckChoice(int t, int e) {
  if (e < 0 || static_cast<size_t>(e) >= experts_.size() || experts_[e] == nullptr)
    return Error::NotFound("token {} is routed to expert {}, which is not available", t, e);
  return Ok();
}

Result<void> InProcessExperts::RunExpert(int e, const ExpertTokens& toks, const float* x, int64_t n_embd,
                                         float* ys) {
  return RunBatch(*experts_[e], e, toks, x, n_embd, ys);
}

}  // namespace tenzro::runtime
