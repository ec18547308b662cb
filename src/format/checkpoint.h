// tenzro format: one view over a model checkpoint, GGUF or safetensors.
//
// Opens a single .gguf, a split GGUF set (any "-0000i-of-0000N.gguf" part), a
// .safetensors file, a sharded "model.safetensors.index.json", a directory
// holding either, or a file of any name that starts with the GGUF magic (a
// blob store data file). Tensor bytes are zero-copy views into mmap'ed files, valid
// for the Checkpoint's lifetime. Shapes are in ggml order: ne[0] is the
// fastest-varying dimension (a row); safetensors' PyTorch shapes are reversed.
//
// The MoE view understands llama.cpp names (blk.N.ffn_{gate,up,down}_exps,
// expert = ne[2]) and Hugging Face layouts: per-expert
// model.layers.N.mlp.experts.E.{gate,up,down}_proj.weight (Qwen3-MoE,
// Qwen3-Next, DeepSeek), Mixtral's block_sparse_moe.experts.E.w1/w3/w2
// (gate/up/down), and Qwen3.5's packed
// model.language_model.layers.N.mlp.experts.gate_up_proj [E, 2I, H] (first I
// rows gate) and ...experts.down_proj [E, H, I].
//
// Thread-safety: immutable after Open; all const methods may be called
// concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/bytes.h"
#include "core/result.h"
#include "quant/types.h"

namespace tenzro::format {

enum class CheckpointFormat : uint8_t { kGguf, kSafetensors };
enum class Projection : uint8_t { kGate = 0, kUp = 1, kDown = 2 };
inline constexpr Projection kProjections[] = {Projection::kGate, Projection::kUp, Projection::kDown};
std::string_view ProjectionName(Projection p);  // "gate", "up", "down"

struct TensorRef {
  std::string name;
  quant::GgmlType type;
  std::vector<int64_t> ne;  // ggml order, ne[0] = row length
  std::string file;         // path of the file holding the bytes
  uint64_t file_offset = 0; // absolute offset of the first byte in `file`
  ByteSpan bytes;           // the tensor's bytes
  // The type as the file spells it: the ggml name for GGUF ("q4_K"), the
  // safetensors dtype otherwise ("BF16", "F8_E4M3"). Safetensors dtypes
  // without a ggml twin (U8, BOOL, U16..U64, F8_*) get the same-width ggml
  // integer type in `type` (I8/I16/I32/I64); only `dtype` tells the truth.
  std::string dtype;
};

// One expert's projection: `rows` rows of `row_len` values, contiguous.
struct ExpertSlab {
  std::string tensor;       // the tensor it was cut from
  std::string file;
  quant::GgmlType type;
  int64_t row_len = 0;      // ggml ne[0] of the projection
  int64_t rows = 0;         // ggml ne[1] of the projection
  uint64_t file_offset = 0; // absolute offset in `file`
  ByteSpan bytes;           // rows * RowBytes(type, row_len) bytes
};

class Checkpoint {
 public:
  // Opens and fully validates the checkpoint. Errors name the file and field.
  static Result<std::unique_ptr<Checkpoint>> Open(const std::string& path);
  virtual ~Checkpoint() = default;

  virtual CheckpointFormat format() const = 0;
  virtual const std::vector<std::string>& files() const = 0;
  virtual const std::vector<TensorRef>& tensors() const = 0;
  virtual const TensorRef* FindTensor(std::string_view name) const = 0;

  // Metadata: GGUF key/values, or for safetensors the Hugging Face
  // config.json beside the weights (its keys; nested text_config keys also
  // answer unprefixed) plus __metadata__ strings. nullopt when absent or of
  // another kind.
  virtual std::optional<std::string> GetString(std::string_view key) const = 0;
  virtual std::optional<int64_t> GetInt(std::string_view key) const = 0;  // any integer or bool
  virtual std::optional<double> GetFloat(std::string_view key) const = 0; // any number
  virtual std::optional<std::vector<int64_t>> GetIntArray(std::string_view key) const = 0;
  // general.architecture (GGUF) or model_type (HF config); "" if unknown.
  virtual std::string architecture() const = 0;
  // Every metadata key (GGUF keys; config.json top-level keys and
  // __metadata__ keys), sorted, for dumps. Default: none.
  virtual std::vector<std::string> MetadataKeys() const { return {}; }

  // --- MoE view ---
  // Number of transformer layers found (max block index + 1).
  virtual int n_layers() const = 0;
  // Experts in `layer` (0 when the layer has no expert tensors).
  virtual int n_experts(int layer) const = 0;
  // kNotFound naming layer/expert when out of range or absent.
  virtual Result<ExpertSlab> Expert(int layer, int expert, Projection p) const = 0;
  // The router [n_expert rows of n_embd]: blk.N.ffn_gate_inp / mlp.gate.weight.
  virtual Result<TensorRef> Router(int layer) const = 0;
  // The shared expert's projections and its sigmoid gate (ffn_*_shexp,
  // ffn_gate_inp_shexp; HF shared_expert.*, shared_expert_gate); kNotFound if none.
  virtual Result<ExpertSlab> SharedExpert(int layer, Projection p) const = 0;
  virtual Result<TensorRef> SharedExpertGate(int layer) const = 0;
};

}  // namespace tenzro::format
