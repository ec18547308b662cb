#include "catalog/builtin_shapes.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tenzro::catalog {
namespace {

// Layer attention layouts.
enum class Layout : uint8_t {
  kAllFull,          // every layer full attention
  kThreeLinearOneFull,  // Qwen3-Next / Qwen3.5: full when (i+1) % 4 == 0
  kSlidingFull,      // gpt-oss: sliding on even layers, full on odd
  kTiny,             // tiny-qwen35moe: interval 2
};

struct Row {
  const char* id;
  const char* arch;
  int n_layer;
  int64_t n_embd;
  int n_expert;
  int n_expert_used;
  int64_t n_ff_exp;
  int n_shared;
  int64_t n_ff_shexp;
  bool shexp_gated;
  int first_dense;  // leading dense layers
  int64_t n_ff_dense;
  Layout layout;
  RoutingKind routing;
  uint64_t nominal_params;
};

constexpr RoutingKind kQwen = RoutingKind::kSoftmaxTopkRenorm;
constexpr RoutingKind kTopkSm = RoutingKind::kTopkSoftmax;
constexpr uint64_t kB = 1000000000ull;

const Row kRows[] = {
    // id, arch, layers, n_embd, experts, top-k, ff_exp, shared, ff_shexp, gated, first_dense, ff_dense, layout, routing, params
    {"qwen3.5-397b-a17b", "qwen35moe", 60, 4096, 512, 10, 1024, 1, 1024, true, 0, 0, Layout::kThreeLinearOneFull, kQwen, 397 * kB},
    {"qwen3.5-122b-a10b", "qwen35moe", 48, 3072, 256, 8, 1024, 1, 1024, true, 0, 0, Layout::kThreeLinearOneFull, kQwen, 122 * kB},
    {"qwen3.5-35b-a3b", "qwen35moe", 40, 2048, 256, 8, 512, 1, 512, true, 0, 0, Layout::kThreeLinearOneFull, kQwen, 35 * kB},
    {"qwen3-30b-a3b", "qwen3moe", 48, 2048, 128, 8, 768, 0, 0, false, 0, 0, Layout::kAllFull, kQwen, 30500000000ull},
    {"qwen3-235b-a22b", "qwen3moe", 94, 4096, 128, 8, 1536, 0, 0, false, 0, 0, Layout::kAllFull, kQwen, 235 * kB},
    {"qwen3-next-80b-a3b", "qwen3next", 48, 2048, 512, 10, 512, 1, 512, true, 0, 0, Layout::kThreeLinearOneFull, kQwen, 80 * kB},
    {"deepseek-v3", "deepseek2", 61, 7168, 256, 8, 2048, 1, 2048, false, 3, 18432, Layout::kAllFull,
     RoutingKind::kSigmoidGroupTopk, 671 * kB},
    {"mixtral-8x7b", "llama", 32, 4096, 8, 2, 14336, 0, 0, false, 0, 0, Layout::kAllFull, kTopkSm, 46700000000ull},
    {"gpt-oss-120b", "gpt-oss", 36, 2880, 128, 4, 2880, 0, 0, false, 0, 0, Layout::kSlidingFull, kTopkSm, 116800000000ull},
    {"gpt-oss-20b", "gpt-oss", 24, 2880, 32, 4, 2880, 0, 0, false, 0, 0, Layout::kSlidingFull, kTopkSm, 20900000000ull},
    {"tiny-qwen35moe", "qwen35moe", 2, 256, 8, 2, 512, 1, 512, true, 0, 0, Layout::kTiny, kQwen, 0},
};

ModelShape Build(const Row& r) {
  ModelShape s;
  s.id = r.id;
  s.architecture = r.arch;
  s.n_layer = r.n_layer;
  s.n_embd = r.n_embd;
  s.n_expert = r.n_expert;
  s.n_expert_used = r.n_expert_used;
  s.n_ff_exp = r.n_ff_exp;
  s.n_shared_expert = r.n_shared;
  s.n_ff_shexp = r.n_ff_shexp;
  s.shared_expert_gated = r.shexp_gated;
  s.n_ff_dense = r.n_ff_dense;
  s.nominal_params = r.nominal_params;
  s.routing.kind = r.routing;
  if (r.routing == RoutingKind::kSigmoidGroupTopk) {  // DeepSeek-V3 config.json
    s.routing.n_group = 8;
    s.routing.topk_group = 4;
    s.routing.selection_bias = true;
    s.routing.routed_scaling_factor = 2.5;
  }
  if (r.layout == Layout::kThreeLinearOneFull) s.full_attention_interval = 4;
  if (r.layout == Layout::kTiny) s.full_attention_interval = 2;
  s.layers.resize(r.n_layer);
  for (int i = 0; i < r.n_layer; ++i) {
    LayerShape& l = s.layers[i];
    l.moe = i >= r.first_dense;
    l.n_expert = l.moe ? r.n_expert : 0;
    l.q4_k_m_down_type = Q4KMDownType(i, r.n_layer);
    switch (r.layout) {
      case Layout::kAllFull: l.attention = AttentionKind::kFull; break;
      case Layout::kThreeLinearOneFull:
      case Layout::kTiny:
        l.attention = (i + 1) % s.full_attention_interval == 0 ? AttentionKind::kFull : AttentionKind::kLinear;
        break;
      case Layout::kSlidingFull:
        l.attention = i % 2 == 0 ? AttentionKind::kSliding : AttentionKind::kFull;
        break;
    }
  }
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::vector<std::string> BuiltinIds() {
  std::vector<std::string> ids;
  for (const Row& r : kRows) ids.emplace_back(r.id);
  return ids;
}

Result<ModelShape> BuiltinShape(std::string_view id) {
  const std::string want = Lower(id);
  for (const Row& r : kRows)
    if (want == r.id) return Build(r);
  return Error::NotFound("unknown model '{}'; built-in ids: {}", id, fmt::join(BuiltinIds(), ", "));
}

}  // namespace tenzro::catalog
