// tenzro format: safetensors constants and dtypes (docs/formats/safetensors.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "quant/types.h"

namespace tenzro::format {

// The reference implementation refuses headers over 100 MB.
inline constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;
inline constexpr int kSafetensorsMaxJsonDepth = 8;
inline constexpr uint32_t kSafetensorsMaxDims = 8;
inline constexpr std::string_view kSafetensorsMetadataKey = "__metadata__";
inline constexpr std::string_view kSafetensorsIndexName = "model.safetensors.index.json";

enum class StDtype : uint8_t {
  kBool, kU8, kI8, kF8E4M3, kF8E5M2, kI16, kU16, kF16, kBF16, kI32, kU32, kF32, kI64, kU64, kF64,
};

// "F32", "BF16", "F8_E4M3", ... as spelled in headers.
std::string_view StDtypeName(StDtype d);
std::optional<StDtype> ParseStDtype(std::string_view name);
// Bytes per element.
uint32_t StDtypeSize(StDtype d);
// The ggml type with the same element encoding: F32/F16/BF16/F64/I8/I16/I32/I64;
// nullopt for the others (U8, BOOL, U16..U64, F8_*).
std::optional<quant::GgmlType> StDtypeToGgml(StDtype d);

}  // namespace tenzro::format
