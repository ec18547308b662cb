// Checkpoint over one GGUF file or a llama.cpp split set.
#include <algorithm>

#include <fmt/format.h>

#include "format/checkpoint_base.h"
#include "format/checkpoint_open.h"

namespace tenzro::format {
namespace {

class GgufCheckpoint final : public CheckpointBase {
 public:
  CheckpointFormat format() const override { return CheckpointFormat::kGguf; }

  std::optional<std::string> GetString(std::string_view key) const override {
    const GgufValue* v = Find(key);
    if (!v || !v->AsString()) return std::nullopt;
    return *v->AsString();
  }
  std::optional<int64_t> GetInt(std::string_view key) const override {
    const GgufValue* v = Find(key);
    return v ? v->AsInt() : std::nullopt;
  }
  std::optional<double> GetFloat(std::string_view key) const override {
    const GgufValue* v = Find(key);
    return v ? v->AsFloat() : std::nullopt;
  }
  std::optional<std::vector<int64_t>> GetIntArray(std::string_view key) const override {
    const GgufValue* v = Find(key);
    return v ? v->AsIntArray() : std::nullopt;
  }
  std::string architecture() const override { return GetString(kGgufKeyArchitecture).value_or(""); }
  std::vector<std::string> MetadataKeys() const override {
    std::vector<std::string> keys;
    for (const auto& [k, v] : kv_) keys.push_back(k);
    return keys;
  }

  Result<void> Init(std::vector<std::unique_ptr<GgufFile>> parts);

 private:
  const GgufValue* Find(std::string_view key) const {
    auto it = kv_.find(key);
    return it == kv_.end() ? nullptr : &it->second;
  }

  std::vector<std::unique_ptr<GgufFile>> parts_;
  std::map<std::string, GgufValue, std::less<>> kv_;
};

Result<void> GgufCheckpoint::Init(std::vector<std::unique_ptr<GgufFile>> parts) {
  parts_ = std::move(parts);
  if (parts_.empty()) return Error::InvalidArgument("no GGUF files");
  const int n = static_cast<int>(parts_.size());
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) {
    const GgufFile& f = *parts_[i];
    const GgufValue* no = f.Find(kGgufKeySplitNo);
    const GgufValue* count = f.Find(kGgufKeySplitCount);
    if (n > 1 || (count && count->AsInt().value_or(1) != 1)) {
      if (!no || !count || !no->AsInt() || !count->AsInt())
        return Error::Corruption("{}: split part lacks integer {} / {}", f.path(), kGgufKeySplitNo, kGgufKeySplitCount);
      if (*count->AsInt() != n)
        return Error::Corruption("{}: {} = {} but {} parts were opened", f.path(), kGgufKeySplitCount,
                                 *count->AsInt(), n);
      if (*no->AsInt() != i)
        return Error::Corruption("{}: {} = {}, expected {}", f.path(), kGgufKeySplitNo, *no->AsInt(), i);
    }
    for (const auto& [k, v] : f.kv()) kv_.emplace(k, v);  // first part wins
    files_.push_back(f.path());
    for (const auto& t : f.tensors()) {
      TensorRef r;
      r.name = t.name;
      r.type = t.type;
      r.ne = t.ne;
      r.file = f.path();
      r.file_offset = f.data_offset() + t.offset;
      r.bytes = f.TensorBytes(t);
      r.dtype = std::string(quant::TypeName(t.type));
      tensors_.push_back(std::move(r));
    }
    total += f.tensors().size();
  }
  if (const GgufValue* c = parts_[0]->Find(kGgufKeySplitTensors)) {
    auto want = c->AsInt();
    if (!want || static_cast<uint64_t>(*want) != total)
      return Error::Corruption("{}: {} = {} but the parts hold {} tensors", parts_[0]->path(), kGgufKeySplitTensors,
                               c->ToString(), total);
  }
  return BuildIndex();
}

}  // namespace

Result<std::unique_ptr<Checkpoint>> MakeGgufCheckpoint(std::vector<std::unique_ptr<GgufFile>> parts) {
  auto c = std::make_unique<GgufCheckpoint>();
  TENZRO_CHECK_OK(c->Init(std::move(parts)));
  return std::unique_ptr<Checkpoint>(std::move(c));
}

}  // namespace tenzro::format
