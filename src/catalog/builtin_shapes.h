// tenzro catalog: the built-in table of well-known MoE model shapes.
//
// Values come from each model's Hugging Face config.json (layer count,
// hidden size, experts, top-k, expert / shared FFN widths, attention layout,
// router). They let `tenzro moe catalog-shape --model ID` answer without a
// checkpoint; a checkpoint, when given or cataloged, always wins
// (catalog.h ResolveShape). Ids are lower-case.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "catalog/model_shape.h"
#include "core/result.h"

namespace tenzro::catalog {

// Ids of the built-in shapes, in table order.
std::vector<std::string> BuiltinIds();

// The built-in shape for `id` (case-insensitive). kNotFound listing the
// known ids when absent.
Result<ModelShape> BuiltinShape(std::string_view id);

}  // namespace tenzro::catalog
