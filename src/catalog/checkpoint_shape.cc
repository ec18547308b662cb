#include "catalog/checkpoint_shape.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/file.h"

namespace tenzro::catalog {
namespace {

using format::Checkpoint;
using format::CheckpointFormat;
using format::Projection;

// Metadata lookups that know GGUF keys are "<arch>.<key>" and HF keys are bare.
class Meta {
 public:
  explicit Meta(const Checkpoint& c) : c_(c), gguf_(c.format() == CheckpointFormat::kGguf), arch_(c.architecture()) {}

  std::optional<int64_t> Int(std::string_view gguf_key, std::initializer_list<std::string_view> hf_keys) const {
    if (gguf_) return c_.GetInt(arch_ + "." + std::string(gguf_key));
    for (auto k : hf_keys)
      if (auto v = c_.GetInt(k)) return v;
    return std::nullopt;
  }
  std::optional<double> Float(std::string_view gguf_key, std::string_view hf_key) const {
    return gguf_ ? c_.GetFloat(arch_ + "." + std::string(gguf_key)) : c_.GetFloat(hf_key);
  }
  std::optional<std::string> HfString(std::string_view key) const {
    return gguf_ ? std::nullopt : c_.GetString(key);
  }
  bool gguf() const { return gguf_; }
  const std::string& arch() const { return arch_; }

 private:
  const Checkpoint& c_;
  bool gguf_;
  std::string arch_;
};

// Hugging Face model_type -> llama.cpp architecture name.
std::string NormalizeArch(std::string arch) {
  static const std::map<std::string, std::string> kMap = {
      {"qwen3_moe", "qwen3moe"},   {"qwen3_next", "qwen3next"},     {"qwen3_5_moe", "qwen35moe"},
      {"qwen3_5_moe_text", "qwen35moe"}, {"qwen2_moe", "qwen2moe"}, {"deepseek_v3", "deepseek2"},
      {"deepseek_v2", "deepseek2"}, {"mixtral", "llama"},           {"gpt_oss", "gpt-oss"},
  };
  auto it = kMap.find(arch);
  return it == kMap.end() ? arch : it->second;
}

// The layer index in a tensor name ("blk.N." or "...layers.N."), or -1.
int LayerOf(std::string_view name) {
  size_t pos;
  if (name.rfind("blk.", 0) == 0) {
    pos = 4;
  } else if (size_t p = name.find("layers."); p != std::string_view::npos) {
    pos = p + 7;
  } else {
    return -1;
  }
  int v = 0, digits = 0;
  while (pos < name.size() && name[pos] >= '0' && name[pos] <= '9' && digits < 7) {
    v = v * 10 + (name[pos] - '0');
    ++pos, ++digits;
  }
  return digits > 0 && pos < name.size() && name[pos] == '.' ? v : -1;
}

// Attention kind suggested by the tensors of each layer.
std::map<int, AttentionKind> AttentionFromTensors(const Checkpoint& c) {
  std::map<int, AttentionKind> out;
  for (const format::TensorRef& t : c.tensors()) {
    int l = LayerOf(t.name);
    if (l < 0) continue;
    const std::string& n = t.name;
    if (n.find(".ssm_") != std::string::npos || n.find(".linear_attn.") != std::string::npos) {
      out[l] = AttentionKind::kLinear;
    } else if (out.find(l) == out.end() &&
               (n.find(".attn_q") != std::string::npos || n.find(".attn_k") != std::string::npos ||
                n.find(".self_attn.") != std::string::npos)) {
      out[l] = AttentionKind::kFull;
    }
  }
  return out;
}

// "layer_types" from the config.json beside a safetensors checkpoint.
std::vector<std::string> HfLayerTypes(const Checkpoint& c) {
  if (c.format() != CheckpointFormat::kSafetensors || c.files().empty()) return {};
  std::filesystem::path dir = std::filesystem::path(c.files().front()).parent_path();
  auto text = ReadTextFile((dir / "config.json").string(), 16ull << 20);
  if (!text) return {};
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return {};
  const nlohmann::json* lt = nullptr;
  if (j.contains("layer_types")) lt = &j["layer_types"];
  else if (j.contains("text_config") && j["text_config"].is_object() && j["text_config"].contains("layer_types"))
    lt = &j["text_config"]["layer_types"];
  std::vector<std::string> out;
  if (!lt || !lt->is_array()) return out;
  for (const auto& v : *lt) out.push_back(v.is_string() ? v.get<std::string>() : "");
  return out;
}

AttentionKind FromHfLayerType(std::string_view t) {
  if (t == "full_attention" || t == "attention") return AttentionKind::kFull;
  if (t == "linear_attention") return AttentionKind::kLinear;
  if (t == "sliding_attention") return AttentionKind::kSliding;
  return AttentionKind::kUnknown;
}

bool HasSelectionBias(const Checkpoint& c) {
  for (const format::TensorRef& t : c.tensors())
    if (t.name.find("exp_probs_b") != std::string::npos || t.name.find("e_score_correction_bias") != std::string::npos)
      return true;
  return false;
}

Routing DeriveRouting(const Checkpoint& c, const Meta& m, const std::string& arch) {
  Routing r;
  bool sigmoid = false, weight_softmax = false;
  if (m.gguf()) {
    if (auto g = m.Int("expert_gating_func", {})) {
      sigmoid = *g == 2;
      weight_softmax = *g == 3;
    }
  } else if (auto sf = m.HfString("scoring_func")) {
    sigmoid = *sf == "sigmoid";
  }
  std::optional<int64_t> norm = m.Int("expert_weights_norm", {"norm_topk_prob"});
  r.norm_topk_prob = norm ? *norm != 0 : arch != "qwen2moe";
  if (auto s = m.Float("expert_weights_scale", "routed_scaling_factor"); s && *s > 0) r.routed_scaling_factor = *s;
  if (sigmoid) {
    r.kind = RoutingKind::kSigmoidGroupTopk;
    r.n_group = static_cast<int>(std::clamp<int64_t>(m.Int("expert_group_count", {"n_group"}).value_or(1), 1, 1 << 20));
    r.topk_group = static_cast<int>(
        std::clamp<int64_t>(m.Int("expert_group_used_count", {"topk_group"}).value_or(r.n_group), 1, r.n_group));
  } else if (weight_softmax || arch == "llama" || arch == "gpt-oss") {
    r.kind = RoutingKind::kTopkSoftmax;
    r.norm_topk_prob = true;
  } else {
    r.kind = r.norm_topk_prob ? RoutingKind::kSoftmaxTopkRenorm : RoutingKind::kSoftmaxTopk;
  }
  r.selection_bias = HasSelectionBias(c);
  return r;
}

}  // namespace

Result<CheckpointInspection> InspectCheckpoint(const Checkpoint& c, std::string_view id, const std::string& path) {
  CheckpointInspection out;
  ModelShape& s = out.shape;
  const Meta m(c);
  s.id = std::string(id);
  s.architecture = NormalizeArch(c.architecture());
  std::error_code ec;
  std::string abs = std::filesystem::absolute(path, ec).lexically_normal().string();
  CheckpointFacts facts;
  facts.path = ec ? path : abs;
  facts.format = c.format() == CheckpointFormat::kGguf ? "gguf" : "safetensors";
  for (const format::TensorRef& t : c.tensors()) facts.total_tensor_bytes += t.bytes.size();

  const int64_t meta_layers = m.Int("block_count", {"num_hidden_layers"}).value_or(0);
  s.n_layer = static_cast<int>(std::clamp<int64_t>(std::max<int64_t>(meta_layers, c.n_layers()), 0, 100000));
  s.n_embd = m.Int("embedding_length", {"hidden_size"}).value_or(0);
  s.layers.resize(s.n_layer);

  // Routed experts, from the tensors.
  bool first = true;
  for (int i = 0; i < s.n_layer; ++i) {
    LayerShape& l = s.layers[i];
    l.q4_k_m_down_type = Q4KMDownType(i, s.n_layer);
    const int ne = c.n_experts(i);
    if (ne <= 0) continue;
    l.moe = true;
    l.n_expert = ne;
    s.n_expert = std::max(s.n_expert, ne);
    TENZRO_TRY(format::ExpertSlab gate, c.Expert(i, 0, Projection::kGate));
    TENZRO_TRY(format::ExpertSlab up, c.Expert(i, 0, Projection::kUp));
    TENZRO_TRY(format::ExpertSlab down, c.Expert(i, 0, Projection::kDown));
    if (gate.row_len != down.rows || gate.rows != down.row_len || up.row_len != gate.row_len || up.rows != gate.rows)
      return Error::Corruption("{}: layer {}: expert projections disagree (gate {}x{}, up {}x{}, down {}x{})",
                               facts.path, i, gate.rows, gate.row_len, up.rows, up.row_len, down.rows, down.row_len);
    if (first) {
      s.n_embd = gate.row_len;
      s.n_ff_exp = gate.rows;
      first = false;
    } else if (gate.row_len != s.n_embd || gate.rows != s.n_ff_exp) {
      return Error::Corruption("{}: layer {}: expert is {}x{}, layer {} has {}x{}", facts.path, i, gate.rows,
                               gate.row_len, 0, s.n_ff_exp, s.n_embd);
    }
    l.gate_type = gate.type;
    l.up_type = up.type;
    l.down_type = down.type;
    l.stored_expert_bytes = gate.bytes.size() + up.bytes.size() + down.bytes.size();
    // Every expert's bytes, so the totals are what the file holds.
    for (int e = 0; e < ne; ++e)
      for (Projection p : format::kProjections) {
        TENZRO_TRY(format::ExpertSlab slab, c.Expert(i, e, p));
        facts.expert_tensor_bytes += slab.bytes.size();
      }
  }
  s.checkpoint = facts;
  if (first) {  // no routed expert anywhere
    out.moe = false;
    return out;
  }
  out.moe = true;

  // Top-k: only metadata can tell.
  auto used = m.Int("expert_used_count", {"num_experts_per_tok"});
  if (!used)
    return Error::Corruption("{}: no top-k in the metadata ({})", facts.path,
                             m.gguf() ? c.architecture() + ".expert_used_count" : "num_experts_per_tok");
  if (*used <= 0 || *used > s.n_expert)
    return Error::Corruption("{}: top-k {} not in 1..{} (experts per layer)", facts.path, *used, s.n_expert);
  s.n_expert_used = static_cast<int>(*used);

  // Shared expert: first MoE layer that has one.
  for (int i = 0; i < s.n_layer; ++i) {
    if (!s.layers[i].moe) continue;
    auto sh = c.SharedExpert(i, Projection::kGate);
    if (!sh) continue;
    s.n_ff_shexp = sh->rows;
    s.n_shared_expert = static_cast<int>(
        std::clamp<int64_t>(m.Int("expert_shared_count", {"n_shared_experts"}).value_or(1), 1, 1 << 20));
    s.shared_expert_gated = c.SharedExpertGate(i).has_value();
    break;
  }
  if (std::any_of(s.layers.begin(), s.layers.end(), [](const LayerShape& l) { return !l.moe; }))
    s.n_ff_dense = std::max<int64_t>(0, m.Int("feed_forward_length", {"intermediate_size"}).value_or(0));

  // Attention layout: metadata first, tensor names for what it leaves open.
  s.full_attention_interval =
      static_cast<int>(std::clamp<int64_t>(m.Int("full_attention_interval", {"full_attention_interval"}).value_or(0), 0, 100000));
  const std::vector<std::string> hf_types = HfLayerTypes(c);
  const std::map<int, AttentionKind> from_tensors = AttentionFromTensors(c);
  for (int i = 0; i < s.n_layer; ++i) {
    AttentionKind& a = s.layers[i].attention;
    if (i < static_cast<int>(hf_types.size())) a = FromHfLayerType(hf_types[i]);
    if (a == AttentionKind::kUnknown && s.full_attention_interval > 0)
      a = (i + 1) % s.full_attention_interval == 0 ? AttentionKind::kFull : AttentionKind::kLinear;
    if (a == AttentionKind::kUnknown && s.architecture == "gpt-oss")
      a = i % 2 == 0 ? AttentionKind::kSliding : AttentionKind::kFull;
    if (a == AttentionKind::kUnknown)
      if (auto it = from_tensors.find(i); it != from_tensors.end()) a = it->second;
  }

  s.routing = DeriveRouting(c, m, s.architecture);
  if (s.routing.kind == RoutingKind::kSigmoidGroupTopk && s.n_expert % s.routing.n_group != 0)
    return Error::Corruption("{}: {} experts do not split into {} groups", facts.path, s.n_expert, s.routing.n_group);
  if (auto v = s.Validate(); !v) return Error::Corruption("{}: {}", facts.path, v.error().message());
  return out;
}

Result<CheckpointInspection> InspectCheckpointFile(const std::string& path, std::string_view id) {
  TENZRO_TRY(std::unique_ptr<Checkpoint> c, Checkpoint::Open(path));
  return InspectCheckpoint(*c, id, path);
}

Result<ModelShape> ShapeFromCheckpointFile(const std::string& path, std::string_view id) {
  TENZRO_TRY(CheckpointInspection ins, InspectCheckpointFile(path, id));
  if (!ins.moe) return Error::InvalidArgument("{}: dense model: no expert tensors", path);
  return std::move(ins.shape);
}

}  // namespace tenzro::catalog
