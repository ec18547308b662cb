// tenzro model: where the engine sends a layer's MoE block.
//
// The engine computes the dense spine itself and hands each layer's
// normalised hidden states to a MoeExecutor, which returns the block's
// output (routed experts combined by their router weights, plus the shared
// expert). Both executors run the one block, runtime::RunMoeBlock
// (runtime/moe_block.h), and differ only in its routed-expert runner:
// LocalMoeExecutor runs everything in-process on the checkpoint's own expert
// slabs (runtime::ComputeMoeBlock, InProcessExperts over zero-copy views into
// the mmap); node::SwarmMoeExecutor (node/swarm_moe_executor.h) runs the
// routed experts on the swarm, bit for bit equal when LocalMoeExecutor
// rounds through the same wire dtype (runtime/wire_rows.h) as the swarm's
// exec frames: f32 (exact), bf16, f16 or q8_0.
//
// Thread-safety: Run may be called from one thread at a time per executor.
#pragma once

#include <memory>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "format/checkpoint.h"
#include "model/hparams.h"
#include "runtime/moe_block.h"

namespace tenzro::model {

class MoeExecutor {
 public:
  virtual ~MoeExecutor() = default;
  // out[t] = MoE(x[t]) for n_tok tokens of n_embd floats (token-major, not
  // aliased). Errors: whatever the execution reports (kNotFound for an
  // expert nobody holds, kUnavailable for a swarm that cannot answer, ...).
  virtual Result<void> Run(int layer, const float* x, int n_tok, float* out) = 0;
};

class LocalMoeExecutor : public MoeExecutor {
 public:
  // Views every layer's router, experts and shared expert in `c` (which must
  // outlive the executor). kNotFound / kInvalidArgument naming the tensor.
  // `wire`: each routed expert's input and output rows are rounded through
  // it (f32: exact); kInvalidArgument when the model's n_embd cannot travel
  // as it (q8_0 needs a multiple of 32).
  static Result<std::unique_ptr<LocalMoeExecutor>> Create(const format::Checkpoint& c, const HParams& hp,
                                                          ThreadPool* pool,
                                                          runtime::WireDtype wire = runtime::WireDtype::kF32);
  Result<void> Run(int layer, const float* x, int n_tok, float* out) override;
  // Bytes of routed-expert weights viewed (all layers).
  uint64_t expert_bytes() const { return expert_bytes_; }

 private:
  struct Layer {
    std::vector<runtime::ExpertWeights> experts;
    runtime::MoeBlockWeights block;  // block.experts point into `experts`
  };
  std::vector<std::unique_ptr<Layer>> layers_;
  ThreadPool* pool_ = nullptr;
  runtime::WireDtype wire_ = runtime::WireDtype::kF32;
  uint64_t expert_bytes_ = 0;
};

// Builds one layer's router / experts / shared expert views from a
// checkpoint (also used by tests and the distributed path for the gate).
Result<runtime::RouterWeights> LoadRouter(const format::Checkpoint& c, const HParams& hp, int layer);
Result<std::optional<runtime::SharedExpertWeights>> LoadSharedExpert(const format::Checkpoint& c, int layer);
Result<runtime::ExpertWeights> LoadExpert(const format::Checkpoint& c, int layer, int expert);

}  // namespace tenzro::model
