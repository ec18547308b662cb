// tenzro runtime: the steps every MoE block computation shares, wherever its
// experts run (moe_block.cc with weights at hand, cached_moe.cc over the
// expert cache, dispatch/forward.cc with remote holders — which the engine
// reaches through model::LocalMoeExecutor and node::SwarmMoeExecutor):
//   1. per expert, gather its tokens, run ExpertFfn once on the batch and
//      scatter the rows into a per-(token, k) slot buffer;
//   2. sum each token's slots in routing order (k = 0, 1, ...), then add the
//      shared expert's row (CombineMoeBlock).
// Keeping both here keeps every path bit-identical to the others.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "runtime/expert_ffn.h"
#include "runtime/gating.h"

namespace tenzro::runtime {

// (token index, slot) pairs of one expert, in token order.
using ExpertTokens = std::vector<std::pair<int, size_t>>;

// slot_of[t] = first slot of token t; slot_of[n_tok] = total slots.
std::vector<size_t> RoutingSlots(const std::vector<TokenRouting>& routing);

// Runs expert `e` (weights `w`) on the rows of x named by `toks` and writes
// each output row to ys[slot * n_embd]. `xb`/`yb` are scratch buffers reused
// across calls. kInvalidArgument when w's n_embd differs.
Result<void> RunExpertBatch(const ExpertWeights& w, int e, const ExpertTokens& toks, const float* x, int64_t n_embd,
                            float* ys, ThreadPool* pool, std::vector<float>& xb, std::vector<float>& yb);

// out[t] = sum_k w_k * ys[slot_of[t] + k], in routing order.
void CombineRouted(const std::vector<TokenRouting>& routing, const std::vector<size_t>& slot_of, const float* ys,
                   int64_t n_embd, float* out);

// The block's output: CombineRouted, then out[t] += shared[t] (when
// `shared`, n_tok x n_embd, is not null). The one place the routed sum and
// the shared expert meet, so every executor adds them in the same order.
void CombineMoeBlock(const std::vector<TokenRouting>& routing, const std::vector<size_t>& slot_of, const float* ys,
                     const float* shared, int64_t n_embd, float* out);

}  // namespace tenzro::runtime
