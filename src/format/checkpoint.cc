// Checkpoint::Open: resolves a path to GGUF parts or safetensors shards.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "format/checkpoint_open.h"
#include "format/gguf_writer.h"

namespace tenzro::format {
namespace {

namespace fs = std::filesystem;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool StartsWithGgufMagic(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::memcmp(magic, kGgufMagic, 4) == 0;
}

// "dir/name-00002-of-00003.gguf" -> ("dir/name", 3).
bool ParseSplitName(const std::string& path, std::string* prefix, int* count) {
  static const std::regex kSplit(R"((.*)-([0-9]{5})-of-([0-9]{5})\.gguf)");
  std::smatch m;
  if (!std::regex_match(path, m, kSplit)) return false;
  int no = std::stoi(m[2].str()), n = std::stoi(m[3].str());
  if (no < 1 || n < 1 || no > n) return false;
  *prefix = m[1].str();
  *count = n;
  return true;
}

Result<std::unique_ptr<Checkpoint>> OpenGguf(const std::string& path) {
  std::vector<std::unique_ptr<GgufFile>> parts;
  std::string prefix;
  int count;
  if (ParseSplitName(path, &prefix, &count)) {
    for (int i = 0; i < count; ++i) {
      std::string part = GgufSplitPath(prefix, i, count);
      if (!PathExists(part)) return Error::NotFound("{}: split part {} of {} is missing", part, i + 1, count);
      TENZRO_TRY(auto f, GgufFile::Open(part));
      parts.push_back(std::move(f));
    }
  } else {
    TENZRO_TRY(auto f, GgufFile::Open(path));
    if (const GgufValue* c = f->Find(kGgufKeySplitCount); c && c->AsInt().value_or(1) > 1)
      return Error::InvalidArgument("{}: holds one part of a {}-way split but is not named <name>-0000i-of-0000N.gguf",
                                    path, *c->AsInt());
    parts.push_back(std::move(f));
  }
  return MakeGgufCheckpoint(std::move(parts));
}

// config.json beside the weights, or "" when absent.
Result<std::string> ReadConfig(const fs::path& dir) {
  std::string p = (dir / "config.json").string();
  if (!PathExists(p)) return std::string();
  return ReadTextFile(p);
}

Result<std::unique_ptr<Checkpoint>> OpenShards(const std::vector<std::string>& paths, const fs::path& dir) {
  std::vector<std::unique_ptr<SafetensorsFile>> shards;
  for (const auto& p : paths) {
    TENZRO_TRY(auto f, SafetensorsFile::Open(p));
    shards.push_back(std::move(f));
  }
  TENZRO_TRY(std::string config, ReadConfig(dir));
  return MakeSafetensorsCheckpoint(std::move(shards), config, (dir / "config.json").string());
}

Result<std::unique_ptr<Checkpoint>> OpenIndex(const std::string& path) {
  TENZRO_TRY(std::string text, ReadTextFile(path));
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Error::Corruption("{}: not a JSON object", path);
  auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object()) return Error::Corruption("{}: weight_map missing or not an object", path);
  fs::path dir = fs::path(path).parent_path();
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (const auto& [name, file] : wm->items()) {
    if (!file.is_string()) return Error::Corruption("{}: weight_map['{}'] is not a string", path, name);
    const std::string& f = file.get_ref<const std::string&>();
    fs::path fp(f);
    if (f.empty() || fp.is_absolute() || std::any_of(fp.begin(), fp.end(), [](const fs::path& c) { return c == ".."; }))
      return Error::Corruption("{}: weight_map['{}'] = '{}' is not a file inside the directory", path, name, f);
    if (seen.insert(f).second) files.push_back((dir / fp).string());
  }
  std::sort(files.begin(), files.end());
  TENZRO_TRY(auto ckpt, OpenShards(files, dir));
  for (const auto& [name, file] : wm->items()) {
    const TensorRef* t = ckpt->FindTensor(name);
    std::string want = (dir / fs::path(file.get<std::string>())).string();
    if (!t) return Error::Corruption("{}: weight_map names '{}' but {} does not hold it", path, name, want);
    if (t->file != want)
      return Error::Corruption("{}: weight_map puts '{}' in {} but it is in {}", path, name, want, t->file);
  }
  return ckpt;
}

Result<std::unique_ptr<Checkpoint>> OpenDirectory(const std::string& path) {
  fs::path dir(path);
  if (PathExists((dir / kSafetensorsIndexName).string())) return OpenIndex((dir / kSafetensorsIndexName).string());
  std::vector<std::string> st, gguf;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    std::string p = e.path().string();
    if (EndsWith(p, ".safetensors")) st.push_back(p);
    if (EndsWith(p, ".gguf")) gguf.push_back(p);
  }
  if (ec) return Error::FromErrno(ec.value(), path);
  std::sort(st.begin(), st.end());
  if (!st.empty()) return OpenShards(st, dir);
  // Collapse split sets to their first part.
  std::set<std::string> models;
  for (const auto& p : gguf) {
    std::string prefix;
    int count;
    models.insert(ParseSplitName(p, &prefix, &count) ? GgufSplitPath(prefix, 0, count) : p);
  }
  if (models.size() == 1) return OpenGguf(*models.begin());
  if (models.empty()) return Error::NotFound("{}: no .gguf, .safetensors or {} inside", path, kSafetensorsIndexName);
  return Error::InvalidArgument("{}: holds {} GGUF models ({}); name one", path, models.size(),
                                fmt::join(models, ", "));
}

}  // namespace

Result<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& path) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    // A split set may be named by a part that is missing; report that part.
    return Error::NotFound("{}: no such file or directory", path);
  }
  if (fs::is_directory(st)) return OpenDirectory(path);
  if (EndsWith(path, ".gguf")) return OpenGguf(path);
  if (EndsWith(path, ".safetensors"))
    return OpenShards({path}, fs::path(path).parent_path());
  if (EndsWith(path, ".json")) return OpenIndex(path);
  // Content-addressed blobs (blob store data files) have no extension: a
  // single file that starts with the GGUF magic is a GGUF.
  if (StartsWithGgufMagic(path)) return OpenGguf(path);
  return Error::InvalidArgument("{}: not a .gguf, .safetensors, index .json or directory", path);
}

}  // namespace tenzro::format
