#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "format/safetensors_reader.h"

namespace tenzro::format {

Result<void> SafetensorsWriter::AddTensor(std::string name, StDtype dtype, std::vector<int64_t> shape, ByteSpan data) {
  if (name.empty() || name == kSafetensorsMetadataKey) return Error::InvalidArgument("bad tensor name '{}'", name);
  for (const auto& t : tensors_)
    if (t.name == name) return Error::InvalidArgument("duplicate tensor name '{}'", name);
  uint64_t nbytes = StDtypeSize(dtype);
  for (int64_t d : shape)
    if (d < 0 || MulOverflow(nbytes, static_cast<uint64_t>(d), &nbytes))
      return Error::InvalidArgument("tensor '{}': bad shape", name);
  if (nbytes != data.size())
    return Error::InvalidArgument("tensor '{}' ({} {}) needs {} bytes, got {}", name, StDtypeName(dtype),
                                  fmt::join(shape, "x"), nbytes, data.size());
  tensors_.push_back({std::move(name), dtype, std::move(shape), data});
  return Ok();
}

Result<Bytes> SafetensorsWriter::Header() const {
  // nlohmann::json::dump throws on invalid UTF-8; keep it inside the module.
  try {
    return HeaderOrThrow();
  } catch (const std::exception& e) {
    return Error::InvalidArgument("safetensors header: {}", e.what());
  }
}

Bytes SafetensorsWriter::HeaderOrThrow() const {
  nlohmann::json j = nlohmann::json::object();
  if (!metadata_.empty()) j[std::string(kSafetensorsMetadataKey)] = metadata_;
  uint64_t off = 0;
  for (const auto& t : tensors_) {
    j[t.name] = {{"dtype", std::string(StDtypeName(t.dtype))},
                 {"shape", t.shape},
                 {"data_offsets", {off, off + t.data.size()}}};
    off += t.data.size();
  }
  std::string text = j.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  Bytes out;
  ByteWriter w(&out);
  w.U64(text.size());
  w.Raw(text.data(), text.size());
  return out;
}

Result<Bytes> SafetensorsWriter::Serialize() const {
  TENZRO_TRY(Bytes out, Header());
  for (const auto& t : tensors_) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

Result<void> SafetensorsWriter::Write(const std::string& path) const {
  TENZRO_TRY(auto f, AtomicFileWriter::Create(path));
  TENZRO_TRY(Bytes header, Header());
  TENZRO_CHECK_OK(f->Append(header));
  for (const auto& t : tensors_) TENZRO_CHECK_OK(f->Append(t.data));
  return f->Commit();
}

}  // namespace tenzro::format
