// tenzro format: GGUF constants (see docs/formats/gguf.md).
//
// Values mirror ggml's gguf.h / gguf.cpp so that files written here are read
// by llama.cpp and files written by llama.cpp are read here.
#pragma once

#include <cstdint>
#include <string_view>

namespace tenzro::format {

inline constexpr char kGgufMagic[4] = {'G', 'G', 'U', 'F'};
inline constexpr uint32_t kGgufVersion = 3;       // written; 2 and 3 are read
inline constexpr uint32_t kGgufMinVersion = 2;
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr uint32_t kGgufMaxAlignment = 1u << 20;  // ggml's GGUF_MAX_ALIGNMENT
inline constexpr uint32_t kGgufMaxDims = 4;              // GGML_MAX_DIMS
inline constexpr size_t kGgufMaxNameLength = 63;         // GGML_MAX_NAME - 1 (llama.cpp limit; we write no longer)
inline constexpr uint64_t kGgufMaxStringLength = 64ull << 20;  // GGUF_MAX_STRING_LENGTH
inline constexpr uint64_t kGgufMaxArrayElements = 64ull << 20; // GGUF_MAX_ARRAY_ELEMENTS
inline constexpr int kGgufMaxArrayDepth = 8;             // nested arrays (ggml itself reads none)

inline constexpr std::string_view kGgufKeyAlignment = "general.alignment";
inline constexpr std::string_view kGgufKeyArchitecture = "general.architecture";
inline constexpr std::string_view kGgufKeySplitNo = "split.no";              // u16, 0-based
inline constexpr std::string_view kGgufKeySplitCount = "split.count";        // u16
inline constexpr std::string_view kGgufKeySplitTensors = "split.tensors.count";  // i32

// Value type ids (enum gguf_type).
enum class GgufType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};
inline constexpr uint32_t kGgufTypeCount = 13;

// Bytes of one scalar of `t`; 0 for kString and kArray (variable size).
inline constexpr uint32_t GgufTypeSize(GgufType t) {
  switch (t) {
    case GgufType::kUint8: case GgufType::kInt8: case GgufType::kBool: return 1;
    case GgufType::kUint16: case GgufType::kInt16: return 2;
    case GgufType::kUint32: case GgufType::kInt32: case GgufType::kFloat32: return 4;
    case GgufType::kUint64: case GgufType::kInt64: case GgufType::kFloat64: return 8;
    default: return 0;
  }
}
// "u8", "i32", "str", "arr", ... (ggml's names); "?" for unknown ids.
std::string_view GgufTypeName(GgufType t);

}  // namespace tenzro::format
