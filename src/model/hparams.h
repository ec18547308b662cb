// tenzro model: the hyper-parameters of a whole model, as llama.cpp reads
// them from a GGUF (`<arch>.block_count`, `<arch>.attention.head_count`, ...).
//
// HParams is what the engine needs besides the tensors: widths, head counts,
// the kind of every layer, rotary and norm constants, the routing of the MoE
// block. An architecture file (arch_*.cc) fills it from a checkpoint's
// metadata; nothing here guesses from tensor shapes. Validate() checks the
// invariants every later computation relies on (positive sizes, widths that
// divide, layer kinds for every layer), so a hostile or broken file is
// refused at load time, never mid-forward.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "format/checkpoint.h"
#include "runtime/gating.h"

namespace tenzro::model {

enum class LayerKind : uint8_t {
  kAttention,       // softmax attention, GQA, Q/K RMSNorm, RoPE (qwen3moe)
  kGatedAttention,  // the same with a sigmoid output gate carried in attn_q (qwen35moe)
  kDeltaNet,        // gated delta net linear attention (qwen35moe)
};
const char* LayerKindName(LayerKind k);

struct HParams {
  std::string arch;            // general.architecture
  int n_layer = 0;
  int64_t n_embd = 0;
  int n_vocab = 0;             // rows of token_embd
  int n_ctx_train = 0;         // <arch>.context_length
  float rms_eps = 1e-6f;       // <arch>.attention.layer_norm_rms_epsilon

  // Softmax attention.
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;            // <arch>.attention.key_length (= value_length)
  int n_rot = 0;               // rotary dims per head (<arch>.rope.dimension_count)
  double rope_base = 10000.0;  // <arch>.rope.freq_base

  // Gated delta net (linear attention).
  int ssm_conv_kernel = 0;     // ssm.conv_kernel
  int ssm_d_state = 0;         // ssm.state_size: key/query head width
  int ssm_n_k_heads = 0;       // ssm.group_count
  int ssm_n_v_heads = 0;       // ssm.time_step_rank
  int64_t ssm_d_inner = 0;     // ssm.inner_size = n_v_heads * value head width
  int full_attention_interval = 0;

  // MoE block.
  int n_expert = 0;
  int n_expert_used = 0;
  runtime::RoutingConfig routing;

  std::vector<LayerKind> layers;  // n_layer entries

  int ssm_d_v() const { return ssm_n_v_heads > 0 ? static_cast<int>(ssm_d_inner / ssm_n_v_heads) : 0; }
  // Channels through the causal conv: q | k | v.
  int64_t ssm_conv_channels() const { return 2LL * ssm_n_k_heads * ssm_d_state + ssm_d_inner; }
  bool has_kind(LayerKind k) const;

  // kInvalidArgument naming the first field that does not hold.
  Result<void> Validate() const;
};

// Metadata readers for architecture files: "<arch>.<key>", with the key
// named in the error. kNotFound when absent, kInvalidArgument when out of
// [lo, hi].
Result<int64_t> ArchInt(const format::Checkpoint& c, const std::string& arch, std::string_view key, int64_t lo,
                        int64_t hi);
Result<double> ArchFloat(const format::Checkpoint& c, const std::string& arch, std::string_view key);

}  // namespace tenzro::model
