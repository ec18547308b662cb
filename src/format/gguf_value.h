// tenzro format: one GGUF metadata value (any of the 13 gguf types).
//
// Scalars keep their exact type and bits, so a value read from a file and
// written again is byte-identical. Arrays of numbers/bools are stored packed
// (little-endian, as on disk); arrays of strings and nested arrays as a list
// of values. ggml itself rejects nested arrays, so the writer only emits them
// when asked to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/bytes.h"
#include "core/result.h"
#include "format/gguf_format.h"

namespace tenzro::format {

class GgufValue {
 public:
  GgufValue() : GgufValue(GgufType::kUint32, 0) {}

  static GgufValue U8(uint8_t v) { return {GgufType::kUint8, v}; }
  static GgufValue I8(int8_t v) { return {GgufType::kInt8, static_cast<uint8_t>(v)}; }
  static GgufValue U16(uint16_t v) { return {GgufType::kUint16, v}; }
  static GgufValue I16(int16_t v) { return {GgufType::kInt16, static_cast<uint16_t>(v)}; }
  static GgufValue U32(uint32_t v) { return {GgufType::kUint32, v}; }
  static GgufValue I32(int32_t v) { return {GgufType::kInt32, static_cast<uint32_t>(v)}; }
  static GgufValue U64(uint64_t v) { return {GgufType::kUint64, v}; }
  static GgufValue I64(int64_t v) { return {GgufType::kInt64, static_cast<uint64_t>(v)}; }
  static GgufValue F32(float v);
  static GgufValue F64(double v);
  static GgufValue Bool(bool v) { return {GgufType::kBool, v ? 1u : 0u}; }
  static GgufValue Str(std::string v);
  // An array of numbers/bools of `elem` type from packed little-endian bytes.
  // kInvalidArgument if elem is not a fixed-size type or the size is ragged.
  static Result<GgufValue> PackedArray(GgufType elem, Bytes packed);
  // Arrays from values; integers are truncated to `elem`'s width.
  static GgufValue IntArray(GgufType elem, const std::vector<int64_t>& v);
  static GgufValue FloatArray(const std::vector<float>& v);
  static GgufValue StringArray(const std::vector<std::string>& v);
  // An array of arrays (all elements must be arrays).
  static GgufValue NestedArray(std::vector<GgufValue> arrays);

  GgufType type() const { return type_; }
  // Element type; meaningful only when type() == kArray.
  GgufType elem_type() const { return elem_; }
  bool is_array() const { return type_ == GgufType::kArray; }

  // Scalar accessors: nullopt when the value is of another kind.
  std::optional<int64_t> AsInt() const;     // any integer or bool (u64 > INT64_MAX: nullopt)
  std::optional<double> AsFloat() const;    // any number or bool
  const std::string* AsString() const;      // kString only

  // Array accessors.
  size_t size() const;                      // elements; 0 for scalars
  std::optional<std::vector<int64_t>> AsIntArray() const;   // integer/bool arrays
  std::optional<std::vector<double>> AsFloatArray() const;  // numeric arrays
  std::optional<std::vector<std::string>> AsStringArray() const;
  const std::vector<GgufValue>& items() const { return items_; }  // string / nested arrays
  const Bytes& packed() const { return raw_; }                    // numeric arrays

  // Human-readable rendering for dumps ("[1, 2, 3]", "\"llama\"", "3.5").
  std::string ToString(size_t max_items = 8) const;

  // Encodes the value body (no leading type id for scalars; arrays start
  // with their element type and count) as gguf.cpp writes it.
  void Encode(ByteWriter& w) const;
  // Decodes a value of `type`; `what` names the key for errors. Every count
  // is checked against the bytes left before anything is allocated.
  static Result<GgufValue> Decode(ByteReader& r, GgufType type, std::string_view what, int depth = 0);

  bool operator==(const GgufValue& o) const;

 private:
  GgufValue(GgufType t, uint64_t bits) : type_(t), elem_(GgufType::kUint8), bits_(bits) {}
  int64_t ScalarInt(GgufType t, uint64_t bits) const;
  std::optional<double> ElemFloat(size_t i) const;
  std::optional<int64_t> ElemInt(size_t i) const;

  GgufType type_;
  GgufType elem_;
  uint64_t bits_ = 0;              // scalar: the value's LE bits, zero-extended
  std::string str_;                // kString
  Bytes raw_;                      // packed numeric/bool array
  std::vector<GgufValue> items_;   // string arrays, nested arrays
};

}  // namespace tenzro::format
