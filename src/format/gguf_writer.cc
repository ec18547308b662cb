#include "format/gguf_writer.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/file.h"

namespace tenzro::format {

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 || alignment_ > kGgufMaxAlignment)
    alignment_ = kGgufDefaultAlignment;
  if (alignment_ != kGgufDefaultAlignment) Set(std::string(kGgufKeyAlignment), GgufValue::U32(alignment_));
}

void GgufWriter::Set(std::string key, GgufValue value) {
  for (auto& [k, v] : kv_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  kv_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::Remove(std::string_view key) {
  kv_.erase(std::remove_if(kv_.begin(), kv_.end(), [&](const auto& p) { return p.first == key; }), kv_.end());
}

Result<void> GgufWriter::AddTensor(std::string name, quant::GgmlType type, std::vector<int64_t> ne, ByteSpan data) {
  if (name.empty() || name.size() > kGgufMaxNameLength)
    return Error::InvalidArgument("tensor name '{}' must be 1..{} bytes (llama.cpp limit)", name, kGgufMaxNameLength);
  for (const auto& t : tensors_)
    if (t.name == name) return Error::InvalidArgument("duplicate tensor name '{}'", name);
  if (ne.size() > kGgufMaxDims) return Error::InvalidArgument("tensor '{}' has {} dims, at most 4", name, ne.size());
  uint64_t rows = 1;
  for (size_t j = 0; j < ne.size(); ++j) {
    if (ne[j] < 0) return Error::InvalidArgument("tensor '{}' ne[{}] = {} is negative", name, j, ne[j]);
    if (j > 0 && MulOverflow(rows, static_cast<uint64_t>(ne[j]), &rows))
      return Error::InvalidArgument("tensor '{}' is too large", name);
  }
  auto row_bytes = quant::RowBytes(type, ne.empty() ? 1 : ne[0]);
  if (!row_bytes) return row_bytes.error().WithContext(fmt::format("tensor '{}'", name));
  uint64_t nbytes;
  if (MulOverflow(*row_bytes, rows, &nbytes)) return Error::InvalidArgument("tensor '{}' is too large", name);
  if (nbytes != data.size())
    return Error::InvalidArgument("tensor '{}' ({} {}) needs {} bytes, got {}", name, quant::TypeName(type),
                                  fmt::join(ne, "x"), nbytes, data.size());
  tensors_.push_back({std::move(name), type, std::move(ne), data});
  return Ok();
}

Bytes GgufWriter::Meta() const {
  Bytes out;
  ByteWriter w(&out);
  w.Raw(kGgufMagic, 4);
  w.U32(kGgufVersion);
  w.I64(static_cast<int64_t>(tensors_.size()));
  w.I64(static_cast<int64_t>(kv_.size()));
  for (const auto& [key, v] : kv_) {
    w.U64(key.size());
    w.Raw(key.data(), key.size());
    w.U32(static_cast<uint32_t>(v.type()));
    v.Encode(w);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    w.U64(t.name.size());
    w.Raw(t.name.data(), t.name.size());
    w.U32(static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) w.I64(n);
    w.U32(static_cast<uint32_t>(t.type));
    w.U64(offset);
    offset += Padded(t.data.size());
  }
  if (!tensors_.empty()) w.Zeros(Padded(out.size()) - out.size());
  return out;
}

Result<Bytes> GgufWriter::Serialize() const {
  Bytes out = Meta();
  uint64_t total = out.size();
  for (const auto& t : tensors_) total += Padded(t.data.size());
  out.reserve(total);  // one allocation: large images are page-fault bound otherwise
  for (const auto& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize(Padded(out.size()), 0);
  }
  return out;
}

Result<void> GgufWriter::Write(const std::string& path) const {
  TENZRO_TRY(auto f, AtomicFileWriter::Create(path));
  TENZRO_CHECK_OK(f->Append(Meta()));
  static const uint8_t kZeros[64] = {};
  for (const auto& t : tensors_) {
    TENZRO_CHECK_OK(f->Append(t.data));
    uint64_t pad = Padded(t.data.size()) - t.data.size();
    while (pad > 0) {
      uint64_t n = std::min<uint64_t>(pad, sizeof(kZeros));
      TENZRO_CHECK_OK(f->Append(kZeros, n));
      pad -= n;
    }
  }
  return f->Commit();
}

std::string GgufSplitPath(std::string_view prefix, int split_no, int split_count) {
  return fmt::format("{}-{:05d}-of-{:05d}.gguf", prefix, split_no + 1, split_count);
}

Result<std::vector<std::string>> WriteGgufSplit(const GgufWriter& w, std::string_view prefix, int split_count) {
  const auto& all = w.tensor_list();
  if (split_count < 1 || static_cast<size_t>(split_count) > std::max<size_t>(1, all.size()))
    return Error::InvalidArgument("cannot split {} tensors into {} files", all.size(), split_count);
  std::vector<std::string> paths;
  for (int s = 0; s < split_count; ++s) {
    GgufWriter part(w.alignment());
    if (s == 0)
      for (const auto& [k, v] : w.kv()) part.Set(k, v);
    part.Set(std::string(kGgufKeySplitNo), GgufValue::U16(static_cast<uint16_t>(s)));
    part.Set(std::string(kGgufKeySplitCount), GgufValue::U16(static_cast<uint16_t>(split_count)));
    part.Set(std::string(kGgufKeySplitTensors), GgufValue::I32(static_cast<int32_t>(all.size())));
    size_t begin = all.size() * s / split_count, end = all.size() * (s + 1) / split_count;
    for (size_t i = begin; i < end; ++i) TENZRO_CHECK_OK(part.AddTensor(all[i].name, all[i].type, all[i].ne, all[i].data));
    std::string path = GgufSplitPath(prefix, s, split_count);
    TENZRO_CHECK_OK(part.Write(path));
    paths.push_back(std::move(path));
  }
  return paths;
}

}  // namespace tenzro::format
