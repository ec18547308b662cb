#include "format/checkpoint_base.h"

#include <charconv>

#include <fmt/format.h>

namespace tenzro::format {
namespace {

// Layer-name prefixes of language-model blocks (vision towers use others).
constexpr std::string_view kLayerPrefixes[] = {
    "blk.", "model.layers.", "model.language_model.layers.", "language_model.model.layers.",
    "model.language_model.model.layers.",
};
constexpr int kMaxLayer = 1 << 16;
constexpr int kMaxExpert = 1 << 20;

bool ParseIndex(std::string_view s, int limit, int* out, std::string_view* rest) {
  size_t dot = s.find('.');
  if (dot == 0 || dot == std::string_view::npos) return false;
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + dot, v);
  if (ec != std::errc() || p != s.data() + dot || v < 0 || v >= limit) return false;
  *out = v;
  *rest = s.substr(dot + 1);
  return true;
}

// HF per-expert suffix: "mlp.experts.E.gate_proj.weight" or Mixtral's
// "block_sparse_moe.experts.E.w1.weight"; returns E or -1.
int HfExpertIndex(std::string_view suffix) {
  for (std::string_view head : {"mlp.experts.", "block_sparse_moe.experts."}) {
    if (suffix.substr(0, head.size()) != head) continue;
    int e;
    std::string_view rest;
    if (ParseIndex(suffix.substr(head.size()), kMaxExpert, &e, &rest)) return e;
  }
  return -1;
}

}  // namespace

std::string_view ProjectionName(Projection p) {
  switch (p) {
    case Projection::kGate: return "gate";
    case Projection::kUp: return "up";
    case Projection::kDown: return "down";
  }
  return "?";
}

bool SplitLayerName(std::string_view name, int* layer, std::string_view* suffix) {
  for (std::string_view prefix : kLayerPrefixes) {
    if (name.substr(0, prefix.size()) != prefix) continue;
    if (ParseIndex(name.substr(prefix.size()), kMaxLayer, layer, suffix)) return true;
  }
  return false;
}

Result<void> CheckpointBase::BuildIndex() {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorRef& t = tensors_[i];
    auto [it, inserted] = by_name_.emplace(t.name, i);
    if (!inserted)
      return Error::Corruption("tensor '{}' appears twice: in {} and {}", t.name, tensors_[it->second].file, t.file);
    int layer;
    std::string_view suffix;
    if (!SplitLayerName(t.name, &layer, &suffix)) continue;
    Layer& l = layers_[layer];
    l.by_suffix.emplace(std::string(suffix), i);
    int e = HfExpertIndex(suffix);
    if (e >= 0) l.hf_experts = std::max(l.hf_experts, e + 1);
    n_layers_ = std::max(n_layers_, layer + 1);
  }
  return Ok();
}

const TensorRef* CheckpointBase::FindTensor(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const TensorRef* CheckpointBase::LayerTensor(int layer, std::string_view suffix) const {
  auto l = layers_.find(layer);
  if (l == layers_.end()) return nullptr;
  auto it = l->second.by_suffix.find(suffix);
  return it == l->second.by_suffix.end() ? nullptr : &tensors_[it->second];
}

const TensorRef* CheckpointBase::FirstOf(int layer, std::initializer_list<std::string_view> suffixes) const {
  for (auto s : suffixes)
    if (const TensorRef* t = LayerTensor(layer, s)) return t;
  return nullptr;
}

int CheckpointBase::n_experts(int layer) const {
  if (const TensorRef* t = FirstOf(layer, {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight",
                                           "mlp.experts.gate_up_proj", "mlp.experts.gate_up_proj.weight",
                                           "mlp.experts.down_proj", "mlp.experts.down_proj.weight"}))
    return t->ne.size() >= 3 && t->ne[2] <= kMaxExpert ? static_cast<int>(t->ne[2]) : 0;
  auto l = layers_.find(layer);
  return l == layers_.end() ? 0 : l->second.hf_experts;
}

Result<ExpertSlab> CheckpointBase::Slab(const TensorRef& t, int64_t row_len, int64_t rows, uint64_t byte_offset) const {
  if (!t.dtype.empty() && format() == CheckpointFormat::kSafetensors && t.dtype != "F32" && t.dtype != "F16" &&
      t.dtype != "BF16")
    return Error::Unsupported("{}: tensor '{}' has dtype {}; expert weights must be F32, F16 or BF16", t.file, t.name,
                              t.dtype);
  auto rb = quant::RowBytes(t.type, row_len);
  if (!rb) return rb.error().WithContext(fmt::format("{}: tensor '{}'", t.file, t.name));
  uint64_t size, end;
  if (rows < 0 || MulOverflow(*rb, static_cast<uint64_t>(rows), &size) || AddOverflow(byte_offset, size, &end) ||
      end > t.bytes.size())
    return Error::Corruption("{}: tensor '{}': slab of {} rows x {} at byte {} lies outside its {} bytes", t.file,
                             t.name, rows, row_len, byte_offset, t.bytes.size());
  ExpertSlab s;
  s.tensor = t.name;
  s.file = t.file;
  s.type = t.type;
  s.row_len = row_len;
  s.rows = rows;
  s.file_offset = t.file_offset + byte_offset;
  s.bytes = t.bytes.subspan(byte_offset, size);
  return s;
}

Result<ExpertSlab> CheckpointBase::Expert(int layer, int expert, Projection p) const {
  const int n = n_experts(layer);
  if (expert < 0 || expert >= n)
    return Error::NotFound("layer {} expert {} ({}): the layer has {} experts", layer, expert, ProjectionName(p), n);
  const std::string_view pn = ProjectionName(p);
  // llama.cpp: one 3-D tensor per projection, expert = ne[2].
  if (const TensorRef* t = LayerTensor(layer, fmt::format("ffn_{}_exps.weight", pn))) {
    if (t->ne.size() < 3 || (t->ne.size() == 4 && t->ne[3] != 1) || expert >= t->ne[2])
      return Error::Corruption("{}: tensor '{}' has shape [{}], expected [row, rows, >{} experts]", t->file, t->name,
                               fmt::join(t->ne, ", "), expert);
    TENZRO_TRY(uint64_t rb, quant::RowBytes(t->type, t->ne[0]));
    uint64_t slab = rb * static_cast<uint64_t>(t->ne[1]);  // bounded by the validated tensor size
    return Slab(*t, t->ne[0], t->ne[1], slab * static_cast<uint64_t>(expert));
  }
  // Qwen3.5 packed: gate_up_proj [E, 2I, H] (first I rows gate), down_proj [E, H, I].
  const bool down = p == Projection::kDown;
  if (const TensorRef* t = down ? FirstOf(layer, {"mlp.experts.down_proj", "mlp.experts.down_proj.weight"})
                                : FirstOf(layer, {"mlp.experts.gate_up_proj", "mlp.experts.gate_up_proj.weight"})) {
    if (t->ne.size() != 3 || expert >= t->ne[2] || (!down && t->ne[1] % 2 != 0))
      return Error::Corruption("{}: packed expert tensor '{}' has shape [{}] (ggml order)", t->file, t->name,
                               fmt::join(t->ne, ", "));
    TENZRO_TRY(uint64_t rb, quant::RowBytes(t->type, t->ne[0]));
    uint64_t per_expert = rb * static_cast<uint64_t>(t->ne[1]);
    int64_t rows = down ? t->ne[1] : t->ne[1] / 2;
    uint64_t off = per_expert * static_cast<uint64_t>(expert) +
                   (p == Projection::kUp ? rb * static_cast<uint64_t>(rows) : 0);
    return Slab(*t, t->ne[0], rows, off);
  }
  // Hugging Face per-expert 2-D tensors [out, in] -> ggml {in, out}.
  static constexpr std::string_view kMixtral[] = {"w1", "w3", "w2"};
  const TensorRef* t = FirstOf(layer, {fmt::format("mlp.experts.{}.{}_proj.weight", expert, pn),
                                       fmt::format("block_sparse_moe.experts.{}.{}.weight", expert,
                                                   kMixtral[static_cast<int>(p)])});
  if (!t) return Error::NotFound("layer {} expert {}: no {} projection tensor", layer, expert, pn);
  if (t->ne.size() != 2)
    return Error::Corruption("{}: expert tensor '{}' has {} dims, expected 2", t->file, t->name, t->ne.size());
  return Slab(*t, t->ne[0], t->ne[1], 0);
}

Result<TensorRef> CheckpointBase::Router(int layer) const {
  if (const TensorRef* t =
          FirstOf(layer, {"ffn_gate_inp.weight", "mlp.gate.weight", "block_sparse_moe.gate.weight"}))
    return *t;
  return Error::NotFound("layer {}: no router tensor", layer);
}

Result<ExpertSlab> CheckpointBase::SharedExpert(int layer, Projection p) const {
  const std::string_view pn = ProjectionName(p);
  const TensorRef* t = FirstOf(layer, {fmt::format("ffn_{}_shexp.weight", pn),
                                       fmt::format("mlp.shared_expert.{}_proj.weight", pn),
                                       fmt::format("mlp.shared_experts.{}_proj.weight", pn)});
  if (!t) return Error::NotFound("layer {}: no shared expert {} projection", layer, pn);
  if (t->ne.size() != 2)
    return Error::Corruption("{}: shared expert tensor '{}' has {} dims, expected 2", t->file, t->name, t->ne.size());
  return Slab(*t, t->ne[0], t->ne[1], 0);
}

Result<TensorRef> CheckpointBase::SharedExpertGate(int layer) const {
  if (const TensorRef* t = FirstOf(layer, {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"}))
    return *t;
  return Error::NotFound("layer {}: no shared expert gate", layer);
}

}  // namespace tenzro::format
