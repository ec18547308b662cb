#include "catalog/shape_json.h"

#include <fmt/format.h>

namespace tenzro::catalog {
namespace {

using nlohmann::json;

std::string TypeStr(quant::GgmlType t) { return std::string(quant::TypeName(t)); }

// Typed member access that reports instead of throwing.
class Reader {
 public:
  Reader(const json& j, std::string ctx) : j_(j), ctx_(std::move(ctx)) {}

  Error Bad(std::string_view key, std::string_view why) const {
    return Error::Corruption("{}: field '{}' {}", ctx_, key, why);
  }
  bool Has(const char* key) const { return j_.is_object() && j_.contains(key) && !j_.at(key).is_null(); }

  Result<int64_t> Int(const char* key, int64_t lo, int64_t hi) const {
    if (!Has(key)) return Bad(key, "is missing");
    const json& v = j_.at(key);
    if (!v.is_number_integer()) return Bad(key, "is not an integer");
    int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                    ? INT64_MAX
                    : v.get<int64_t>();
    if (x < lo || x > hi) return Bad(key, fmt::format("= {} is out of range [{}, {}]", x, lo, hi));
    return x;
  }
  Result<uint64_t> U64(const char* key) const {
    if (!Has(key)) return Bad(key, "is missing");
    const json& v = j_.at(key);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      return Bad(key, "is not a non-negative integer");
    return v.get<uint64_t>();
  }
  Result<double> Num(const char* key) const {
    if (!Has(key)) return Bad(key, "is missing");
    if (!j_.at(key).is_number()) return Bad(key, "is not a number");
    return j_.at(key).get<double>();
  }
  Result<bool> Bool(const char* key) const {
    if (!Has(key)) return Bad(key, "is missing");
    if (!j_.at(key).is_boolean()) return Bad(key, "is not a boolean");
    return j_.at(key).get<bool>();
  }
  Result<std::string> Str(const char* key) const {
    if (!Has(key)) return Bad(key, "is missing");
    if (!j_.at(key).is_string()) return Bad(key, "is not a string");
    return j_.at(key).get<std::string>();
  }
  Result<quant::GgmlType> Type(const char* key) const {
    TENZRO_TRY(std::string name, Str(key));
    const quant::TypeTraits* t = quant::FindTraitsByName(name);
    if (!t) return Bad(key, fmt::format("names unknown type '{}'", name));
    return t->type;
  }

 private:
  const json& j_;
  std::string ctx_;
};

}  // namespace

json ShapeToJson(const ModelShape& s) {
  json layers = json::array();
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const LayerShape& l = s.layers[i];
    json o = {{"index", i},
              {"moe", l.moe},
              {"attention", AttentionKindName(l.attention)},
              {"n_expert", l.n_expert},
              {"q4_k_m_down_type", TypeStr(l.q4_k_m_down_type)}};
    if (l.gate_type && l.up_type && l.down_type) {
      o["stored_types"] = {{"gate", TypeStr(*l.gate_type)}, {"up", TypeStr(*l.up_type)}, {"down", TypeStr(*l.down_type)}};
      o["stored_expert_bytes"] = l.stored_expert_bytes;
    }
    layers.push_back(std::move(o));
  }
  json j = {
      {"id", s.id},
      {"architecture", s.architecture},
      {"n_layer", s.n_layer},
      {"n_embd", s.n_embd},
      {"n_expert", s.n_expert},
      {"n_expert_used", s.n_expert_used},
      {"n_ff_exp", s.n_ff_exp},
      {"n_shared_expert", s.n_shared_expert},
      {"n_ff_shexp", s.n_ff_shexp},
      {"shared_expert_gated", s.shared_expert_gated},
      {"n_ff_dense", s.n_ff_dense},
      {"full_attention_interval", s.full_attention_interval},
      {"nominal_params", s.nominal_params},
      {"routing",
       {{"kind", RoutingKindName(s.routing.kind)},
        {"n_group", s.routing.n_group},
        {"topk_group", s.routing.topk_group},
        {"norm_topk_prob", s.routing.norm_topk_prob},
        {"selection_bias", s.routing.selection_bias},
        {"routed_scaling_factor", s.routing.routed_scaling_factor}}},
      {"layers", std::move(layers)},
  };
  if (s.checkpoint) {
    j["checkpoint"] = {{"path", s.checkpoint->path},
                       {"format", s.checkpoint->format},
                       {"total_tensor_bytes", s.checkpoint->total_tensor_bytes},
                       {"expert_tensor_bytes", s.checkpoint->expert_tensor_bytes}};
  } else {
    j["checkpoint"] = nullptr;
  }
  return j;
}

Result<ModelShape> ShapeFromJson(const json& j, std::string_view context) {
  const std::string ctx(context);
  if (!j.is_object()) return Error::Corruption("{}: shape is not an object", ctx);
  Reader r(j, ctx);
  constexpr int64_t kBig = int64_t{1} << 40;
  ModelShape s;
  TENZRO_TRY(s.id, r.Str("id"));
  TENZRO_TRY(s.architecture, r.Str("architecture"));
  TENZRO_TRY(int64_t n_layer, r.Int("n_layer", 1, 100000));
  s.n_layer = static_cast<int>(n_layer);
  TENZRO_TRY(s.n_embd, r.Int("n_embd", 1, kBig));
  TENZRO_TRY(int64_t n_expert, r.Int("n_expert", 1, 1 << 20));
  s.n_expert = static_cast<int>(n_expert);
  TENZRO_TRY(int64_t used, r.Int("n_expert_used", 1, 1 << 20));
  s.n_expert_used = static_cast<int>(used);
  TENZRO_TRY(s.n_ff_exp, r.Int("n_ff_exp", 1, kBig));
  TENZRO_TRY(int64_t n_shared, r.Int("n_shared_expert", 0, 1 << 20));
  s.n_shared_expert = static_cast<int>(n_shared);
  TENZRO_TRY(s.n_ff_shexp, r.Int("n_ff_shexp", 0, kBig));
  TENZRO_TRY(s.shared_expert_gated, r.Bool("shared_expert_gated"));
  TENZRO_TRY(s.n_ff_dense, r.Int("n_ff_dense", 0, kBig));
  TENZRO_TRY(int64_t fai, r.Int("full_attention_interval", 0, 100000));
  s.full_attention_interval = static_cast<int>(fai);
  TENZRO_TRY(s.nominal_params, r.U64("nominal_params"));

  if (!r.Has("routing") || !j.at("routing").is_object()) return r.Bad("routing", "is not an object");
  Reader rr(j.at("routing"), ctx + ": routing");
  TENZRO_TRY(std::string kind, rr.Str("kind"));
  auto rk = ParseRoutingKind(kind);
  if (!rk) return rr.Bad("kind", fmt::format("names unknown routing '{}'", kind));
  s.routing.kind = *rk;
  TENZRO_TRY(int64_t n_group, rr.Int("n_group", 1, 1 << 20));
  TENZRO_TRY(int64_t topk_group, rr.Int("topk_group", 1, 1 << 20));
  s.routing.n_group = static_cast<int>(n_group);
  s.routing.topk_group = static_cast<int>(topk_group);
  TENZRO_TRY(s.routing.norm_topk_prob, rr.Bool("norm_topk_prob"));
  TENZRO_TRY(s.routing.selection_bias, rr.Bool("selection_bias"));
  TENZRO_TRY(s.routing.routed_scaling_factor, rr.Num("routed_scaling_factor"));

  if (!r.Has("layers") || !j.at("layers").is_array()) return r.Bad("layers", "is not an array");
  const json& layers = j.at("layers");
  if (layers.size() != static_cast<size_t>(s.n_layer)) return r.Bad("layers", "count differs from n_layer");
  for (size_t i = 0; i < layers.size(); ++i) {
    const json& lj = layers[i];
    if (!lj.is_object()) return r.Bad(fmt::format("layers[{}]", i).c_str(), "is not an object");
    Reader lr(lj, fmt::format("{}: layers[{}]", ctx, i));
    LayerShape l;
    TENZRO_TRY(l.moe, lr.Bool("moe"));
    TENZRO_TRY(std::string att, lr.Str("attention"));
    auto ak = ParseAttentionKind(att);
    if (!ak) return lr.Bad("attention", fmt::format("names unknown attention '{}'", att));
    l.attention = *ak;
    TENZRO_TRY(int64_t ne, lr.Int("n_expert", 0, 1 << 20));
    l.n_expert = static_cast<int>(ne);
    TENZRO_TRY(l.q4_k_m_down_type, lr.Type("q4_k_m_down_type"));
    if (lr.Has("stored_types")) {
      const json& st = lj.at("stored_types");
      if (!st.is_object()) return lr.Bad("stored_types", "is not an object");
      Reader sr(st, fmt::format("{}: layers[{}].stored_types", ctx, i));
      TENZRO_TRY(l.gate_type, sr.Type("gate"));
      TENZRO_TRY(l.up_type, sr.Type("up"));
      TENZRO_TRY(l.down_type, sr.Type("down"));
      TENZRO_TRY(l.stored_expert_bytes, lr.U64("stored_expert_bytes"));
    }
    s.layers.push_back(l);
  }
  if (r.Has("checkpoint")) {
    const json& cj = j.at("checkpoint");
    if (!cj.is_object()) return r.Bad("checkpoint", "is not an object");
    Reader cr(cj, ctx + ": checkpoint");
    CheckpointFacts f;
    TENZRO_TRY(f.path, cr.Str("path"));
    TENZRO_TRY(f.format, cr.Str("format"));
    TENZRO_TRY(f.total_tensor_bytes, cr.U64("total_tensor_bytes"));
    TENZRO_TRY(f.expert_tensor_bytes, cr.U64("expert_tensor_bytes"));
    s.checkpoint = std::move(f);
  }
  if (auto v = s.Validate(); !v) return Error::Corruption("{}: {}", ctx, v.error().message());
  return s;
}

}  // namespace tenzro::catalog
