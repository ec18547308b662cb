// tenzro runtime: routed experts computed on this node (moe_block.h's local
// RoutedExpertRunner).
//
// LocalExperts::Run groups the (token, k) pairs per expert, runs every
// expert once on the batch of its tokens (experts in ascending id, tokens in
// token order) into a per-(token, k) slot buffer, and sums each token's slots
// in routing order (CombineRouted). Subclasses only say where an expert's
// weights are: InProcessExperts (below: weights in memory) and CachedExperts
// (cached_moe.h: pinned from the expert cache). With a wire dtype set
// (set_wire; default f32: nothing rounded) each expert's input rows and
// output rows are rounded through it (wire_rows.h RoundWireRows), as a
// distributed forward's exec frames round them, so the all-local block is bit
// for bit the distributed one per wire dtype. One Run at a time per object.
#pragma once

#include <map>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "runtime/expert_ffn.h"
#include "runtime/moe_block.h"
#include "runtime/routed_batches.h"
#include "runtime/wire_rows.h"

namespace tenzro::runtime {

class LocalExperts : public RoutedExpertRunner {
 public:
  explicit LocalExperts(ThreadPool* pool) : pool_(pool) {}
  // kInvalidArgument (before any expert runs) when rows of n_embd cannot
  // travel as the wire dtype (q8_0: n_embd % 32 != 0).
  Result<void> Run(const std::vector<TokenRouting>& routing, const float* x, int64_t n_embd, float* out) final;
  void set_wire(WireDtype t) { wire_ = t; }

 protected:
  // Token t is routed to expert e: an error stops the run (while grouping).
  virtual Result<void> CheckChoice(int t, int e) = 0;
  // Every expert of the run is known (ascending, with its tokens): an error
  // stops the run before any expert is computed.
  virtual Result<void> Prepare(const std::map<int, ExpertTokens>& by_expert) { return Ok(); }
  // Runs expert e on its tokens: RunBatch with its weights.
  virtual Result<void> RunExpert(int e, const ExpertTokens& toks, const float* x, int64_t n_embd, float* ys) = 0;
  // Expert e (weights w) on the rows of x named by toks, each output row to
  // ys[slot * n_embd]. kInvalidArgument when w's n_embd differs.
  Result<void> RunBatch(const ExpertWeights& w, int e, const ExpertTokens& toks, const float* x, int64_t n_embd,
                        float* ys);

 private:
  ThreadPool* pool_;
  WireDtype wire_ = WireDtype::kF32;
  std::vector<float> xb_, yb_;  // gather / scatter scratch, reused across experts
};

// Experts whose weights are in memory, indexed by expert id; a null entry (or
// an id out of range) is an expert this node does not hold: kNotFound naming
// the token. `experts` must outlive the runner.
class InProcessExperts : public LocalExperts {
 public:
  InProcessExperts(const std::vector<const ExpertWeights*>& experts, ThreadPool* pool)
      : LocalExperts(pool), experts_(experts) {}

 protected:
  Result<void> CheckChoice(int t, int e) override;
  Result<void> RunExpert(int e, const ExpertTokens& toks, const float* x, int64_t n_embd, float* ys) override;

 private:
  const std::vector<const ExpertWeights*>& experts_;
};

}  // namespace tenzro::runtime
