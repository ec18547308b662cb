#include "catalog/catalog.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "catalog/builtin_shapes.h"
#include "catalog/checkpoint_shape.h"
#include "catalog/shape_json.h"
#include "core/file.h"

namespace tenzro::catalog {

using nlohmann::json;

Result<std::string> NormalizeModelId(std::string_view id) {
  if (id.empty() || id.size() > 128) return Error::InvalidArgument("model id must be 1-128 characters");
  std::string out;
  for (char c : id) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '.' || l == '_' || l == '-'))
      return Error::InvalidArgument("model id '{}': only letters, digits, '.', '_' and '-' are allowed", id);
    out.push_back(l);
  }
  return out;
}

std::string Catalog::PathIn(const std::string& data_dir) { return data_dir + "/" + kCatalogFileName; }

Result<Catalog> Catalog::Load(const std::string& data_dir) {
  Catalog cat(data_dir);
  const std::string path = PathIn(data_dir);
  if (!PathExists(path)) return cat;
  TENZRO_TRY(std::string text, ReadTextFile(path));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error::Corruption("{}: not valid JSON", path);
  if (!j.is_object()) return Error::Corruption("{}: top level is not an object", path);
  if (!j.contains("schema_version") || !j["schema_version"].is_number_integer())
    return Error::Corruption("{}: field 'schema_version' missing or not an integer", path);
  const int64_t version = j["schema_version"].get<int64_t>();
  if (version > kCatalogSchemaVersion)
    return Error::Unsupported("{}: schema_version {} is newer than this build ({})", path, version, kCatalogSchemaVersion);
  if (version < 1) return Error::Corruption("{}: schema_version {} is invalid", path, version);
  if (!j.contains("models") || !j["models"].is_array())
    return Error::Corruption("{}: field 'models' missing or not an array", path);
  size_t i = 0;
  for (const json& m : j["models"]) {
    const std::string ctx = fmt::format("{}: models[{}]", path, i++);
    if (!m.is_object()) return Error::Corruption("{}: not an object", ctx);
    for (const char* k : {"id", "checkpoint", "format"})
      if (!m.contains(k) || !m[k].is_string()) return Error::Corruption("{}: field '{}' missing or not a string", ctx, k);
    if (!m.contains("added_unix") || !m["added_unix"].is_number_integer())
      return Error::Corruption("{}: field 'added_unix' missing or not an integer", ctx);
    if (!m.contains("shape")) return Error::Corruption("{}: field 'shape' missing", ctx);
    CatalogEntry e;
    auto id = NormalizeModelId(m["id"].get<std::string>());
    if (!id) return Error::Corruption("{}: field 'id': {}", ctx, id.error().message());
    e.id = *id;
    e.checkpoint = m["checkpoint"].get<std::string>();
    e.format = m["format"].get<std::string>();
    e.added_unix = m["added_unix"].get<int64_t>();
    TENZRO_TRY(e.shape, ShapeFromJson(m["shape"], ctx + ".shape"));
    if (cat.Lookup(e.id)) return Error::Corruption("{}: duplicate id '{}'", ctx, e.id);
    cat.entries_.push_back(std::move(e));
  }
  std::sort(cat.entries_.begin(), cat.entries_.end(), [](auto& a, auto& b) { return a.id < b.id; });
  return cat;
}

std::vector<std::string> Catalog::Ids() const {
  std::vector<std::string> ids;
  for (const CatalogEntry& e : entries_) ids.push_back(e.id);
  return ids;
}

const CatalogEntry* Catalog::Lookup(std::string_view id) const {
  auto norm = NormalizeModelId(id);
  if (!norm) return nullptr;
  for (const CatalogEntry& e : entries_)
    if (e.id == *norm) return &e;
  return nullptr;
}

Result<void> Catalog::Put(CatalogEntry e) {
  TENZRO_TRY(e.id, NormalizeModelId(e.id));
  Remove(e.id);
  auto pos = std::lower_bound(entries_.begin(), entries_.end(), e.id, [](auto& a, auto& id) { return a.id < id; });
  entries_.insert(pos, std::move(e));
  return Ok();
}

bool Catalog::Remove(std::string_view id) {
  auto norm = NormalizeModelId(id);
  if (!norm) return false;
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](auto& e) { return e.id == *norm; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

json Catalog::ToJson() const {
  json models = json::array();
  for (const CatalogEntry& e : entries_)
    models.push_back({{"id", e.id},
                      {"checkpoint", e.checkpoint},
                      {"format", e.format},
                      {"added_unix", e.added_unix},
                      {"shape", ShapeToJson(e.shape)}});
  return {{"schema_version", kCatalogSchemaVersion}, {"models", std::move(models)}};
}

Result<void> Catalog::Save() const {
  TENZRO_CHECK_OK(MakeDirs(data_dir_));
  return WriteFileAtomic(PathIn(data_dir_), ToJson().dump(2) + "\n");
}

Result<CatalogEntry> Catalog::AddCheckpoint(std::string_view id, const std::string& checkpoint) {
  TENZRO_TRY(std::string norm, NormalizeModelId(id));
  TENZRO_TRY(ModelShape shape, ShapeFromCheckpointFile(checkpoint, norm));
  CatalogEntry e;
  e.id = norm;
  e.checkpoint = shape.checkpoint ? shape.checkpoint->path : checkpoint;
  e.format = shape.checkpoint ? shape.checkpoint->format : "";
  e.added_unix = static_cast<int64_t>(std::time(nullptr));
  e.shape = std::move(shape);
  TENZRO_CHECK_OK(Put(e));
  TENZRO_CHECK_OK(Save());
  return e;
}

std::string_view ShapeSourceName(ShapeSource s) {
  switch (s) {
    case ShapeSource::kCheckpoint: return "checkpoint";
    case ShapeSource::kCatalog: return "catalog";
    case ShapeSource::kBuiltin: return "builtin";
    case ShapeSource::kManifest: return "manifest";
  }
  return "?";
}

Result<ResolvedShape> ResolveShape(std::string_view id, const std::optional<std::string>& checkpoint,
                                   const std::string& data_dir) {
  TENZRO_TRY(std::string norm, NormalizeModelId(id));
  if (checkpoint) {
    TENZRO_TRY(ModelShape s, ShapeFromCheckpointFile(*checkpoint, norm));
    return ResolvedShape{std::move(s), ShapeSource::kCheckpoint};
  }
  std::vector<std::string> cataloged;
  if (!data_dir.empty()) {
    TENZRO_TRY(Catalog cat, Catalog::Load(data_dir));
    if (const CatalogEntry* e = cat.Lookup(norm)) return ResolvedShape{e->shape, ShapeSource::kCatalog};
    cataloged = cat.Ids();
  }
  if (auto b = BuiltinShape(norm)) return ResolvedShape{std::move(*b), ShapeSource::kBuiltin};
  std::string known = fmt::format("{}", fmt::join(BuiltinIds(), ", "));
  if (!cataloged.empty()) known += fmt::format("; cataloged: {}", fmt::join(cataloged, ", "));
  return Error::NotFound("unknown model '{}'; known ids: {}", id, known);
}

}  // namespace tenzro::catalog
