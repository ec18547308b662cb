#include "format/gguf_value.h"

#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace tenzro::format {

std::string_view GgufTypeName(GgufType t) {
  static constexpr std::string_view kNames[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                                "bool", "str", "arr", "u64", "i64", "f64"};
  auto i = static_cast<uint32_t>(t);
  return i < kGgufTypeCount ? kNames[i] : "?";
}

namespace {

bool IsIntType(GgufType t) {
  switch (t) {
    case GgufType::kUint8: case GgufType::kInt8: case GgufType::kUint16: case GgufType::kInt16:
    case GgufType::kUint32: case GgufType::kInt32: case GgufType::kUint64: case GgufType::kInt64:
    case GgufType::kBool:
      return true;
    default:
      return false;
  }
}

}  // namespace

GgufValue GgufValue::F32(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return {GgufType::kFloat32, b};
}

GgufValue GgufValue::F64(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return {GgufType::kFloat64, b};
}

GgufValue GgufValue::Str(std::string v) {
  GgufValue g(GgufType::kString, 0);
  g.str_ = std::move(v);
  return g;
}

Result<GgufValue> GgufValue::PackedArray(GgufType elem, Bytes packed) {
  uint32_t sz = GgufTypeSize(elem);
  if (sz == 0) return Error::InvalidArgument("packed GGUF array of {} elements", GgufTypeName(elem));
  if (packed.size() % sz != 0)
    return Error::InvalidArgument("packed GGUF array of {}: {} bytes is not a multiple of {}", GgufTypeName(elem),
                                  packed.size(), sz);
  GgufValue g(GgufType::kArray, 0);
  g.elem_ = elem;
  g.raw_ = std::move(packed);
  return g;
}

GgufValue GgufValue::IntArray(GgufType elem, const std::vector<int64_t>& v) {
  uint32_t sz = GgufTypeSize(elem);
  if (sz == 0 || !IsIntType(elem)) { elem = GgufType::kInt64; sz = 8; }
  GgufValue g(GgufType::kArray, 0);
  g.elem_ = elem;
  g.raw_.resize(v.size() * sz);
  for (size_t i = 0; i < v.size(); ++i) std::memcpy(g.raw_.data() + i * sz, &v[i], sz);  // LE truncation
  return g;
}

GgufValue GgufValue::FloatArray(const std::vector<float>& v) {
  GgufValue g(GgufType::kArray, 0);
  g.elem_ = GgufType::kFloat32;
  g.raw_.resize(v.size() * 4);
  if (!v.empty()) std::memcpy(g.raw_.data(), v.data(), v.size() * 4);
  return g;
}

GgufValue GgufValue::StringArray(const std::vector<std::string>& v) {
  GgufValue g(GgufType::kArray, 0);
  g.elem_ = GgufType::kString;
  g.items_.reserve(v.size());
  for (const auto& s : v) g.items_.push_back(Str(s));
  return g;
}

GgufValue GgufValue::NestedArray(std::vector<GgufValue> arrays) {
  GgufValue g(GgufType::kArray, 0);
  g.elem_ = GgufType::kArray;
  g.items_ = std::move(arrays);
  return g;
}

int64_t GgufValue::ScalarInt(GgufType t, uint64_t b) const {
  switch (t) {
    case GgufType::kInt8: return static_cast<int8_t>(b);
    case GgufType::kInt16: return static_cast<int16_t>(b);
    case GgufType::kInt32: return static_cast<int32_t>(b);
    case GgufType::kInt64: return static_cast<int64_t>(b);
    case GgufType::kBool: return b != 0;
    default: return static_cast<int64_t>(b);  // unsigned types: caller checks u64 range
  }
}

std::optional<int64_t> GgufValue::AsInt() const {
  if (!IsIntType(type_)) return std::nullopt;
  if (type_ == GgufType::kUint64 && bits_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return ScalarInt(type_, bits_);
}

std::optional<double> GgufValue::AsFloat() const {
  if (type_ == GgufType::kFloat32) {
    float f;
    uint32_t b = static_cast<uint32_t>(bits_);
    std::memcpy(&f, &b, 4);
    return f;
  }
  if (type_ == GgufType::kFloat64) {
    double d;
    std::memcpy(&d, &bits_, 8);
    return d;
  }
  if (type_ == GgufType::kUint64) return static_cast<double>(bits_);
  if (IsIntType(type_)) return static_cast<double>(ScalarInt(type_, bits_));
  return std::nullopt;
}

const std::string* GgufValue::AsString() const { return type_ == GgufType::kString ? &str_ : nullptr; }

size_t GgufValue::size() const {
  if (!is_array()) return 0;
  uint32_t sz = GgufTypeSize(elem_);
  return sz ? raw_.size() / sz : items_.size();
}

std::optional<int64_t> GgufValue::ElemInt(size_t i) const {
  uint32_t sz = GgufTypeSize(elem_);
  uint64_t b = 0;
  std::memcpy(&b, raw_.data() + i * sz, sz);
  GgufValue v(elem_, b);
  return v.AsInt();
}

std::optional<double> GgufValue::ElemFloat(size_t i) const {
  uint32_t sz = GgufTypeSize(elem_);
  uint64_t b = 0;
  std::memcpy(&b, raw_.data() + i * sz, sz);
  GgufValue v(elem_, b);
  return v.AsFloat();
}

std::optional<std::vector<int64_t>> GgufValue::AsIntArray() const {
  if (!is_array() || !IsIntType(elem_)) return std::nullopt;
  std::vector<int64_t> out(size());
  for (size_t i = 0; i < out.size(); ++i) {
    auto v = ElemInt(i);
    if (!v) return std::nullopt;
    out[i] = *v;
  }
  return out;
}

std::optional<std::vector<double>> GgufValue::AsFloatArray() const {
  if (!is_array() || GgufTypeSize(elem_) == 0) return std::nullopt;
  std::vector<double> out(size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = ElemFloat(i).value_or(0);
  return out;
}

std::optional<std::vector<std::string>> GgufValue::AsStringArray() const {
  if (!is_array() || elem_ != GgufType::kString) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& v : items_) out.push_back(v.str_);
  return out;
}

std::string GgufValue::ToString(size_t max_items) const {
  if (type_ == GgufType::kString) return fmt::format("\"{}\"", str_);
  if (type_ == GgufType::kBool) return bits_ ? "true" : "false";
  if (type_ == GgufType::kFloat32 || type_ == GgufType::kFloat64) return fmt::format("{}", *AsFloat());
  if (type_ == GgufType::kUint64) return fmt::format("{}", bits_);
  if (!is_array()) return fmt::format("{}", *AsInt());
  std::string s = "[";
  size_t n = size();
  for (size_t i = 0; i < n && i < max_items; ++i) {
    if (i) s += ", ";
    if (GgufTypeSize(elem_)) {
      uint64_t b = 0;
      std::memcpy(&b, raw_.data() + i * GgufTypeSize(elem_), GgufTypeSize(elem_));
      s += GgufValue(elem_, b).ToString(max_items);
    } else {
      s += items_[i].ToString(max_items);
    }
  }
  if (n > max_items) s += fmt::format(", ... ({} items)", n);
  return s + "]";
}

void GgufValue::Encode(ByteWriter& w) const {
  if (type_ == GgufType::kString) {
    w.U64(str_.size());
    w.Raw(str_.data(), str_.size());
  } else if (type_ == GgufType::kArray) {
    w.U32(static_cast<uint32_t>(elem_));
    w.U64(size());
    if (GgufTypeSize(elem_)) {
      w.Raw(raw_.data(), raw_.size());
    } else {
      for (const auto& v : items_) v.Encode(w);
    }
  } else {
    w.Raw(&bits_, GgufTypeSize(type_));
  }
}

Result<GgufValue> GgufValue::Decode(ByteReader& r, GgufType type, std::string_view what, int depth) {
  if (type == GgufType::kString) {
    TENZRO_TRY(uint64_t n, r.U64(what));
    if (n > kGgufMaxStringLength)
      return r.Corrupt(what, fmt::format("string length {} exceeds the limit {}", n, kGgufMaxStringLength));
    TENZRO_TRY(std::string s, r.String(n, what));
    return Str(std::move(s));
  }
  if (type == GgufType::kArray) {
    if (depth >= kGgufMaxArrayDepth)
      return r.Corrupt(what, fmt::format("arrays nested deeper than {}", kGgufMaxArrayDepth));
    TENZRO_TRY(uint32_t elem_id, r.U32(what));
    if (elem_id >= kGgufTypeCount) return r.Corrupt(what, fmt::format("invalid array element type {}", elem_id));
    auto elem = static_cast<GgufType>(elem_id);
    TENZRO_TRY(uint64_t n, r.U64(what));
    if (n > kGgufMaxArrayElements)
      return r.Corrupt(what, fmt::format("array of {} elements exceeds the limit {}", n, kGgufMaxArrayElements));
    uint32_t sz = GgufTypeSize(elem);
    // Strings take at least their 8-byte length, nested arrays 12 bytes.
    TENZRO_CHECK_OK(r.CheckCount(n, sz ? sz : (elem == GgufType::kString ? 8 : 12), what));
    GgufValue g(GgufType::kArray, 0);
    g.elem_ = elem;
    if (sz) {
      TENZRO_TRY(ByteSpan b, r.Take(n * sz, what));
      g.raw_.assign(b.begin(), b.end());
      return g;
    }
    g.items_.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      TENZRO_TRY(GgufValue v, Decode(r, elem, what, depth + 1));
      g.items_.push_back(std::move(v));
    }
    return g;
  }
  uint32_t sz = GgufTypeSize(type);
  if (sz == 0) return r.Corrupt(what, fmt::format("invalid value type {}", static_cast<uint32_t>(type)));
  TENZRO_TRY(ByteSpan b, r.Take(sz, what));
  uint64_t bits = 0;
  std::memcpy(&bits, b.data(), sz);
  return GgufValue(type, bits);
}

bool GgufValue::operator==(const GgufValue& o) const {
  return type_ == o.type_ && (!is_array() || elem_ == o.elem_) && bits_ == o.bits_ && str_ == o.str_ &&
         raw_ == o.raw_ && items_ == o.items_;
}

}  // namespace tenzro::format
