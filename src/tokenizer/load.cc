#include "tokenizer/load.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/file.h"
#include "format/gguf_format.h"
#include "format/gguf_reader.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_vocab.h"

namespace tenzro::tokenizer {
namespace {

namespace fs = std::filesystem;

bool StartsWithGgufMagic(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::memcmp(magic, format::kGgufMagic, 4) == 0;
}

// A tokenizer.json of a real model is ~10 MB; refuse anything absurd.
constexpr uint64_t kMaxJsonBytes = 256ull << 20;

Result<std::unique_ptr<Tokenizer>> FromJsonFile(const fs::path& json_path) {
  TENZRO_TRY(std::string text, ReadTextFile(json_path.string(), kMaxJsonBytes));
  std::string config;
  fs::path cfg = json_path.parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (fs::exists(cfg, ec)) {
    TENZRO_TRY(config, ReadTextFile(cfg.string(), kMaxJsonBytes));
  }
  return TokenizerFromHfJson(text, config, json_path.string());
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Error::NotFound("{}: no such file or directory", path);
  fs::path p(path);
  if (fs::is_directory(p, ec)) {
    if (!fs::exists(p / "tokenizer.json", ec)) return Error::NotFound("{}: no tokenizer.json in the directory", path);
    return FromJsonFile(p / "tokenizer.json");
  }
  if (p.extension() == ".json") return FromJsonFile(p);
  if (p.extension() == ".gguf") {
    TENZRO_TRY(auto gguf, format::GgufFile::Open(path));
    return TokenizerFromGguf(*gguf);
  }
  if (p.extension() == ".safetensors") {
    fs::path beside = p.parent_path() / "tokenizer.json";
    if (!fs::exists(beside, ec)) return Error::NotFound("{}: no tokenizer.json beside the checkpoint", path);
    return FromJsonFile(beside);
  }
  // A blob store data file (a spine blob, <hash>.data): one that starts with
  // the GGUF magic is a GGUF, as format::Checkpoint::Open reads it.
  if (StartsWithGgufMagic(path)) {
    TENZRO_TRY(auto gguf, format::GgufFile::Open(path));
    return TokenizerFromGguf(*gguf);
  }
  return Error::InvalidArgument("{}: not a .gguf, .safetensors, tokenizer.json or checkpoint directory", path);
}

}  // namespace tenzro::tokenizer
