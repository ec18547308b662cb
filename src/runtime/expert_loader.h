// tenzro runtime: turning expert and gate files into runtime weights.
//
// Two sources are understood:
//   * the expert mini-GGUF written by `tenzro moe prepare-experts`
//     (docs/formats/expert-gguf.md), any of its block formats;
//   * a safetensors file as Hugging Face checkpoints write it (docs/runtime.md):
//       expert: `*gate_proj.weight`, `*up_proj.weight`, `*down_proj.weight`
//               (any prefix) or bare `gate`, `up`, `down`;
//       gate:   `weight`, `gate.weight` or `*mlp.gate.weight` (router), and
//               optionally `*shared_expert.{gate,up,down}_proj.weight` plus
//               `*shared_expert_gate.weight` (Qwen's shared expert);
//     dtypes F32/F16/BF16, PyTorch shapes gate/up [n_ff, n_embd], down
//     [n_embd, n_ff], router [n_expert, n_embd].
// A safetensors source is converted to a mini-GGUF image in its own formats
// (no requantisation), so the node's cold tier holds one kind of file.
//
// Everything here is a pure function of its inputs apart from reading the
// named file; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/bytes.h"
#include "core/result.h"
#include "format/expert_gguf.h"
#include "runtime/expert_ffn.h"
#include "runtime/gating.h"
#include "runtime/weight_matrix.h"

namespace tenzro::runtime {

// What a file says about itself, for checks against the model's shape.
struct ExpertFileInfo {
  format::ExpertIdentity id;        // from the mini-GGUF (empty model_id for safetensors)
  int64_t n_embd = 0;
  int64_t n_ff = 0;
  quant::GgmlType types[3] = {};     // gate, up, down
  uint64_t bytes = 0;                // size of the mini-GGUF image
  std::string formats() const;       // "q4_K/q4_K/q6_K"
};

struct GateFileInfo {
  format::ExpertIdentity id;
  int64_t n_embd = 0;
  int n_expert = 0;
  int n_expert_used = 0;             // 0 when the file does not say (safetensors)
  quant::GgmlType router_type = quant::GgmlType::F32;
  bool has_selection_bias = false;
  int64_t n_ff_shexp = 0;            // 0: no shared expert
  bool shared_gated = false;
  std::string shared_formats;        // "q4_K/q4_K/q6_K" when there is a shared expert
  quant::GgmlType shared_gate_type = quant::GgmlType::F32;
  uint64_t bytes = 0;
  std::string formats() const;       // "router f32, shared q4_K/q4_K/q6_K, shared gate f32"
};

// An expert decoded and ready to compute. `weights` borrow from `image`.
struct WarmExpert {
  ExpertWeights weights;
  ExpertFileInfo info;
  std::shared_ptr<const Bytes> image;
  uint64_t bytes() const { return info.bytes; }
};

// A layer's gate decoded: router, optional selection bias, optional shared
// expert. `n_expert_used` is the file's top-k (0 when unknown).
struct GateWeights {
  RouterWeights router;
  std::optional<SharedExpertWeights> shared;
  GateFileInfo info;
  std::shared_ptr<const Bytes> image;
};

// True when `data` starts with the GGUF magic.
bool LooksLikeGguf(ByteSpan data);

// Decodes an expert mini-GGUF image (kept alive by the result). kCorruption
// for a malformed image, kInvalidArgument when it is a gate, kUnsupported for
// a projection format the kernels cannot multiply.
Result<std::shared_ptr<const WarmExpert>> DecodeWarmExpert(std::shared_ptr<const Bytes> image, std::string name);
Result<std::shared_ptr<const GateWeights>> DecodeGate(std::shared_ptr<const Bytes> image, std::string name);

// Reads the whole file into memory and decodes it (the cold -> warm step).
Result<std::shared_ptr<const WarmExpert>> LoadWarmExpert(const std::string& path);
Result<std::shared_ptr<const GateWeights>> LoadGate(const std::string& path);

// Header-only look at an expert mini-GGUF on disk (maps the file; reads the
// header pages only).
Result<ExpertFileInfo> InspectExpertFile(const std::string& path);

// Converts a safetensors expert / gate file into a mini-GGUF image with the
// given identity (id.expert is ignored for gates). `n_expert_used` goes into
// the gate's metadata (<= 0: unknown, min(8, n_expert) is written). kNotFound naming the tensor names tried; kInvalidArgument
// for ambiguous names, bad ranks or shapes that do not fit together;
// kUnsupported for other dtypes.
Result<Bytes> ExpertGgufFromSafetensors(const std::string& path, const format::ExpertIdentity& id);
Result<Bytes> GateGgufFromSafetensors(const std::string& path, const format::ExpertIdentity& id, int n_expert_used);

}  // namespace tenzro::runtime
