// tenzro format: the expert mini-GGUF (docs/formats/expert-gguf.md).
//
// Encodes one expert (gate/up/down projections) or one layer's gate (router,
// optional selection bias, optional shared expert and its sigmoid gate) as a
// small deterministic GGUF v3 image, and decodes such an image back with full
// validation (kind, version, shapes against the metadata, sizes against the
// ggml types). The encoded bytes depend only on the weights and identity, so
// the blob hash of an expert is reproducible anywhere.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/bytes.h"
#include "core/result.h"
#include "format/checkpoint.h"
#include "format/gguf_reader.h"
#include "quant/types.h"

namespace tenzro::format {

inline constexpr uint32_t kExpertGgufVersion = 1;
inline constexpr const char* kKindExpert = "tenzro.expert";
inline constexpr const char* kKindGate = "tenzro.gate";

// One 2-D ggml matrix: `rows` rows of `row_len` values of `type`.
struct Matrix {
  quant::GgmlType type = quant::GgmlType::F32;
  int64_t row_len = 0;
  int64_t rows = 0;
  ByteSpan bytes;  // borrowed (encode) or a view into the decoded image
};

struct ExpertIdentity {
  std::string architecture;
  std::string model_id;
  int layer = 0;
  int expert = 0;      // experts only
  std::string quant;   // plan name (q4_k_m, f32, custom...)
};

// gate/up: {n_embd, n_ff}; down: {n_ff, n_embd}. Indexed by Projection.
struct ExpertTensors {
  std::array<Matrix, 3> proj;
  int64_t n_embd() const { return proj[0].row_len; }
  int64_t n_ff() const { return proj[0].rows; }
};

struct GateTensors {
  Matrix router;                        // {n_embd, n_expert}
  std::optional<Matrix> bias;           // {n_expert} F32 (as 1 row)
  std::optional<ExpertTensors> shared;  // shared expert
  std::optional<Matrix> shared_gate;    // {n_embd} (as 1 row)
  int n_expert_used = 0;
};

// Checks that the three projections form an FFN (shapes agree, byte sizes
// match their types). kInvalidArgument naming the projection.
Result<void> ValidateExpertTensors(const ExpertTensors& t, std::string_view what);

Result<Bytes> EncodeExpertGguf(const ExpertIdentity& id, const ExpertTensors& t);
Result<Bytes> EncodeGateGguf(const ExpertIdentity& id, const GateTensors& g);

// A decoded mini-GGUF. Tensor views point into `image`, which the struct
// keeps alive (owned bytes or a mapped file).
struct DecodedExpertFile {
  std::string kind;  // kKindExpert or kKindGate
  ExpertIdentity id;
  ExpertTensors expert;            // kind == expert
  GateTensors gate;                // kind == gate
  std::shared_ptr<const void> owner;  // keeps the bytes alive
  std::unique_ptr<GgufFile> file;
};

// Decodes `data` (kept alive by `owner`, may be null if the caller keeps it).
// kCorruption for malformed files; kUnsupported for a newer format_version.
Result<DecodedExpertFile> DecodeExpertGguf(ByteSpan data, std::shared_ptr<const void> owner, std::string name);

}  // namespace tenzro::format
