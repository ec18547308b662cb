#include "runtime/routed_batches.h"

#include <algorithm>

namespace tenzro::runtime {

std::vector<size_t> RoutingSlots(const std::vector<TokenRouting>& routing) {
  std::vector<size_t> slot_of(routing.size() + 1, 0);
  for (size_t t = 0; t < routing.size(); ++t) slot_of[t + 1] = slot_of[t] + routing[t].experts.size();
  return slot_of;
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
  if (shared) AddShared(shared, routing.size() * static_cast<size_t>(n_embd), out);
}

void AddShared(const float* shared, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] += shared[i];
}

}  // namespace tenzro::runtime
