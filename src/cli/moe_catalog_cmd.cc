// `tenzro moe catalog-shape | catalog-add | catalog-list`: model shapes and
// the model-id -> checkpoint catalog (catalog/catalog.h,
// docs/formats/catalog.md).
#include <filesystem>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "catalog/builtin_shapes.h"
#include "catalog/catalog.h"
#include "catalog/checkpoint_shape.h"
#include "catalog/shape_report.h"
#include "cli/command.h"
#include "core/bytes.h"

namespace tenzro::cli {
namespace {

struct ShapeArgs {
  std::string model;
  std::string checkpoint;
  std::string budget;
  bool json = false;
};

Result<void> RunShape(const ShapeArgs& a, const Globals& g) {
  if (a.model.empty() && a.checkpoint.empty())
    return Error::InvalidArgument("give --model ID, --checkpoint PATH, or both");
  std::optional<uint64_t> budget;
  if (!a.budget.empty()) {
    auto b = ParseByteSize(a.budget);
    if (!b) return b.error().WithContext("--budget");
    if (*b == 0) return Error::InvalidArgument("--budget must be greater than 0");
    budget = *b;
  }
  catalog::ResolvedShape resolved;
  if (!a.checkpoint.empty()) {
    std::string id = a.model.empty() ? std::filesystem::path(a.checkpoint).stem().string() : a.model;
    if (auto norm = catalog::NormalizeModelId(id)) id = *norm;
    TENZRO_TRY(catalog::CheckpointInspection ins, catalog::InspectCheckpointFile(a.checkpoint, id));
    if (!ins.moe) {  // a dense model is an answer, not an error (exit 0)
      if (a.json) fmt::print("{}\n", catalog::DenseReportJson(ins.shape).dump(2));
      else fmt::print("{}", catalog::DenseReportText(ins.shape));
      return Ok();
    }
    resolved = {std::move(ins.shape), catalog::ShapeSource::kCheckpoint};
  } else {
    TENZRO_TRY(resolved, catalog::ResolveShape(a.model, std::nullopt, DataDir(g)));
  }
  TENZRO_TRY(catalog::ShapeReport report, catalog::BuildShapeReport(std::move(resolved), budget));
  if (a.json) fmt::print("{}\n", catalog::ShapeReportJson(report).dump(2));
  else fmt::print("{}", catalog::ShapeReportText(report));
  return Ok();
}

void RegisterMoeCatalog(CLI::App& root, Globals& g) {
  CLI::App* moe = Group(root, "moe");

  auto shape = std::make_shared<ShapeArgs>();
  CLI::App* cs = moe->add_subcommand(
      "catalog-shape", "Show a MoE model's shape: layers, experts, top-k, widths, bytes per expert per format");
  cs->add_option("--model", shape->model, "Model id (built-in, or added with catalog-add)");
  cs->add_option("--checkpoint", shape->checkpoint, "GGUF / safetensors checkpoint to read the shape from");
  cs->add_option("--budget", shape->budget, "Memory budget (e.g. 256MiB): how many experts fit per format");
  cs->add_flag("--json", shape->json, "Print the JSON document (docs/formats/catalog.md)");
  cs->footer(
      "Example: tenzro moe catalog-shape --model qwen3.5-397b-a17b --budget 256MiB\n"
      "         tenzro moe catalog-shape --checkpoint ./model-Q4_K_M.gguf --json\n"
      "Shape source: --checkpoint, else the catalog entry, else the built-in table.\n"
      "A checkpoint without expert tensors prints \"dense model: no expert tensors\" and exits 0.");
  SetAction(cs, g, [shape, &g]() { return RunShape(*shape, g); });

  auto add_model = std::make_shared<std::string>();
  auto add_ckpt = std::make_shared<std::string>();
  auto add_json = std::make_shared<bool>(false);
  CLI::App* ca = moe->add_subcommand("catalog-add", "Record which checkpoint backs a model id (DATA_DIR/catalog.json)");
  ca->add_option("--model", *add_model, "Model id (lower-cased; letters, digits, . _ -)")->required();
  ca->add_option("--checkpoint", *add_ckpt, "GGUF / safetensors checkpoint (must contain expert tensors)")->required();
  ca->add_flag("--json", *add_json, "Print the stored entry as JSON");
  ca->footer("Example: tenzro moe catalog-add --model qwen3.5-122b-a10b --checkpoint /models/Qwen3.5-122B-A10B-Q4_K_M.gguf");
  SetAction(ca, g, [add_model, add_ckpt, add_json, &g]() -> Result<void> {
    TENZRO_TRY(catalog::Catalog cat, catalog::Catalog::Load(DataDir(g)));
    TENZRO_TRY(catalog::CatalogEntry e, cat.AddCheckpoint(*add_model, *add_ckpt));
    if (*add_json) {
      nlohmann::json j = cat.ToJson();
      for (auto& m : j["models"])
        if (m["id"] == e.id) fmt::print("{}\n", m.dump(2));
    } else {
      fmt::print("added {} -> {} ({})\n{}\n", e.id, e.checkpoint, e.format, catalog::DescribeLayout(e.shape));
    }
    return Ok();
  });

  auto list_json = std::make_shared<bool>(false);
  CLI::App* cl = moe->add_subcommand("catalog-list", "List cataloged models and the built-in shape ids");
  cl->add_flag("--json", *list_json, "Print the catalog document plus builtin_ids");
  cl->footer("Example: tenzro moe catalog-list --json");
  SetAction(cl, g, [list_json, &g]() -> Result<void> {
    TENZRO_TRY(catalog::Catalog cat, catalog::Catalog::Load(DataDir(g)));
    if (*list_json) {
      nlohmann::json j = cat.ToJson();
      j["builtin_ids"] = catalog::BuiltinIds();
      fmt::print("{}\n", j.dump(2));
      return Ok();
    }
    if (cat.entries().empty()) fmt::print("no cataloged models ({})\n", catalog::Catalog::PathIn(cat.data_dir()));
    for (const catalog::CatalogEntry& e : cat.entries())
      fmt::print("{:<24} {:<12} {:>4} layers {:>5} experts top-{:<3} {}\n", e.id, e.format, e.shape.n_layer,
                 e.shape.n_expert, e.shape.n_expert_used, e.checkpoint);
    fmt::print("built-in shapes: {}\n", fmt::join(catalog::BuiltinIds(), ", "));
    return Ok();
  });
}

}  // namespace

TENZRO_CLI_REGISTER(RegisterMoeCatalog);

}  // namespace tenzro::cli
