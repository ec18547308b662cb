// tenzro runtime: a whole MoE feed-forward block computed on this node.
//
//   out[t] = sum_k w_k * FFN_{e_k}(x[t])  (+ sigmoid-gated shared expert)
//
// with (e_k, w_k) from gating.h. Tokens are grouped by expert so each expert
// runs once, on the batch of its tokens (expert_ffn.h); per-token sums are
// then taken in routing order (k = 0, 1, ...), so the output does not depend
// on the grouping or the thread count. x / out: n_tok x n_embd floats,
// token-major, not aliased.
#pragma once

#include <optional>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "runtime/expert_ffn.h"
#include "runtime/gating.h"
#include "runtime/weight_matrix.h"

namespace tenzro::runtime {

struct MoeBlockWeights {
  RouterWeights router;
  RoutingConfig routing;
  // Indexed by expert id (size n_expert); not owned. A null entry is an
  // expert this node does not hold: routing a token to it is kNotFound.
  std::vector<const ExpertWeights*> experts;
  std::optional<SharedExpertWeights> shared;
};

struct MoeBlockOptions {
  bool include_shared = true;  // add the shared expert when present
};

// Routes x, runs the experts, writes out; returns the routing used.
// Errors: kInvalidArgument for mismatched shapes, kNotFound for a routed
// expert with a null entry.
Result<std::vector<TokenRouting>> ComputeMoeBlock(const MoeBlockWeights& w, const float* x, int n_tok, float* out,
                                                  ThreadPool* pool = nullptr, const MoeBlockOptions& options = {});

// The routed part alone, for a routing decided elsewhere: out[t] =
// sum_k w_k * FFN_{e_k}(x[t]). experts[e] may be null for experts no token
// uses.
Result<void> ComputeRoutedExperts(const std::vector<const ExpertWeights*>& experts,
                                  const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd,
                                  float* out, ThreadPool* pool = nullptr);

}  // namespace tenzro::runtime
