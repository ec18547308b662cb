// tenzro runtime: the MoE router (gating network) and top-k expert selection.
//
//   logits[t] = W_router · x[t] (+ bias)      W_router: n_expert rows x n_embd
//
// then one of three selection rules (RoutingKind):
//   kSoftmaxTopK   Qwen2/3/3.5-MoE: p = softmax(logits) over all experts,
//                  take the k largest p, weights = p (renormalised over the k
//                  when norm_topk_prob).
//   kSigmoidGroupTopK  DeepSeek-V3: s = sigmoid(logits); choice score
//                  b = s + selection_bias (e_score_correction_bias); experts
//                  form n_group equal groups, a group scores the sum of its
//                  two largest b, only the topk_group best groups compete;
//                  take the k largest b; weights = s (unbiased), renormalised
//                  when norm_topk_prob, times routed_scaling_factor.
//   kTopKSoftmax   Mixtral / gpt-oss: take the k largest logits, weights =
//                  softmax over those k.
// Ties always go to the lower expert index, so routing is deterministic.
// Selections come out in decreasing score order. Probabilities are computed
// in double from the float logits.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "runtime/weight_matrix.h"

namespace tenzro::runtime {

enum class RoutingKind : uint8_t { kSoftmaxTopK, kSigmoidGroupTopK, kTopKSoftmax };

struct RoutingConfig {
  RoutingKind kind = RoutingKind::kSoftmaxTopK;
  int top_k = 8;                       // experts per token (expert_used_count)
  bool norm_topk_prob = true;          // renormalise the k weights to sum 1
  int n_group = 1;                     // kSigmoidGroupTopK only
  int topk_group = 1;                  // kSigmoidGroupTopK only
  float routed_scaling_factor = 1.0f;  // kSigmoidGroupTopK only
};

struct RouterWeights {
  WeightMatrix w;                          // n_expert rows x n_embd; F32, F16 or BF16 (any compute type works)
  std::vector<float> logit_bias;           // empty or n_expert: added to the logits (gpt-oss)
  std::vector<float> selection_bias;       // empty or n_expert: DeepSeek e_score_correction_bias

  int n_expert() const { return static_cast<int>(w.rows); }
  int64_t n_embd() const { return w.row_len; }
  Result<void> Validate() const;
};

struct ExpertChoice {
  int expert = 0;
  float weight = 0.0f;
};

struct TokenRouting {
  std::vector<ExpertChoice> experts;  // top_k entries, best first
};

// Routes n_tok tokens (x: n_tok x n_embd floats, token-major).
// kInvalidArgument for a bad config (top_k outside [1, n_expert], groups
// that do not divide the experts, topk_group * group size < top_k, ...) or
// router weights that fail validation.
Result<std::vector<TokenRouting>> Route(const RouterWeights& router, const RoutingConfig& config, const float* x,
                                        int n_tok, ThreadPool* pool = nullptr);

// The selection rule alone, on precomputed logits (n_expert floats).
Result<TokenRouting> SelectExperts(const float* logits, int n_expert, const RoutingConfig& config,
                                   const std::vector<float>& selection_bias = {});

}  // namespace tenzro::runtime
