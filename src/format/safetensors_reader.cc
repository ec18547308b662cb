#include "format/safetensors_reader.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tenzro::format {
namespace {

struct DtypeInfo {
  StDtype dtype;
  std::string_view name;
  uint32_t size;
};
constexpr DtypeInfo kDtypes[] = {
    {StDtype::kBool, "BOOL", 1},      {StDtype::kU8, "U8", 1},    {StDtype::kI8, "I8", 1},
    {StDtype::kF8E4M3, "F8_E4M3", 1}, {StDtype::kF8E5M2, "F8_E5M2", 1},
    {StDtype::kI16, "I16", 2},        {StDtype::kU16, "U16", 2},  {StDtype::kF16, "F16", 2},
    {StDtype::kBF16, "BF16", 2},      {StDtype::kI32, "I32", 4},  {StDtype::kU32, "U32", 4},
    {StDtype::kF32, "F32", 4},        {StDtype::kI64, "I64", 8},  {StDtype::kU64, "U64", 8},
    {StDtype::kF64, "F64", 8},
};

// Rejects JSON nested deeper than a safetensors header can legitimately be,
// before the parser sees it (bounds recursion and memory on hostile input).
bool DepthOk(std::string_view s, int max_depth) {
  int depth = 0;
  bool in_str = false, esc = false;
  for (char c : s) {
    if (in_str) {
      if (esc) esc = false;
      else if (c == '\\') esc = true;
      else if (c == '"') in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

}  // namespace

std::string_view StDtypeName(StDtype d) { return kDtypes[static_cast<int>(d)].name; }

std::optional<StDtype> ParseStDtype(std::string_view name) {
  for (const auto& d : kDtypes)
    if (d.name == name) return d.dtype;
  return std::nullopt;
}

uint32_t StDtypeSize(StDtype d) { return kDtypes[static_cast<int>(d)].size; }

std::optional<quant::GgmlType> StDtypeToGgml(StDtype d) {
  switch (d) {
    case StDtype::kF32: return quant::GgmlType::F32;
    case StDtype::kF16: return quant::GgmlType::F16;
    case StDtype::kBF16: return quant::GgmlType::BF16;
    case StDtype::kF64: return quant::GgmlType::F64;
    case StDtype::kI8: return quant::GgmlType::I8;
    case StDtype::kI16: return quant::GgmlType::I16;
    case StDtype::kI32: return quant::GgmlType::I32;
    case StDtype::kI64: return quant::GgmlType::I64;
    default: return std::nullopt;
  }
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  TENZRO_TRY(auto map, MappedFile::Open(path));
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->map_ = std::move(map);
  f->data_ = f->map_->bytes();
  f->path_ = path;
  TENZRO_CHECK_OK(f->ParseAll());
  return f;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Parse(ByteSpan data, std::string name) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->data_ = data;
  f->path_ = std::move(name);
  TENZRO_CHECK_OK(f->ParseAll());
  return f;
}

const SafetensorsTensor* SafetensorsFile::FindTensor(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Result<void> SafetensorsFile::ParseAll() {
  ByteReader r(data_, path_);
  TENZRO_TRY(uint64_t n, r.U64("header size"));
  if (n > kSafetensorsMaxHeader)
    return r.Corrupt("header size", fmt::format("{} bytes exceeds the limit {}", n, kSafetensorsMaxHeader));
  if (n > r.remaining())
    return r.Corrupt("header size", fmt::format("{} bytes runs past the end of the file ({} bytes left)", n,
                                                r.remaining()));
  TENZRO_TRY(ByteSpan hb, r.Take(n, "header"));
  data_offset_ = 8 + n;
  std::string_view text(reinterpret_cast<const char*>(hb.data()), hb.size());
  if (text.empty() || text[0] != '{') return Error::Corruption("{}: header: not a JSON object", path_);
  if (!DepthOk(text, kSafetensorsMaxJsonDepth))
    return Error::Corruption("{}: header: JSON nested deeper than {}", path_, kSafetensorsMaxJsonDepth);
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Error::Corruption("{}: header: not valid JSON", path_);

  const uint64_t data_size = data_.size() - data_offset_;
  for (const auto& [name, v] : j.items()) {
    if (name == kSafetensorsMetadataKey) {
      if (!v.is_object()) return Error::Corruption("{}: header: __metadata__ is not an object", path_);
      for (const auto& [k, mv] : v.items()) {
        if (!mv.is_string()) return Error::Corruption("{}: header: __metadata__ '{}' is not a string", path_, k);
        metadata_[k] = mv.get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) return Error::Corruption("{}: tensor '{}': entry is not an object", path_, name);
    SafetensorsTensor t;
    t.name = name;
    auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) return Error::Corruption("{}: tensor '{}': missing dtype", path_, name);
    auto d = ParseStDtype(dt->get_ref<const std::string&>());
    if (!d)
      return Error::Unsupported("{}: tensor '{}': unknown dtype '{}'", path_, name, dt->get_ref<const std::string&>());
    t.dtype = *d;
    auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array()) return Error::Corruption("{}: tensor '{}': missing shape", path_, name);
    if (sh->size() > kSafetensorsMaxDims)
      return Error::Corruption("{}: tensor '{}': shape has {} dims, at most {}", path_, name, sh->size(),
                               kSafetensorsMaxDims);
    uint64_t nbytes = StDtypeSize(t.dtype);
    for (const auto& dim : *sh) {
      if (!dim.is_number_unsigned() || dim.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        return Error::Corruption("{}: tensor '{}': shape entry {} is not a non-negative integer", path_, name,
                                 dim.dump());
      uint64_t x = dim.get<uint64_t>();
      if (MulOverflow(nbytes, x, &nbytes))
        return Error::Corruption("{}: tensor '{}': shape size overflows", path_, name);
      t.shape.push_back(static_cast<int64_t>(x));
    }
    auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      return Error::Corruption("{}: tensor '{}': data_offsets must be two non-negative integers", path_, name);
    t.begin = (*off)[0].get<uint64_t>();
    t.end = (*off)[1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_size)
      return Error::Corruption("{}: tensor '{}': data_offsets [{}, {}] outside the data section ({} bytes)", path_,
                               name, t.begin, t.end, data_size);
    if (t.end - t.begin != nbytes)
      return Error::Corruption("{}: tensor '{}': data_offsets span {} bytes but {} {} needs {}", path_, name,
                               t.end - t.begin, StDtypeName(t.dtype), fmt::join(t.shape, "x"), nbytes);
    tensors_.push_back(std::move(t));
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expect = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    if (t.begin < expect)
      return Error::Corruption("{}: tensor '{}': data_offsets [{}, {}] overlap tensor '{}'", path_, t.name, t.begin,
                               t.end, tensors_[i - 1].name);
    if (t.begin > expect)
      return Error::Corruption("{}: tensor '{}': hole in the data section before offset {}", path_, t.name, t.begin);
    expect = t.end;
    index_.emplace(t.name, i);
  }
  if (expect != data_size)
    return Error::Corruption("{}: data section has {} bytes but the tensors cover {}", path_, data_size, expect);
  return Ok();
}

}  // namespace tenzro::format
