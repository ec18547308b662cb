#include "prepare/quant_plan.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "catalog/model_shape.h"

namespace tenzro::prepare {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Types an expert projection may be published in: those with a ggml-exact
// quantizer in the traits table.
Result<quant::GgmlType> PublishableType(std::string_view name, std::string_view what) {
  const quant::TypeTraits* t = quant::FindTraitsByName(name);
  static constexpr quant::GgmlType kAllowed[] = {quant::GgmlType::F32,  quant::GgmlType::F16,
                                                 quant::GgmlType::BF16, quant::GgmlType::Q8_0,
                                                 quant::GgmlType::Q4_K, quant::GgmlType::Q5_K,
                                                 quant::GgmlType::Q6_K};
  if (t == nullptr || std::find(std::begin(kAllowed), std::end(kAllowed), t->type) == std::end(kAllowed))
    return Error::InvalidArgument("{}: unsupported format '{}' (use f32, f16, bf16, q8_0, q4_k, q5_k, q6_k)", what,
                                  name);
  return t->type;
}

}  // namespace

QuantPlan::QuantPlan() : name_("f32"), types_{quant::GgmlType::F32, quant::GgmlType::F32, quant::GgmlType::F32} {}

Result<QuantPlan> QuantPlan::FromPreset(std::string_view preset) {
  std::string p = Lower(preset);
  QuantPlan plan;
  if (p == "q4_k_m") {
    plan.name_ = p;
    plan.q4_k_m_ = true;
    plan.types_ = {quant::GgmlType::Q4_K, quant::GgmlType::Q4_K, quant::GgmlType::Q4_K};
    return plan;
  }
  static constexpr std::string_view kPresets[] = {"q8_0", "q4_k", "q5_k", "q6_k", "f32", "f16", "bf16"};
  if (std::find(std::begin(kPresets), std::end(kPresets), p) == std::end(kPresets))
    return Error::InvalidArgument("unknown quant preset '{}' (use q4_k_m, q8_0, q4_k, q5_k, q6_k, f32, f16, bf16)",
                                  preset);
  TENZRO_TRY(quant::GgmlType t, PublishableType(p, "--quant"));
  plan.name_ = p;
  plan.types_ = {t, t, t};
  return plan;
}

Result<QuantPlan> QuantPlan::FromJson(std::string_view json_text) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error::InvalidArgument("--quant-json: not valid JSON");
  if (!j.is_object()) return Error::InvalidArgument("--quant-json: expected an object {{\"gate\": .., \"up\": .., \"down\": ..}}");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "gate" && it.key() != "up" && it.key() != "down")
      return Error::InvalidArgument("--quant-json: unknown key '{}' (expected gate, up, down)", it.key());
  QuantPlan plan;
  plan.name_ = "custom";
  for (format::Projection p : format::kProjections) {
    std::string key(format::ProjectionName(p));
    if (!j.contains(key) || !j[key].is_string())
      return Error::InvalidArgument("--quant-json: missing string field '{}'", key);
    TENZRO_TRY(quant::GgmlType t, PublishableType(j[key].get<std::string>(), "--quant-json." + key));
    plan.types_[static_cast<int>(p)] = t;
  }
  return plan;
}

quant::GgmlType QuantPlan::TypeFor(format::Projection p, int layer, int n_layer) const {
  if (q4_k_m_ && p == format::Projection::kDown && catalog::UseMoreBits(layer, n_layer)) return quant::GgmlType::Q6_K;
  return types_[static_cast<int>(p)];
}

std::string QuantPlan::ToJson() const {
  nlohmann::json j;
  if (name_ != "custom") {
    j["preset"] = name_;
  } else {
    for (format::Projection p : format::kProjections)
      j[std::string(format::ProjectionName(p))] = std::string(quant::TypeName(types_[static_cast<int>(p)]));
  }
  return j.dump();
}

}  // namespace tenzro::prepare
