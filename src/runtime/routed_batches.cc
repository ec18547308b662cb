#include "runtime/routed_batches.h"

#include <algorithm>
#include <cstring>

namespace tenzro::runtime {

std::vector<size_t> RoutingSlots(const std::vector<TokenRouting>& routing) {
  std::vector<size_t> slot_of(routing.size() + 1, 0);
  for (size_t t = 0; t < routing.size(); ++t) slot_of[t + 1] = slot_of[t] + routing[t].experts.size();
  return slot_of;
}

Result<void> RunExpertBatch(const ExpertWeights& w, int e, const ExpertTokens& toks, const float* x, int64_t n_embd,
                            float* ys, ThreadPool* pool, std::vector<float>& xb, std::vector<float>& yb) {
  if (w.n_embd() != n_embd)
    return Error::InvalidArgument("expert {} has n_embd {}, the block {}", e, w.n_embd(), n_embd);
  const int nb = static_cast<int>(toks.size());
  xb.resize(static_cast<size_t>(nb) * n_embd);
  yb.resize(xb.size());
  for (int i = 0; i < nb; ++i)
    std::memcpy(xb.data() + i * n_embd, x + toks[i].first * n_embd, n_embd * sizeof(float));
  auto st = ExpertFfn(w, xb.data(), nb, yb.data(), pool);
  if (!st) return st.error().WithContext(fmt::format("expert {}", e));
  for (int i = 0; i < nb; ++i)
    std::memcpy(ys + toks[i].second * n_embd, yb.data() + i * n_embd, n_embd * sizeof(float));
  return Ok();
}

void CombineRouted(const std::vector<TokenRouting>& routing, const std::vector<size_t>& slot_of, const float* ys,
                   int64_t n_embd, float* out) {
  for (size_t t = 0; t < routing.size(); ++t) {
    float* o = out + t * n_embd;
    std::fill(o, o + n_embd, 0.0f);
    for (size_t k = 0; k < routing[t].experts.size(); ++k) {
      const float wk = routing[t].experts[k].weight;
      const float* y = ys + (slot_of[t] + k) * n_embd;
      for (int64_t i = 0; i < n_embd; ++i) o[i] += wk * y[i];
    }
  }
}

void CombineMoeBlock(const std::vector<TokenRouting>& routing, const std::vector<size_t>& slot_of, const float* ys,
                     const float* shared, int64_t n_embd, float* out) {
  CombineRouted(routing, slot_of, ys, n_embd, out);
  if (!shared) return;
  const size_t n = routing.size() * static_cast<size_t>(n_embd);
  for (size_t i = 0; i < n; ++i) out[i] += shared[i];
}

}  // namespace tenzro::runtime
