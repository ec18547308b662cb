#include "catalog/expert_bytes.h"

#include <algorithm>

#include "core/bytes.h"

namespace tenzro::catalog {
namespace {

constexpr std::string_view kQ4KM = "q4_k_m";

// Bytes of `rows` rows of `row_len` values of `type`, with our own message
// when the block does not divide the row.
Result<uint64_t> MatrixBytes(quant::GgmlType type, int64_t row_len, int64_t rows) {
  const quant::TypeTraits* t = quant::FindTraits(type);
  if (!t) return Error::InvalidArgument("unknown ggml type id {}", static_cast<uint32_t>(type));
  if (row_len <= 0 || rows <= 0) return Error::InvalidArgument("empty projection");
  if (row_len % t->block_elems != 0)
    return Error::InvalidArgument("row {} not a multiple of {}", row_len, t->block_elems);
  TENZRO_TRY(uint64_t row, quant::RowBytes(type, row_len));
  uint64_t total;
  if (MulOverflow(row, static_cast<uint64_t>(rows), &total)) return Error::InvalidArgument("projection size overflows");
  return total;
}

}  // namespace

const std::vector<std::string>& ReportFormats() {
  static const std::vector<std::string> v = {"f32", "f16", "bf16", "q8_0", "q6_k",
                                             "q5_k", "q4_k", "mxfp4", "q4_k_m"};
  return v;
}

Result<uint64_t> ExpertBytes(int64_t n_embd, int64_t n_ff, const ProjectionTypes& t) {
  TENZRO_TRY(uint64_t gate, MatrixBytes(t.gate, n_embd, n_ff));
  TENZRO_TRY(uint64_t up, MatrixBytes(t.up, n_embd, n_ff));
  TENZRO_TRY(uint64_t down, MatrixBytes(t.down, n_ff, n_embd));
  return gate + up + down;
}

Result<ProjectionTypes> FormatTypes(const ModelShape& s, std::string_view format, int layer) {
  if (format == kQ4KM) {
    quant::GgmlType down = layer >= 0 && layer < static_cast<int>(s.layers.size())
                               ? s.layers[layer].q4_k_m_down_type
                               : Q4KMDownType(layer, s.n_layer);
    return ProjectionTypes{quant::GgmlType::Q4_K, quant::GgmlType::Q4_K, down};
  }
  const quant::TypeTraits* t = quant::FindTraitsByName(format);
  if (!t) return Error::InvalidArgument("unknown format '{}'", format);
  return ProjectionTypes{t->type, t->type, t->type};
}

Result<FormatBytes> BytesForFormat(const ModelShape& s, std::string_view format, std::optional<uint64_t> budget) {
  if (budget && *budget == 0) return Error::InvalidArgument("--budget must be greater than 0");
  FormatBytes fb;
  fb.format = std::string(format);
  bool first = true;
  for (int i = 0; i < static_cast<int>(s.layers.size()); ++i) {
    const LayerShape& l = s.layers[i];
    if (!l.moe) continue;
    TENZRO_TRY(ProjectionTypes types, FormatTypes(s, format, i));
    Result<uint64_t> b = ExpertBytes(s.n_embd, s.n_ff_exp, types);
    if (!b) {
      if (b.error().code() != ErrorCode::kInvalidArgument) return b.error();
      fb.applicable = false;
      fb.not_applicable = b.error().message();
      fb.bytes_min = fb.bytes_max = fb.total_bytes = 0;
      fb.layers_at_max = 0;
      return fb;
    }
    if (first || *b < fb.bytes_min) fb.bytes_min = *b;
    if (first || *b > fb.bytes_max) { fb.bytes_max = *b; fb.layers_at_max = 0; }
    if (*b == fb.bytes_max) ++fb.layers_at_max;
    first = false;
    uint64_t layer_total;
    if (MulOverflow(*b, static_cast<uint64_t>(l.n_expert), &layer_total) ||
        AddOverflow(fb.total_bytes, layer_total, &fb.total_bytes))
      return Error::InvalidArgument("model '{}': expert bytes overflow", s.id);
  }
  if (budget && fb.bytes_max > 0) {
    fb.fit_any_layer = *budget / fb.bytes_max;
    fb.fit_best_layer = *budget / fb.bytes_min;
  }
  return fb;
}

Result<std::vector<FormatBytes>> BytesByFormat(const ModelShape& s, std::optional<uint64_t> budget) {
  std::vector<FormatBytes> out;
  for (const std::string& f : ReportFormats()) {
    TENZRO_TRY(FormatBytes fb, BytesForFormat(s, f, budget));
    out.push_back(std::move(fb));
  }
  return out;
}

uint64_t ExpertParams(const ModelShape& s) {
  return 3ull * static_cast<uint64_t>(s.n_embd) * static_cast<uint64_t>(s.n_ff_exp);
}

std::optional<ExpertShare> ExpertsShare(const ModelShape& s) {
  ExpertShare r;
  if (s.checkpoint && s.checkpoint->total_tensor_bytes > 0) {
    r.expert_bytes = s.checkpoint->expert_tensor_bytes;
    r.total = s.checkpoint->total_tensor_bytes;
    r.basis = "checkpoint tensors";
  } else if (s.nominal_params > 0) {
    r.expert_bytes = ExpertParams(s) * s.total_experts();
    r.total = s.nominal_params;
    r.estimated = true;
    r.basis = "nominal parameter count";
    if (r.expert_bytes > r.total) return std::nullopt;  // table inconsistent: say nothing
  } else {
    return std::nullopt;
  }
  r.share = static_cast<double>(r.expert_bytes) / static_cast<double>(r.total);
  return r;
}

}  // namespace tenzro::catalog
