#include "manifest/manifest.h"

#include <algorithm>
#include <tuple>

#include <nlohmann/json.hpp>

#include "catalog/shape_json.h"
#include "identity/envelope.h"

namespace tenzro::manifest {

using nlohmann::json;

namespace {

bool IsHash(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool PrintableAscii(std::string_view s) {
  for (char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

Result<std::string> ShortString(const json& v, std::string_view what, bool allow_empty) {
  if (!v.is_string()) return Error::Corruption("manifest: {} is not a string", what);
  const std::string& s = v.get_ref<const std::string&>();
  if ((!allow_empty && s.empty()) || s.size() > 256 || !PrintableAscii(s))
    return Error::Corruption("manifest: {} is empty, longer than 256 bytes or not printable ASCII", what);
  return s;
}

Result<std::string> Hash(const json& v, std::string_view what) {
  if (!v.is_string() || !IsHash(v.get_ref<const std::string&>()))
    return Error::Corruption("manifest: {} is not 64 lower-case hex digits", what);
  return v.get<std::string>();
}

Result<int64_t> Int(const json& v, std::string_view what, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) return Error::Corruption("manifest: {} is not an integer", what);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    return Error::Corruption("manifest: {} is out of range {}..{}", what, lo, hi);
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) return Error::Corruption("manifest: {} = {} is out of range {}..{}", what, x, lo, hi);
  return x;
}

Result<const json*> Array(const json& body, const char* key, size_t width) {
  auto it = body.find(key);
  if (it == body.end() || !it->is_array()) return Error::Corruption("manifest: '{}' is missing or not an array", key);
  for (const json& e : *it)
    if (!e.is_array() || e.size() != width)
      return Error::Corruption("manifest: every entry of '{}' must be an array of {} members", key, width);
  return &*it;
}

constexpr int64_t kMaxBytes = int64_t{1} << 40;

}  // namespace

void Manifest::Normalize() {
  auto ek = [](const ExpertBlob& e) { return std::tie(e.layer, e.expert, e.blob, e.formats); };
  std::sort(experts.begin(), experts.end(), [&](const auto& a, const auto& b) { return ek(a) < ek(b); });
  experts.erase(std::unique(experts.begin(), experts.end(),
                            [](const auto& a, const auto& b) {
                              return a.layer == b.layer && a.expert == b.expert && a.blob == b.blob;
                            }),
                experts.end());
  auto gk = [](const GateBlob& g) { return std::tie(g.layer, g.blob); };
  std::sort(gates.begin(), gates.end(), [&](const auto& a, const auto& b) { return gk(a) < gk(b); });
  gates.erase(std::unique(gates.begin(), gates.end(),
                          [](const auto& a, const auto& b) { return a.layer == b.layer && a.blob == b.blob; }),
              gates.end());
  std::sort(spines.begin(), spines.end(), [](const auto& a, const auto& b) { return a.blob < b.blob; });
  spines.erase(std::unique(spines.begin(), spines.end(), [](const auto& a, const auto& b) { return a.blob == b.blob; }),
               spines.end());
}

bool Manifest::ListsExpert(int layer, int expert, std::string_view blob) const {
  auto it = std::lower_bound(experts.begin(), experts.end(), std::make_tuple(layer, expert, blob),
                             [](const ExpertBlob& e, const auto& k) {
                               return std::make_tuple(e.layer, e.expert, std::string_view(e.blob)) < k;
                             });
  return it != experts.end() && it->layer == layer && it->expert == expert && it->blob == blob;
}

bool Manifest::ListsGate(int layer, std::string_view blob) const {
  auto it = std::lower_bound(gates.begin(), gates.end(), std::make_pair(layer, blob), [](const GateBlob& g, const auto& k) {
    return std::make_pair(g.layer, std::string_view(g.blob)) < k;
  });
  return it != gates.end() && it->layer == layer && it->blob == blob;
}

bool Manifest::ListsSpine(std::string_view blob) const {
  auto it = std::lower_bound(spines.begin(), spines.end(), blob,
                             [](const SpineBlob& s, std::string_view k) { return std::string_view(s.blob) < k; });
  return it != spines.end() && it->blob == blob;
}

std::vector<const ExpertBlob*> Manifest::ExpertEntries(int layer, int expert) const {
  std::vector<const ExpertBlob*> out;
  auto it = std::lower_bound(experts.begin(), experts.end(), std::make_pair(layer, expert),
                             [](const ExpertBlob& e, const auto& k) { return std::make_pair(e.layer, e.expert) < k; });
  for (; it != experts.end() && it->layer == layer && it->expert == expert; ++it) out.push_back(&*it);
  return out;
}

std::string ManifestBody(const Manifest& m) {
  json body = {{"v", kManifestVersion},
               {"node_id", m.publisher},
               {"model", m.model},
               {"experts", json::array()},
               {"gates", json::array()},
               {"spines", json::array()}};
  if (m.shape) body["shape"] = catalog::ShapeToJson(*m.shape);
  for (const auto& e : m.experts) body["experts"].push_back(json::array({e.layer, e.expert, e.formats, e.blob, e.bytes}));
  for (const auto& g : m.gates) body["gates"].push_back(json::array({g.layer, g.blob, g.bytes}));
  for (const auto& s : m.spines) body["spines"].push_back(json::array({s.blob, s.bytes, s.quant}));
  return body.dump();
}

std::string SealManifest(Manifest m, const identity::Identity& id) {
  m.publisher = id.node_id();
  m.Normalize();
  return identity::SealEnvelope(kManifestDomain, ManifestBody(m), id);
}

Result<Manifest> OpenManifest(std::string_view bytes) {
  TENZRO_TRY(json body, identity::OpenEnvelope(kManifestDomain, bytes, kMaxManifestBytes, "manifest"));
  return ManifestFromBody(body);
}

Result<Manifest> ManifestFromBody(const json& body) {
  if (!body.is_object()) return Error::Corruption("manifest: the body is not a JSON object");
  auto nid = body.find("node_id");
  if (nid == body.end() || !nid->is_string() || !identity::IsValidNodeId(nid->get_ref<const std::string&>()))
    return Error::Corruption("manifest: 'node_id' is missing or not 64 lower-case hex digits");
  auto v = body.find("v");
  if (v == body.end() || !v->is_number_integer()) return Error::Corruption("manifest: 'v' is missing or not an integer");
  if (*v != kManifestVersion) return Error::Unsupported("manifest: version {} (this build reads 1)", v->dump());
  Manifest m;
  m.publisher = nid->get<std::string>();
  if (!body.contains("model")) return Error::Corruption("manifest: 'model' is missing");
  TENZRO_TRY(m.model, ShortString(body.at("model"), "'model'", false));
  if (body.contains("shape") && !body.at("shape").is_null()) {
    TENZRO_TRY(catalog::ModelShape s, catalog::ShapeFromJson(body.at("shape"), "manifest shape"));
    if (s.id != m.model)
      return Error::Corruption("manifest: the shape is of model '{}', the manifest of '{}'", s.id, m.model);
    m.shape = std::move(s);
  }
  TENZRO_TRY(const json* experts, Array(body, "experts", 5));
  TENZRO_TRY(const json* gates, Array(body, "gates", 3));
  TENZRO_TRY(const json* spines, Array(body, "spines", 3));
  if (experts->size() + gates->size() + spines->size() > kMaxEntries)
    return Error::Corruption("manifest: more than {} entries", kMaxEntries);
  m.experts.reserve(experts->size());
  for (const json& a : *experts) {
    ExpertBlob e;
    TENZRO_TRY(int64_t layer, Int(a[0], "an expert's layer", 0, kMaxIndex - 1));
    TENZRO_TRY(int64_t expert, Int(a[1], "an expert's index", 0, kMaxIndex - 1));
    e.layer = static_cast<int>(layer);
    e.expert = static_cast<int>(expert);
    TENZRO_TRY(e.formats, ShortString(a[2], "an expert's formats", false));
    TENZRO_TRY(e.blob, Hash(a[3], "an expert's blob"));
    TENZRO_TRY(int64_t n, Int(a[4], "an expert's bytes", 0, kMaxBytes));
    e.bytes = static_cast<uint64_t>(n);
    if (m.shape) {
      const catalog::ModelShape& s = *m.shape;
      if (e.layer >= s.n_layer || !s.layers[e.layer].moe || e.expert >= s.layers[e.layer].n_expert)
        return Error::Corruption("manifest: expert {}/{} does not exist in the shape of '{}'", e.layer, e.expert,
                                 m.model);
    }
    m.experts.push_back(std::move(e));
  }
  for (const json& a : *gates) {
    GateBlob g;
    TENZRO_TRY(int64_t layer, Int(a[0], "a gate's layer", 0, kMaxIndex - 1));
    g.layer = static_cast<int>(layer);
    TENZRO_TRY(g.blob, Hash(a[1], "a gate's blob"));
    TENZRO_TRY(int64_t n, Int(a[2], "a gate's bytes", 0, kMaxBytes));
    g.bytes = static_cast<uint64_t>(n);
    if (m.shape && g.layer >= m.shape->n_layer)
      return Error::Corruption("manifest: gate of layer {} does not exist in the shape of '{}'", g.layer, m.model);
    m.gates.push_back(std::move(g));
  }
  for (const json& a : *spines) {
    SpineBlob s;
    TENZRO_TRY(s.blob, Hash(a[0], "a spine's blob"));
    TENZRO_TRY(int64_t n, Int(a[1], "a spine's bytes", 0, kMaxBytes));
    s.bytes = static_cast<uint64_t>(n);
    TENZRO_TRY(s.quant, ShortString(a[2], "a spine's quant", false));
    m.spines.push_back(std::move(s));
  }
  m.Normalize();
  return m;
}

}  // namespace tenzro::manifest
