// tenzro catalog: JSON encoding of a ModelShape.
//
// The object is the "shape" member of both the catalog file and the
// `tenzro moe catalog-shape --json` document; every field is specified in
// docs/formats/catalog.md. Type names use ggml's spelling ("q4_K", "q6_K").
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "catalog/model_shape.h"
#include "core/result.h"

namespace tenzro::catalog {

nlohmann::json ShapeToJson(const ModelShape& s);

// Decodes and validates (ModelShape::Validate). kCorruption naming
// `context` and the field when a member is missing, of the wrong type or
// out of range.
Result<ModelShape> ShapeFromJson(const nlohmann::json& j, std::string_view context);

}  // namespace tenzro::catalog
