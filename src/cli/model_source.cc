#include "cli/model_source.h"

#include <climits>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "blob/blob_store.h"
#include "blob/blob_uri.h"
#include "catalog/catalog.h"

namespace tenzro::cli {

Result<std::string> ResolveCheckpointPath(const Globals& g, const std::string& model) {
  if (model.empty()) return Error::InvalidArgument("--model is empty: give a model id or a checkpoint path");
  TENZRO_TRY(catalog::Catalog cat, catalog::Catalog::Load(DataDir(g)));
  if (catalog::NormalizeModelId(model)) {
    if (const catalog::CatalogEntry* e = cat.Lookup(model)) return e->checkpoint;
  }
  std::error_code ec;
  if (std::filesystem::exists(model, ec)) {
    auto abs = std::filesystem::absolute(model, ec);
    return ec ? model : abs.string();
  }
  std::vector<std::string> ids = cat.Ids();
  return Error::NotFound("model \"{}\" is neither a cataloged id ({}) nor an existing checkpoint path", model,
                         ids.empty() ? "the catalog is empty; add one with tenzro moe catalog-add"
                                     : fmt::format("known: {}", fmt::join(ids, ", ")));
}

Result<std::string> ResolveModelFile(const Globals& g, const std::string& model) {
  if (model.rfind("tenzro://", 0) != 0) return ResolveCheckpointPath(g, model);
  TENZRO_TRY(blob::Blake3Hash hash, blob::ParseHashOrUri(model));
  TENZRO_TRY(auto store, blob::BlobStore::Open(DataDir(g) + "/blobs"));
  std::string path = store->DataPath(hash);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return Error::NotFound("{}: not in this node's blob store ({}); fetch it with tenzro blob get", model,
                           DataDir(g) + "/blobs");
  return path;
}

Result<std::vector<int32_t>> ParseTokenIds(const std::string& list, std::string_view flag) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(pos, end - pos);
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty() && end == list.size() && ids.empty() && pos == 0) break;  // "" -> no ids
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 0 || v > INT32_MAX)
      return Error::InvalidArgument("{}: \"{}\" is not a token id (give e.g. 1,2,3)", flag, item);
    ids.push_back(static_cast<int32_t>(v));
    pos = end + 1;
  }
  return ids;
}

}  // namespace tenzro::cli
