// tenzro catalog: the `tenzro moe catalog-shape` report, as text and JSON.
//
// Kept out of the CLI so it is tested as pure logic. The JSON document
// (schema_version 1) is specified in docs/formats/catalog.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "catalog/expert_bytes.h"
#include "core/result.h"

namespace tenzro::catalog {

inline constexpr int kShapeReportSchemaVersion = 1;

struct ShapeReport {
  ResolvedShape resolved;
  std::vector<FormatBytes> formats;          // ReportFormats() order
  std::optional<ExpertShare> share;
  std::optional<uint64_t> budget;
};

// Computes the per-format bytes (and fits, with a budget).
// kInvalidArgument when budget == 0.
Result<ShapeReport> BuildShapeReport(ResolvedShape resolved, std::optional<uint64_t> budget);

std::string ShapeReportText(const ShapeReport& r);
nlohmann::json ShapeReportJson(const ShapeReport& r);

// The report for a checkpoint without routed-expert tensors.
std::string DenseReportText(const ModelShape& s);
nlohmann::json DenseReportJson(const ModelShape& s);

}  // namespace tenzro::catalog
