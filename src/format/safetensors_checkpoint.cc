// Checkpoint over safetensors shards plus the Hugging Face config.json.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "format/checkpoint_base.h"
#include "format/checkpoint_open.h"

namespace tenzro::format {
namespace {

using nlohmann::json;

quant::GgmlType CarrierType(StDtype d) {
  if (auto g = StDtypeToGgml(d)) return *g;
  switch (StDtypeSize(d)) {
    case 2: return quant::GgmlType::I16;
    case 4: return quant::GgmlType::I32;
    case 8: return quant::GgmlType::I64;
    default: return quant::GgmlType::I8;
  }
}

class SafetensorsCheckpoint final : public CheckpointBase {
 public:
  CheckpointFormat format() const override { return CheckpointFormat::kSafetensors; }

  std::optional<std::string> GetString(std::string_view key) const override {
    if (const json* v = Find(key); v && v->is_string()) return v->get<std::string>();
    auto it = metadata_.find(key);
    if (it != metadata_.end()) return it->second;
    return std::nullopt;
  }
  std::optional<int64_t> GetInt(std::string_view key) const override {
    const json* v = Find(key);
    return v ? ToInt(*v) : std::nullopt;
  }
  std::optional<double> GetFloat(std::string_view key) const override {
    const json* v = Find(key);
    if (!v) return std::nullopt;
    if (v->is_boolean()) return v->get<bool>() ? 1.0 : 0.0;
    if (v->is_number()) return v->get<double>();
    return std::nullopt;
  }
  std::optional<std::vector<int64_t>> GetIntArray(std::string_view key) const override {
    const json* v = Find(key);
    if (!v || !v->is_array()) return std::nullopt;
    std::vector<int64_t> out;
    for (const auto& e : *v) {
      auto i = ToInt(e);
      if (!i) return std::nullopt;
      out.push_back(*i);
    }
    return out;
  }
  std::string architecture() const override { return GetString("model_type").value_or(""); }
  std::vector<std::string> MetadataKeys() const override {
    std::vector<std::string> keys;
    for (const auto& [k, v] : config_.items()) keys.push_back(k);
    for (const auto& [k, v] : metadata_) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
  }

  Result<void> Init(std::vector<std::unique_ptr<SafetensorsFile>> shards, std::string_view config,
                    std::string_view config_name);

 private:
  static std::optional<int64_t> ToInt(const json& v) {
    if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    return std::nullopt;
  }
  // Top-level key, then a dotted path ("text_config.num_experts"), then the
  // key inside text_config (multimodal configs nest the LM's settings there).
  const json* Find(std::string_view key) const {
    if (!config_.is_object()) return nullptr;
    std::string k(key);
    if (auto it = config_.find(k); it != config_.end() && !it->is_null()) return &*it;
    const json* cur = &config_;
    size_t pos = 0;
    while (cur->is_object()) {
      size_t dot = key.find('.', pos);
      auto it = cur->find(std::string(key.substr(pos, dot == std::string_view::npos ? dot : dot - pos)));
      if (it == cur->end()) break;
      if (dot == std::string_view::npos) return it->is_null() ? nullptr : &*it;
      cur = &*it;
      pos = dot + 1;
    }
    if (auto tc = config_.find("text_config"); tc != config_.end() && tc->is_object())
      if (auto it = tc->find(k); it != tc->end() && !it->is_null()) return &*it;
    return nullptr;
  }

  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  json config_ = json::object();
  std::map<std::string, std::string, std::less<>> metadata_;
};

Result<void> SafetensorsCheckpoint::Init(std::vector<std::unique_ptr<SafetensorsFile>> shards,
                                         std::string_view config, std::string_view config_name) {
  shards_ = std::move(shards);
  if (!config.empty()) {
    config_ = json::parse(config.begin(), config.end(), nullptr, /*allow_exceptions=*/false);
    if (config_.is_discarded() || !config_.is_object())
      return Error::Corruption("{}: not a JSON object", config_name);
  }
  for (const auto& f : shards_) {
    files_.push_back(f->path());
    for (const auto& [k, v] : f->metadata()) metadata_.emplace(k, v);
    for (const auto& t : f->tensors()) {
      TensorRef r;
      r.name = t.name;
      r.type = CarrierType(t.dtype);
      r.ne.assign(t.shape.rbegin(), t.shape.rend());
      r.file = f->path();
      r.file_offset = f->data_offset() + t.begin;
      r.bytes = f->TensorBytes(t);
      r.dtype = std::string(StDtypeName(t.dtype));
      tensors_.push_back(std::move(r));
    }
  }
  return BuildIndex();
}

}  // namespace

Result<std::unique_ptr<Checkpoint>> MakeSafetensorsCheckpoint(std::vector<std::unique_ptr<SafetensorsFile>> shards,
                                                              std::string_view config_json,
                                                              std::string_view config_name) {
  auto c = std::make_unique<SafetensorsCheckpoint>();
  TENZRO_CHECK_OK(c->Init(std::move(shards), config_json, config_name));
  return std::unique_ptr<Checkpoint>(std::move(c));
}

}  // namespace tenzro::format
