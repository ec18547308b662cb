#include "catalog/model_shape.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tenzro::catalog {

std::string_view AttentionKindName(AttentionKind k) {
  switch (k) {
    case AttentionKind::kFull: return "full";
    case AttentionKind::kLinear: return "linear";
    case AttentionKind::kSliding: return "sliding";
    case AttentionKind::kUnknown: break;
  }
  return "unknown";
}

std::optional<AttentionKind> ParseAttentionKind(std::string_view name) {
  for (AttentionKind k : {AttentionKind::kUnknown, AttentionKind::kFull, AttentionKind::kLinear,
                          AttentionKind::kSliding})
    if (AttentionKindName(k) == name) return k;
  return std::nullopt;
}

std::string_view RoutingKindName(RoutingKind k) {
  switch (k) {
    case RoutingKind::kSoftmaxTopkRenorm: return "softmax-topk-renorm";
    case RoutingKind::kSoftmaxTopk: return "softmax-topk";
    case RoutingKind::kTopkSoftmax: return "topk-softmax";
    case RoutingKind::kSigmoidGroupTopk: return "sigmoid-group-topk";
  }
  return "?";
}

std::optional<RoutingKind> ParseRoutingKind(std::string_view name) {
  for (RoutingKind k : {RoutingKind::kSoftmaxTopkRenorm, RoutingKind::kSoftmaxTopk,
                        RoutingKind::kTopkSoftmax, RoutingKind::kSigmoidGroupTopk})
    if (RoutingKindName(k) == name) return k;
  return std::nullopt;
}

int ModelShape::n_moe_layers() const {
  int n = 0;
  for (const LayerShape& l : layers) n += l.moe ? 1 : 0;
  return n;
}

uint64_t ModelShape::total_experts() const {
  uint64_t n = 0;
  for (const LayerShape& l : layers) n += l.moe ? static_cast<uint64_t>(l.n_expert) : 0;
  return n;
}

Result<void> ModelShape::Validate() const {
  auto bad = [&](std::string_view field, std::string_view why) {
    return Error::InvalidArgument("model shape '{}': {} {}", id, field, why);
  };
  if (id.empty()) return bad("id", "is empty");
  if (n_layer <= 0 || n_layer > 100000) return bad("n_layer", "out of range");
  if (static_cast<int>(layers.size()) != n_layer) return bad("layers", "count differs from n_layer");
  if (n_embd <= 0 || n_embd > (int64_t{1} << 24)) return bad("n_embd", "out of range");
  if (n_expert <= 0 || n_expert > (1 << 20)) return bad("n_expert", "out of range");
  if (n_expert_used <= 0 || n_expert_used > n_expert) return bad("n_expert_used", "not in 1..n_expert");
  if (n_ff_exp <= 0 || n_ff_exp > (int64_t{1} << 24)) return bad("n_ff_exp", "out of range");
  if (n_shared_expert < 0 || n_ff_shexp < 0 || n_ff_dense < 0) return bad("shared/dense widths", "negative");
  if (n_shared_expert > 0 && n_ff_shexp == 0) return bad("n_ff_shexp", "is 0 with shared experts");
  if (full_attention_interval < 0) return bad("full_attention_interval", "negative");
  if (routing.n_group <= 0 || routing.topk_group <= 0 || routing.topk_group > routing.n_group)
    return bad("routing.n_group/topk_group", "inconsistent");
  if (n_moe_layers() == 0) return bad("layers", "has no MoE layer");
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerShape& l = layers[i];
    if (l.moe && (l.n_expert <= 0 || l.n_expert > n_expert))
      return bad(fmt::format("layers[{}].n_expert", i), "not in 1..n_expert");
    if (!l.moe && l.n_expert != 0) return bad(fmt::format("layers[{}].n_expert", i), "non-zero on a dense layer");
  }
  return Ok();
}

bool UseMoreBits(int i, int n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

quant::GgmlType Q4KMDownType(int layer, int n_layer) {
  return UseMoreBits(layer, n_layer) ? quant::GgmlType::Q6_K : quant::GgmlType::Q4_K;
}

namespace {

std::string LayerKind(const LayerShape& l) {
  std::string ffn = l.moe ? "MoE" : "dense";
  if (l.attention == AttentionKind::kUnknown) return ffn;
  return fmt::format("{}-attention {}", AttentionKindName(l.attention), ffn);
}

// "3 linear + 1 full" when the attention kinds repeat with a period shorter
// than the model (runs inside one period), else "".
std::string AttentionPattern(const std::vector<LayerShape>& layers) {
  const size_t n = layers.size();
  for (size_t p = 2; p <= 8 && p * 2 <= n; ++p) {
    bool periodic = true;
    for (size_t i = p; i < n && periodic; ++i) periodic = layers[i].attention == layers[i % p].attention;
    if (!periodic) continue;
    std::vector<std::string> runs;
    size_t i = 0;
    while (i < p) {
      size_t j = i;
      while (j < p && layers[j].attention == layers[i].attention) ++j;
      runs.push_back(fmt::format("{} {}", j - i, AttentionKindName(layers[i].attention)));
      i = j;
    }
    if (runs.size() < 2) return "";  // all the same kind: no pattern to tell
    return fmt::format("pattern {}", fmt::join(runs, " + "));
  }
  return "";
}

}  // namespace

std::string DescribeLayout(const ModelShape& s) {
  std::vector<std::pair<std::string, int>> counts;  // in order of first appearance
  for (const LayerShape& l : s.layers) {
    std::string k = LayerKind(l);
    auto it = std::find_if(counts.begin(), counts.end(), [&](auto& c) { return c.first == k; });
    if (it == counts.end()) counts.emplace_back(k, 1); else ++it->second;
  }
  std::vector<std::string> parts;
  for (auto& [k, c] : counts) parts.push_back(fmt::format("{} x {}", c, k));
  std::vector<std::string> notes;
  if (std::string p = AttentionPattern(s.layers); !p.empty()) notes.push_back(p);
  // Leading dense layers (DeepSeek's first_k_dense_replace).
  int lead = 0;
  while (lead < static_cast<int>(s.layers.size()) && !s.layers[lead].moe) ++lead;
  if (lead > 0 && lead + s.n_moe_layers() == s.n_layer) notes.push_back(fmt::format("first {} dense", lead));
  std::string out = fmt::format("{} layers: {}", s.n_layer, fmt::join(parts, ", "));
  if (!notes.empty()) out += fmt::format(" ({})", fmt::join(notes, "; "));
  return out;
}

}  // namespace tenzro::catalog
