// tenzro runtime: one expert's SwiGLU feed-forward network on a batch.
//
//   y[t] = down · (silu(gate · x[t]) ⊙ (up · x[t]))          (routed expert)
//   y[t] = sigmoid(g_inp · x[t]) * FFN_shexp(x[t])            (shared expert)
//
// x holds n_tok tokens of n_embd floats, y receives n_tok x n_embd floats,
// both token-major (may not alias). The dispatch layer calls ExpertFfn on the
// batch of tokens routed to one expert; the expert cache supplies the
// ExpertWeights. Work is split over `pool` (may be null); results are
// bit-identical for any pool size. Thread-safe: concurrent calls may share
// weights.
#pragma once

#include <optional>

#include "core/result.h"
#include "core/thread_pool.h"
#include "runtime/kernels.h"
#include "runtime/weight_matrix.h"

namespace tenzro::runtime {

// Errors: kInvalidArgument from ExpertWeights::Validate() or n_tok < 0.
Result<void> ExpertFfn(const ExpertWeights& w, const float* x, int n_tok, float* y, ThreadPool* pool = nullptr);
// With a chosen ISA (tests); kInvalidArgument when the CPU lacks it.
Result<void> ExpertFfnIsa(KernelIsa isa, const ExpertWeights& w, const float* x, int n_tok, float* y,
                          ThreadPool* pool = nullptr);

// A shared expert: an FFN plus an optional sigmoid gate (one row of n_embd,
// llama.cpp's ffn_gate_inp_shexp). Without gate the FFN output is used as is.
struct SharedExpertWeights {
  ExpertWeights ffn;
  std::optional<WeightMatrix> gate_inp;

  Result<void> Validate() const;
};

// y = sigmoid(gate_inp · x) * FFN(x) per token.
Result<void> SharedExpertFfn(const SharedExpertWeights& w, const float* x, int n_tok, float* y,
                             ThreadPool* pool = nullptr);

}  // namespace tenzro::runtime
