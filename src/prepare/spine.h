// tenzro prepare: the spine blob — every tensor of a model except the routed
// experts (docs/formats/spine-gguf.md).
//
// A serving machine runs embeddings, attention/SSM, norms, routers, shared
// experts and the output head itself, and fetches routed experts from the
// swarm. The spine is a GGUF v3 file: all metadata key/values of the source
// GGUF copied verbatim in file order (split.* keys excepted; the tokenizer
// keys included), plus tenzro.spine = true, tenzro.model_id and
// tenzro.spine.quant; then every tensor that is not a routed expert
// (IsRoutedExpertTensor), in checkpoint order, byte for byte — or, with a
// quant preset, 2-D weight matrices requantized (IsRequantizable), everything
// else in its stored type. Same input and options give the same bytes, so the
// blob hash is reproducible anywhere.
//
// Safetensors checkpoints are refused (kUnsupported): their Hugging Face
// names would need converting to GGUF names first.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "blob/blob_store.h"
#include "core/bytes.h"
#include "core/result.h"
#include "format/checkpoint.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "prepare/prepare_job.h"
#include "quant/types.h"

namespace tenzro::prepare {

inline constexpr const char* kSpineKey = "tenzro.spine";              // bool, true
inline constexpr const char* kSpineModelIdKey = "tenzro.model_id";    // string
inline constexpr const char* kSpineQuantKey = "tenzro.spine.quant";   // string: "none" or the preset

// True for a routed-expert tensor: blk.<N>.<name containing "_exps">.<suffix>
// (ffn_{gate,up,down,gate_up}_exps.weight and their biases/scales).
// Shared experts (_shexp), routers (ffn_gate_inp*) and exp_probs_b are not.
bool IsRoutedExpertTensor(std::string_view name);

// True for a tensor a quant preset may convert: a 2-D ".weight" that is not a
// norm, a router (ffn_gate_inp*), or an SSM conv1d/dt/x tensor (the ones
// llama.cpp's quantizer keeps).
bool IsRequantizable(const format::TensorRef& t);

struct SpineOptions {
  std::string model_id{};
  // "" or "none": every tensor in its stored type. Otherwise a preset of
  // prepare/quant_plan.h with one type: f32, f16, bf16, q8_0, q4_k, q5_k,
  // q6_k (q4_k_m is an expert-FFN rule and is refused). A matrix whose row
  // length the target's block does not divide keeps its stored type.
  std::string quant{};
  int threads = 0;  // <= 0: all hardware threads
};

// A spine ready to write. The writer borrows tensor bytes from the
// checkpoint and from `owned`: both must outlive every Write/Serialize.
struct Spine {
  format::GgufWriter writer;
  std::vector<Bytes> owned;        // requantized tensors
  uint64_t kept_tensors = 0;
  uint64_t dropped_tensors = 0;    // routed experts
  uint64_t dropped_bytes = 0;      // their stored bytes
  uint64_t kept_source_bytes = 0;  // stored bytes of the kept tensors
  std::vector<std::string> converted;  // tensors requantized
};

// Builds the spine of `ckpt`, whose metadata comes from `gguf` (the GGUF
// holding the key/values: the checkpoint's single file or a split set's
// first part). kUnsupported for a safetensors checkpoint; kInvalidArgument
// for a bad quant name or empty model id; kNotFound if the checkpoint has no
// routed experts (nothing to split off: it is not an MoE model).
Result<Spine> BuildSpine(const format::Checkpoint& ckpt, const format::GgufFile& gguf, const SpineOptions& options);

struct SpineRequest {
  std::string model_id{};
  std::string checkpoint{};  // path resolved by the catalog
  std::string quant{};       // as SpineOptions::quant
  int threads = 0;

  nlohmann::json ToJson() const;
  // kInvalidArgument naming the field.
  static Result<SpineRequest> FromJson(const nlohmann::json& j);
};

// Opens the checkpoint, builds its spine, writes it to a staging file in the
// store's directory and publishes it (atomically; nothing partial is left
// visible). Returns {"model_id", "checkpoint", "architecture", "uri", "hash",
// "bytes", "checkpoint_bytes", "expert_bytes", "tensors", "dropped_tensors",
// "quant", "converted"}. Progress: (0, 3) opened, (1, 3) built, (2, 3)
// written, (3, 3) published.
Result<nlohmann::json> RunPrepareDense(const SpineRequest& req, blob::BlobStore& store, const ProgressFn& progress);

}  // namespace tenzro::prepare
