// tenzro runtime: the arithmetic every RoutedExpertRunner (moe_block.h)
// shares, wherever its experts run (local_experts.h on this node,
// dispatch/forward.cc with remote holders): rows of expert outputs sit in a
// per-(token, k) slot buffer, and each token's slots are summed in routing
// order (k = 0, 1, ...), then the shared expert's row is added. Keeping the
// sums here keeps every path bit-identical to the others.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/result.h"
#include "runtime/gating.h"

namespace tenzro::runtime {

// (token index, slot) pairs of one expert, in token order.
using ExpertTokens = std::vector<std::pair<int, size_t>>;

// slot_of[t] = first slot of token t; slot_of[n_tok] = total slots.
std::vector<size_t> RoutingSlots(const std::vector<TokenRouting>& routing);

// out[t] = sum_k w_k * ys[slot_of[t] + k], in routing order.
void CombineRouted(const std::vector<TokenRouting>& routing, const std::vector<size_t>& slot_of, const float* ys,
                   int64_t n_embd, float* out);

// out[i] += shared[i] for i < n: the one place the routed sum and the shared
// expert meet (RunMoeBlock, CombineMoeBlock), so every executor adds them in
// the same order.
void AddShared(const float* shared, size_t n, float* out);

// CombineRouted, then AddShared (when `shared`, n_tok x n_embd, is not null):
// the dispatcher's combine for a caller that passes the shared rows.
void CombineMoeBlock(const std::vector<TokenRouting>& routing, const std::vector<size_t>& slot_of, const float* ys,
                     const float* shared, int64_t n_embd, float* out);

}  // namespace tenzro::runtime
