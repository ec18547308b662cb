// tenzro catalog: what one expert, and all of them, weigh in each format.
//
// An expert is gate [n_ff_exp rows x n_embd] + up [n_ff_exp x n_embd] +
// down [n_embd rows x n_ff_exp]; its bytes are the rows times
// quant::RowBytes of each projection's type. "q4_k_m" is llama.cpp's mix:
// gate/up Q4_K, down Q6_K on layers where UseMoreBits(i, n_layer), else
// Q4_K, so its size differs by layer. A format whose block does not divide a
// row length (k-quants on gpt-oss's 2880-wide rows) is reported as not
// applicable with the reason, never with an invented size.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/model_shape.h"
#include "core/result.h"
#include "quant/types.h"

namespace tenzro::catalog {

// Formats listed by reports, in order:
// f32, f16, bf16, q8_0, q6_k, q5_k, q4_k, mxfp4, q4_k_m.
const std::vector<std::string>& ReportFormats();

struct ProjectionTypes {
  quant::GgmlType gate, up, down;
};

// Bytes of one expert; kInvalidArgument "row N not a multiple of B" (B the
// block size of the type) when a row does not fit the type's blocks.
Result<uint64_t> ExpertBytes(int64_t n_embd, int64_t n_ff, const ProjectionTypes& t);

// The projection types of `format` ("q4_k", "bf16", ..., or "q4_k_m") on
// `layer`. kInvalidArgument for an unknown format name.
Result<ProjectionTypes> FormatTypes(const ModelShape& s, std::string_view format, int layer);

struct FormatBytes {
  std::string format;
  bool applicable = true;
  std::string not_applicable;   // reason when !applicable
  uint64_t bytes_min = 0;       // one expert, smallest over MoE layers
  uint64_t bytes_max = 0;       // one expert, largest over MoE layers
  int layers_at_max = 0;        // MoE layers whose expert is bytes_max (< all only for q4_k_m)
  uint64_t total_bytes = 0;     // every routed expert of the model
  // With a budget: experts that fit whatever layers they come from
  // (budget / bytes_max), and at best (budget / bytes_min).
  std::optional<uint64_t> fit_any_layer, fit_best_layer;
};

// One entry per ReportFormats() format. kInvalidArgument when budget == 0.
Result<std::vector<FormatBytes>> BytesByFormat(const ModelShape& s, std::optional<uint64_t> budget);
Result<FormatBytes> BytesForFormat(const ModelShape& s, std::string_view format, std::optional<uint64_t> budget);

// The routed experts' share of the model.
struct ExpertShare {
  uint64_t expert_bytes = 0;    // exact: bytes; estimated: parameters
  uint64_t total = 0;
  double share = 0;             // expert_bytes / total
  bool estimated = false;
  std::string basis;            // "checkpoint tensors" or "nominal parameter count"
};
// From the checkpoint facts when present; else estimated as expert
// parameters / nominal_params; nullopt when neither is known.
std::optional<ExpertShare> ExpertsShare(const ModelShape& s);

// Parameters of one expert: 3 * n_embd * n_ff_exp.
uint64_t ExpertParams(const ModelShape& s);

}  // namespace tenzro::catalog
