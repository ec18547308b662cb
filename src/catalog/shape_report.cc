#include "catalog/shape_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "catalog/shape_json.h"
#include "core/bytes.h"

namespace tenzro::catalog {

using nlohmann::json;

namespace {

constexpr std::string_view kDenseMessage = "dense model: no expert tensors";

std::string RoutingText(const ModelShape& s) {
  const Routing& r = s.routing;
  std::string out(RoutingKindName(r.kind));
  std::vector<std::string> extra;
  if (r.kind == RoutingKind::kSigmoidGroupTopk && r.n_group > 1)
    extra.push_back(fmt::format("{} groups, top-{} groups", r.n_group, r.topk_group));
  if (r.selection_bias) extra.push_back("selection bias");
  if (r.routed_scaling_factor != 1.0) extra.push_back(fmt::format("scale {}", r.routed_scaling_factor));
  if (!extra.empty()) out += fmt::format(" ({})", fmt::join(extra, ", "));
  return out;
}

std::string BytesText(uint64_t b) { return fmt::format("{} ({})", b, tenzro::FormatBytes(b)); }

std::string SourceText(const ResolvedShape& r) {
  switch (r.source) {
    case ShapeSource::kCheckpoint: return "read from checkpoint " + r.shape.checkpoint->path;
    case ShapeSource::kCatalog:
      return "catalog entry" + (r.shape.checkpoint ? ", checkpoint " + r.shape.checkpoint->path : std::string());
    case ShapeSource::kBuiltin: return "built-in table";
    case ShapeSource::kManifest: return "trusted model manifest";
  }
  return "";
}

json CheckpointJson(const ModelShape& s) {
  if (!s.checkpoint) return nullptr;
  return {{"path", s.checkpoint->path},
          {"format", s.checkpoint->format},
          {"total_tensor_bytes", s.checkpoint->total_tensor_bytes},
          {"expert_tensor_bytes", s.checkpoint->expert_tensor_bytes}};
}

}  // namespace

Result<ShapeReport> BuildShapeReport(ResolvedShape resolved, std::optional<uint64_t> budget) {
  ShapeReport r;
  TENZRO_TRY(r.formats, BytesByFormat(resolved.shape, budget));
  r.share = ExpertsShare(resolved.shape);
  r.budget = budget;
  r.resolved = std::move(resolved);
  return r;
}

std::string ShapeReportText(const ShapeReport& r) {
  const ModelShape& s = r.resolved.shape;
  std::string o;
  auto line = [&](std::string_view k, const std::string& v) { o += fmt::format("{:<20}{}\n", k, v); };
  line("model", fmt::format("{} ({})", s.id, SourceText(r.resolved)));
  line("architecture", s.architecture);
  line("layers", DescribeLayout(s));
  line("experts per layer", std::to_string(s.n_expert));
  line("active per token", fmt::format("{} (routing {})", s.n_expert_used, RoutingText(s)));
  line("shared experts", s.n_shared_expert == 0
                             ? std::string("none")
                             : fmt::format("{} (FFN width {}{})", s.n_shared_expert, s.n_ff_shexp,
                                           s.shared_expert_gated ? ", sigmoid-gated" : ""));
  line("n_embd", std::to_string(s.n_embd));
  line("expert FFN width", std::to_string(s.n_ff_exp));
  if (s.n_ff_dense > 0) line("dense FFN width", std::to_string(s.n_ff_dense));
  line("total experts", fmt::format("{} ({} MoE layers)", s.total_experts(), s.n_moe_layers()));

  if (s.checkpoint) {
    o += "stored expert types (from the checkpoint):\n";
    // Consecutive layers with the same types collapse into one line.
    size_t i = 0;
    while (i < s.layers.size()) {
      const LayerShape& l = s.layers[i];
      size_t j = i + 1;
      while (j < s.layers.size() && s.layers[j].moe == l.moe && s.layers[j].gate_type == l.gate_type &&
             s.layers[j].up_type == l.up_type && s.layers[j].down_type == l.down_type &&
             s.layers[j].stored_expert_bytes == l.stored_expert_bytes)
        ++j;
      std::string range = j - i == 1 ? fmt::format("layer {}", i) : fmt::format("layers {}-{}", i, j - 1);
      if (!l.moe || !l.gate_type) {
        o += fmt::format("  {:<14}dense\n", range);
      } else {
        o += fmt::format("  {:<14}gate {} up {} down {}: {} bytes per expert\n", range, quant::TypeName(*l.gate_type),
                         quant::TypeName(*l.up_type), quant::TypeName(*l.down_type), l.stored_expert_bytes);
      }
      i = j;
    }
  }

  o += "bytes of one expert (gate + up + down) by format:\n";
  std::string fit_head = r.budget ? fmt::format("fit in {}", tenzro::FormatBytes(*r.budget)) : "";
  std::string head = fmt::format("  {:<8}{:<28}{:<28}{}", "format", "per expert", "all experts", fit_head);
  while (!head.empty() && head.back() == ' ') head.pop_back();
  o += head + "\n";
  for (const FormatBytes& f : r.formats) {
    if (!f.applicable) {
      o += fmt::format("  {:<8}n/a: {}\n", f.format, f.not_applicable);
      continue;
    }
    std::string per = BytesText(f.bytes_max);
    if (f.bytes_min != f.bytes_max) per = fmt::format("{} / {}", f.bytes_min, f.bytes_max);
    std::string fit;
    if (f.fit_any_layer) {
      fit = f.fit_any_layer == f.fit_best_layer ? std::to_string(*f.fit_any_layer)
                                                : fmt::format("{} ({} on Q4_K-down layers)", *f.fit_any_layer,
                                                              *f.fit_best_layer);
    }
    std::string row = fmt::format("  {:<8}{:<28}{:<28}{}", f.format, per, tenzro::FormatBytes(f.total_bytes), fit);
    while (!row.empty() && row.back() == ' ') row.pop_back();
    o += row + "\n";
    if (f.bytes_min != f.bytes_max)
      o += fmt::format("  {:<8}(down Q6_K on {} of {} MoE layers: {} bytes; else Q4_K: {} bytes)\n", "",
                       f.layers_at_max, s.n_moe_layers(), f.bytes_max, f.bytes_min);
  }
  if (r.share) {
    if (r.share->estimated) {
      line("held in experts", fmt::format("{:.1f}% of the parameters (estimated: {} expert parameters of a nominal {})",
                                          100.0 * r.share->share, r.share->expert_bytes, r.share->total));
    } else {
      line("held in experts", fmt::format("{} of {} tensor bytes ({:.1f}%)", BytesText(r.share->expert_bytes),
                                          BytesText(r.share->total), 100.0 * r.share->share));
    }
  }
  return o;
}

json ShapeReportJson(const ShapeReport& r) {
  const ModelShape& s = r.resolved.shape;
  json formats = json::array();
  for (const FormatBytes& f : r.formats) {
    json o = {{"format", f.format}, {"applicable", f.applicable}};
    if (!f.applicable) {
      o["not_applicable"] = f.not_applicable;
      o["bytes_min"] = o["bytes_max"] = o["total_bytes"] = nullptr;
      o["layers_at_max"] = 0;
    } else {
      o["not_applicable"] = nullptr;
      o["bytes_min"] = f.bytes_min;
      o["bytes_max"] = f.bytes_max;
      o["layers_at_max"] = f.layers_at_max;
      o["total_bytes"] = f.total_bytes;
    }
    o["fit_any_layer"] = f.fit_any_layer ? json(*f.fit_any_layer) : json(nullptr);
    o["fit_best_layer"] = f.fit_best_layer ? json(*f.fit_best_layer) : json(nullptr);
    formats.push_back(std::move(o));
  }
  json share = nullptr;
  if (r.share)
    share = {{"experts", r.share->expert_bytes}, {"total", r.share->total},   {"share", r.share->share},
             {"estimated", r.share->estimated},  {"unit", r.share->estimated ? "parameters" : "bytes"},
             {"basis", r.share->basis}};
  return {{"schema_version", kShapeReportSchemaVersion},
          {"model", s.id},
          {"source", ShapeSourceName(r.resolved.source)},
          {"moe", true},
          {"layout", DescribeLayout(s)},
          {"moe_layers", s.n_moe_layers()},
          {"total_experts", s.total_experts()},
          {"budget_bytes", r.budget ? json(*r.budget) : json(nullptr)},
          {"expert_bytes", std::move(formats)},
          {"experts_share", std::move(share)},
          {"checkpoint", CheckpointJson(s)},
          {"shape", ShapeToJson(s)}};
}

std::string DenseReportText(const ModelShape& s) {
  std::string o;
  o += fmt::format("{:<20}{} (read from checkpoint {})\n", "model", s.id, s.checkpoint ? s.checkpoint->path : "");
  o += fmt::format("{:<20}{}\n", "architecture", s.architecture.empty() ? "unknown" : s.architecture);
  o += fmt::format("{:<20}{}\n", "layers", s.n_layer);
  o += std::string(kDenseMessage) + "\n";
  return o;
}

json DenseReportJson(const ModelShape& s) {
  return {{"schema_version", kShapeReportSchemaVersion},
          {"model", s.id},
          {"source", "checkpoint"},
          {"moe", false},
          {"message", kDenseMessage},
          {"architecture", s.architecture},
          {"n_layer", s.n_layer},
          {"n_embd", s.n_embd},
          {"checkpoint", CheckpointJson(s)}};
}

}  // namespace tenzro::catalog
