#include "cli/model_source.h"

#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

}  // namespace tenzro::cli
