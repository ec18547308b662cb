#include "manifest/manifest_build.h"

namespace tenzro::manifest {

using nlohmann::json;

namespace {

Result<std::string> Str(const json& j, const char* key, std::string_view what) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string())
    return Error::Corruption("prepare result: {} has no string '{}'", what, key);
  return j[key].get<std::string>();
}

Result<uint64_t> U64(const json& j, const char* key, std::string_view what) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer() ||
      (!j[key].is_number_unsigned() && j[key].get<int64_t>() < 0))
    return Error::Corruption("prepare result: {} has no non-negative integer '{}'", what, key);
  return j[key].get<uint64_t>();
}

Result<int> Index(const json& j, const char* key, std::string_view what) {
  TENZRO_TRY(uint64_t v, U64(j, key, what));
  if (v >= static_cast<uint64_t>(kMaxIndex)) return Error::Corruption("prepare result: {} '{}' out of range", what, key);
  return static_cast<int>(v);
}

}  // namespace

Result<Manifest> ManifestFromPrepareResults(const std::string& model, std::span<const json> results,
                                            std::optional<catalog::ModelShape> shape) {
  Manifest m;
  m.model = model;
  m.shape = std::move(shape);
  for (const json& r : results) {
    if (!r.is_object() || r.value("model_id", "") != model) continue;
    if (r.contains("experts")) {  // prepare-experts
      TENZRO_TRY(int layer, Index(r, "layer", "the job"));
      if (!r["experts"].is_array()) return Error::Corruption("prepare result: 'experts' is not an array");
      for (const json& e : r["experts"]) {
        ExpertBlob b;
        b.layer = layer;
        TENZRO_TRY(b.expert, Index(e, "expert", "an expert"));
        TENZRO_TRY(b.blob, Str(e, "hash", "an expert"));
        TENZRO_TRY(b.bytes, U64(e, "bytes", "an expert"));
        const json& p = e.contains("projections") ? e["projections"] : json();
        for (const char* proj : {"gate", "up", "down"}) {
          TENZRO_TRY(std::string f, Str(p.is_object() ? p.value(proj, json()) : json(), "format", proj));
          b.formats += (b.formats.empty() ? "" : "/") + f;
        }
        m.experts.push_back(std::move(b));
      }
      if (r.contains("gate")) {
        GateBlob g;
        g.layer = layer;
        TENZRO_TRY(g.blob, Str(r["gate"], "hash", "the gate"));
        TENZRO_TRY(g.bytes, U64(r["gate"], "bytes", "the gate"));
        m.gates.push_back(std::move(g));
      }
    } else if (r.contains("hash")) {  // prepare-dense: the spine
      SpineBlob s;
      TENZRO_TRY(s.blob, Str(r, "hash", "the spine"));
      TENZRO_TRY(s.bytes, U64(r, "bytes", "the spine"));
      s.quant = r.value("quant", "none");
      m.spines.push_back(std::move(s));
    }
  }
  m.Normalize();
  return m;
}

}  // namespace tenzro::manifest
