// tenzro catalog: which checkpoint backs which model id, and the one place
// the rest of tenzro asks for a model's shape.
//
// The catalog file is DATA_DIR/catalog.json (docs/formats/catalog.md): a
// schema_version and one entry per model id with the checkpoint's absolute
// path and the shape detected when it was added. It is rewritten whole and
// atomically (core/file.h WriteFileAtomic), so readers see the old or the new
// file, never a torn one; two concurrent writers race (last one wins), so
// adds are meant to come from one CLI invocation at a time.
//
// Thread-safety: a Catalog is a plain value; no internal locking.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/model_shape.h"
#include "core/result.h"

namespace tenzro::catalog {

inline constexpr int kCatalogSchemaVersion = 1;
inline constexpr const char* kCatalogFileName = "catalog.json";

struct CatalogEntry {
  std::string id;          // lower-case
  std::string checkpoint;  // absolute path
  std::string format;      // "gguf" | "safetensors"
  int64_t added_unix = 0;  // seconds since the epoch
  ModelShape shape;        // as detected from the checkpoint
};

// Lower-cases `id` and checks it is 1-128 of [a-z0-9._-]; kInvalidArgument otherwise.
Result<std::string> NormalizeModelId(std::string_view id);

class Catalog {
 public:
  // DATA_DIR/catalog.json.
  static std::string PathIn(const std::string& data_dir);

  // Loads the catalog of `data_dir`; a missing file is an empty catalog.
  // kCorruption naming the file and field when it does not parse or a
  // shape is invalid; kUnsupported for a newer schema_version.
  static Result<Catalog> Load(const std::string& data_dir);

  const std::string& data_dir() const { return data_dir_; }
  // Sorted by id.
  const std::vector<CatalogEntry>& entries() const { return entries_; }
  std::vector<std::string> Ids() const;

  // The entry for `id` (case-insensitive), or nullptr.
  const CatalogEntry* Lookup(std::string_view id) const;

  // Inserts or replaces the entry with e.id (normalized).
  Result<void> Put(CatalogEntry e);
  // Removes `id`; false when it was absent.
  bool Remove(std::string_view id);

  // Writes the whole catalog atomically, creating data_dir if needed.
  Result<void> Save() const;

  // Opens `checkpoint` (format::Checkpoint), requires routed-expert tensors
  // (a dense model is kInvalidArgument "dense model: no expert tensors"),
  // then Put()s and Save()s the entry with the absolute path and the
  // detected shape. Returns the stored entry.
  Result<CatalogEntry> AddCheckpoint(std::string_view id, const std::string& checkpoint);

  nlohmann::json ToJson() const;

 private:
  explicit Catalog(std::string data_dir) : data_dir_(std::move(data_dir)) {}
  std::string data_dir_;
  std::vector<CatalogEntry> entries_;
};

// kManifest: a trusted model manifest (manifest/manifest_trust.h; never
// returned by ResolveShape, which knows no manifests).
enum class ShapeSource : uint8_t { kCheckpoint, kCatalog, kBuiltin, kManifest };
std::string_view ShapeSourceName(ShapeSource s);  // "checkpoint", "catalog", "builtin", "manifest"

struct ResolvedShape {
  ModelShape shape;
  ShapeSource source = ShapeSource::kBuiltin;
};

// The shape of model `id`: an explicit `checkpoint` wins (read from it, id
// attached), then the catalog entry in `data_dir` (its stored shape; empty
// data_dir skips the catalog), then the built-in table. kNotFound listing
// the known ids (built-in and cataloged) when none has it; a dense explicit
// checkpoint is kInvalidArgument.
Result<ResolvedShape> ResolveShape(std::string_view id, const std::optional<std::string>& checkpoint,
                                   const std::string& data_dir);

}  // namespace tenzro::catalog
