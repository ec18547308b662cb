// tenzro model: the table of architectures the engine runs.
//
// An architecture is one file (arch_<name>.cc) that knows its GGUF metadata
// keys and tensor names (llama.cpp's), and fills HParams and ModelWeights
// from a checkpoint. The forward pass is shared: it is built from the layer
// kinds of hparams.h (softmax attention, gated attention, gated delta net)
// and the MoE block, so a new architecture made of those parts is one new
// file plus one line in arch.cc; a new kind of layer adds a layer file
// (docs/engine.md, "Adding an architecture").
#pragma once

#include <string_view>
#include <vector>

#include "core/result.h"
#include "format/checkpoint.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace tenzro::model {

struct ArchDef {
  std::string_view name;  // general.architecture
  // Reads and validates the hyper-parameters (n_vocab from token_embd).
  Result<HParams> (*read_hparams)(const format::Checkpoint& c);
  // Views the dense weights; shapes checked against `hp`.
  Result<ModelWeights> (*load_weights)(const format::Checkpoint& c, const HParams& hp);
};

// nullptr when the architecture is not supported.
const ArchDef* FindArch(std::string_view name);
// Names of every supported architecture, for error messages.
std::vector<std::string_view> ArchNames();

// The definitions (arch_*.cc).
extern const ArchDef kQwen35Moe;
extern const ArchDef kQwen3Moe;

// Shared by architecture files: token_embd, output_norm, output (tied to
// token_embd when absent).
Result<void> LoadHeadAndEmbeddings(const format::Checkpoint& c, const HParams& hp, ModelWeights& w);
// Softmax attention of layer `il` (attn_q, attn_k, attn_v, attn_output,
// attn_q_norm, attn_k_norm); `gated` doubles attn_q's rows.
Result<AttentionWeights> LoadAttention(const format::Checkpoint& c, const HParams& hp, int il, bool gated);
// The keys every MoE transformer here shares: block_count, embedding_length,
// context_length, attention head counts and widths (key_length defaults to
// n_embd / head_count, value_length must equal it), rope dimension_count
// (default: the head width) and freq_base (default 10000), the norm epsilon,
// expert_count / expert_used_count with softmax top-k renormalised routing,
// and n_vocab. Layer kinds and the rest are the architecture's.
Result<void> ReadCommonHParams(const format::Checkpoint& c, HParams& hp);
// n_vocab from token_embd's rows; kNotFound / kInvalidArgument.
Result<int> VocabFromEmbeddings(const format::Checkpoint& c, int64_t n_embd);

}  // namespace tenzro::model
