#include "format/gguf_reader.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace tenzro::format {

Result<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  TENZRO_TRY(auto map, MappedFile::Open(path));
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->map_ = std::move(map);
  f->data_ = f->map_->bytes();
  f->path_ = path;
  TENZRO_CHECK_OK(f->ParseAll());
  return f;
}

Result<std::unique_ptr<GgufFile>> GgufFile::Parse(ByteSpan data, std::string name) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->data_ = data;
  f->path_ = std::move(name);
  TENZRO_CHECK_OK(f->ParseAll());
  return f;
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<void> GgufFile::ParseAll() {
  ByteReader r(data_, path_);
  TENZRO_TRY(ByteSpan magic, r.Take(4, "magic"));
  if (std::memcmp(magic.data(), kGgufMagic, 4) != 0) {
    r.Seek(0, "magic").value();
    return r.Corrupt("magic", fmt::format("bad magic {}, expected \"GGUF\" (47475546)", ToHex(magic)));
  }
  TENZRO_TRY(version_, r.U32("version"));
  if (version_ < kGgufMinVersion || (version_ & 0xFFFF) == 0)
    return r.Corrupt("version", fmt::format("unsupported GGUF version {} (v1 and byte-swapped files are not read)", version_));
  if (version_ > kGgufVersion)
    return Error::Unsupported("{}: GGUF version {} is newer than the supported version {}", path_, version_, kGgufVersion);
  TENZRO_TRY(int64_t n_tensors, r.I64("tensor count"));
  TENZRO_TRY(int64_t n_kv, r.I64("kv count"));
  if (n_tensors < 0) return r.Corrupt("tensor count", fmt::format("negative count {}", n_tensors));
  if (n_kv < 0) return r.Corrupt("kv count", fmt::format("negative count {}", n_kv));
  // Smallest kv: 8-byte key length + 1 key byte + 4-byte type + 1 value byte.
  TENZRO_CHECK_OK(r.CheckCount(static_cast<uint64_t>(n_kv), 14, "kv count"));
  // Smallest tensor info: name length + 1 byte + n_dims + type + offset.
  TENZRO_CHECK_OK(r.CheckCount(static_cast<uint64_t>(n_tensors), 25, "tensor count"));

  kv_.reserve(static_cast<size_t>(n_kv));
  for (int64_t i = 0; i < n_kv; ++i) {
    std::string what = fmt::format("kv #{} key", i);
    TENZRO_TRY(uint64_t klen, r.U64(what));
    if (klen == 0 || klen > kGgufMaxStringLength)
      return r.Corrupt(what, fmt::format("key length {} is not in [1, {}]", klen, kGgufMaxStringLength));
    TENZRO_TRY(std::string key, r.String(klen, what));
    if (kv_index_.count(key)) return r.Corrupt(what, fmt::format("duplicate key '{}'", key));
    std::string vwhat = fmt::format("kv '{}'", key);
    TENZRO_TRY(uint32_t type_id, r.U32(vwhat + " type"));
    if (type_id >= kGgufTypeCount) return r.Corrupt(vwhat + " type", fmt::format("invalid value type {}", type_id));
    TENZRO_TRY(GgufValue v, GgufValue::Decode(r, static_cast<GgufType>(type_id), vwhat));
    kv_index_.emplace(key, kv_.size());
    kv_.emplace_back(std::move(key), std::move(v));
  }

  if (const GgufValue* a = Find(kGgufKeyAlignment)) {
    // gguf.cpp reads it with gguf_get_val_u32, which asserts the type.
    if (a->type() != GgufType::kUint32)
      return Error::Corruption("{}: {} has type {}, expected u32", path_, kGgufKeyAlignment, GgufTypeName(a->type()));
    alignment_ = static_cast<uint32_t>(*a->AsInt());
    if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 || alignment_ > kGgufMaxAlignment)
      return Error::Corruption("{}: {} = {} is not a power of two in [1, {}]", path_, kGgufKeyAlignment, alignment_,
                               kGgufMaxAlignment);
  }

  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (int64_t i = 0; i < n_tensors; ++i) TENZRO_CHECK_OK(ParseTensorInfo(r, static_cast<size_t>(i)));

  data_offset_ = r.offset();
  if (n_tensors > 0) {
    uint64_t pad = (alignment_ - data_offset_ % alignment_) % alignment_;
    data_offset_ += pad;
    if (data_offset_ > data_.size())
      return Error::Corruption("{}: data section at offset {} is past the end of the file ({} bytes)", path_,
                               data_offset_, data_.size());
  }
  return CheckLayout();
}

Result<void> GgufFile::ParseTensorInfo(ByteReader& r, size_t index) {
  std::string what = fmt::format("tensor #{} name", index);
  TENZRO_TRY(uint64_t nlen, r.U64(what));
  if (nlen == 0 || nlen > kGgufMaxStringLength)
    return r.Corrupt(what, fmt::format("name length {} is not in [1, {}]", nlen, kGgufMaxStringLength));
  GgufTensorInfo t;
  TENZRO_TRY(t.name, r.String(nlen, what));
  if (tensor_index_.count(t.name)) return r.Corrupt(what, fmt::format("duplicate tensor name '{}'", t.name));
  std::string tw = fmt::format("tensor '{}'", t.name);
  TENZRO_TRY(uint32_t n_dims, r.U32(tw + " n_dims"));
  if (n_dims > kGgufMaxDims) return r.Corrupt(tw + " n_dims", fmt::format("{} dims, at most {}", n_dims, kGgufMaxDims));
  t.ne.resize(n_dims);
  uint64_t nelements = 1;
  for (uint32_t j = 0; j < n_dims; ++j) {
    std::string dw = fmt::format("{} ne[{}]", tw, j);
    TENZRO_TRY(t.ne[j], r.I64(dw));
    if (t.ne[j] < 0) return r.Corrupt(dw, fmt::format("negative dimension {}", t.ne[j]));
    if (MulOverflow(nelements, static_cast<uint64_t>(t.ne[j]), &nelements) ||
        nelements > static_cast<uint64_t>(INT64_MAX))
      return r.Corrupt(dw, "element count overflows int64");
  }
  TENZRO_TRY(uint32_t type_id, r.U32(tw + " type"));
  const quant::TypeTraits* tt = quant::FindTraits(type_id);
  if (!tt) return r.Corrupt(tw + " type", fmt::format("unknown ggml type id {}", type_id));
  t.type = tt->type;
  int64_t ne0 = n_dims ? t.ne[0] : 1;
  if (ne0 % tt->block_elems != 0)
    return r.Corrupt(tw + " ne[0]", fmt::format("row length {} is not a multiple of the {} block size {}", ne0,
                                                tt->name, tt->block_elems));
  uint64_t rows = ne0 ? nelements / static_cast<uint64_t>(ne0) : 0;
  uint64_t row_bytes = static_cast<uint64_t>(ne0) / tt->block_elems * tt->block_bytes;
  if (ne0 == 0) {
    t.nbytes = 0;
  } else if (MulOverflow(row_bytes, rows, &t.nbytes)) {
    return r.Corrupt(tw, "byte size overflows");
  }
  TENZRO_TRY(t.offset, r.U64(tw + " offset"));
  tensor_index_.emplace(t.name, tensors_.size());
  tensors_.push_back(std::move(t));
  return Ok();
}

Result<void> GgufFile::CheckLayout() {
  uint64_t data_size = data_.size() - data_offset_;
  std::vector<size_t> order(tensors_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (const auto& t : tensors_) {
    if (t.offset % alignment_ != 0)
      return Error::Corruption("{}: tensor '{}' offset {} is not a multiple of the alignment {}", path_, t.name,
                               t.offset, alignment_);
    uint64_t end;
    if (AddOverflow(t.offset, t.nbytes, &end) || end > data_size)
      return Error::Corruption("{}: tensor '{}' bytes [{}, +{}) run past the end of the data section ({} bytes at "
                               "file offset {})",
                               path_, t.name, t.offset, t.nbytes, data_size, data_offset_);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors_[a].offset != tensors_[b].offset ? tensors_[a].offset < tensors_[b].offset : a < b;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const auto& prev = tensors_[order[k - 1]];
    const auto& cur = tensors_[order[k]];
    if (prev.nbytes && cur.nbytes && prev.offset + prev.nbytes > cur.offset)
      return Error::Corruption("{}: tensor '{}' at data offset {} overlaps tensor '{}' [{}, {})", path_, cur.name,
                               cur.offset, prev.name, prev.offset, prev.offset + prev.nbytes);
  }
  return Ok();
}

}  // namespace tenzro::format
