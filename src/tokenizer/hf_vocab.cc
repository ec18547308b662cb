#include "tokenizer/hf_vocab.h"

#include <nlohmann/json.hpp>

namespace tenzro::tokenizer {
namespace {

using json = nlohmann::json;

constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen35Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

bool IsNullOrEmpty(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() || (it->is_string() && it->get_ref<const std::string&>().empty()) ||
         (it->is_boolean() && !it->get<bool>());
}

Result<bool> Normalizer(const json& root, const std::string& src) {
  auto it = root.find("normalizer");
  if (it == root.end() || it->is_null()) return false;
  auto is_nfc = [](const json& n) { return n.is_object() && n.value("type", "") == "NFC"; };
  if (is_nfc(*it)) return true;
  if (it->is_object() && it->value("type", "") == "Sequence" && it->contains("normalizers") &&
      (*it)["normalizers"].is_array()) {
    bool all = true;
    for (const auto& n : (*it)["normalizers"]) all = all && is_nfc(n);
    if (all) return !(*it)["normalizers"].empty();
  }
  return Error::Unsupported("{}: normalizer {} is not supported (only NFC)", src, it->dump().substr(0, 200));
}

bool ByteLevelNoPrefix(const json& p) {
  return p.is_object() && p.value("type", "") == "ByteLevel" && !p.value("add_prefix_space", false);
}

Result<PreTokenizerKind> PreTokenizer(const json& root, const std::string& src) {
  auto it = root.find("pre_tokenizer");
  auto unsupported = [&]() -> Error {
    return Error::Unsupported("{}: pre_tokenizer {} is not supported (ByteLevel, or Split with Qwen2's / Qwen3.5's "
                              "regex then ByteLevel)",
                              src, it == root.end() ? "null" : it->dump().substr(0, 300));
  };
  if (it == root.end() || !it->is_object()) return unsupported();
  if (ByteLevelNoPrefix(*it) && it->value("use_regex", true)) return PreTokenizerKind::kGpt2;
  if (it->value("type", "") != "Sequence" || !it->contains("pretokenizers")) return unsupported();
  const json& seq = (*it)["pretokenizers"];
  if (!seq.is_array() || seq.size() != 2) return unsupported();
  const json& split = seq[0];
  if (!ByteLevelNoPrefix(seq[1]) || seq[1].value("use_regex", true)) return unsupported();
  if (!split.is_object() || split.value("type", "") != "Split" || split.value("invert", false) ||
      split.value("behavior", "") != "Isolated" || !split.contains("pattern") || !split["pattern"].is_object())
    return unsupported();
  std::string re = split["pattern"].value("Regex", "");
  if (re == kQwen2Regex) return PreTokenizerKind::kQwen2;
  if (re == kQwen35Regex) return PreTokenizerKind::kQwen35;
  return unsupported();
}

Result<void> PutToken(VocabSpec& spec, std::vector<bool>& set, int64_t id, const std::string& text, TokenType type,
                      const std::string& field) {
  if (id < 0 || id >= (1 << 24))
    return Error::Corruption("{}: {}: id {} out of range", spec.source, field, id);
  auto i = static_cast<size_t>(id);
  if (i >= spec.tokens.size()) {
    spec.tokens.resize(i + 1);
    spec.types.resize(i + 1, TokenType::kUndefined);
    set.resize(i + 1, false);
  }
  if (set[i] && spec.tokens[i] != text)
    return Error::Corruption("{}: {}: id {} is both \"{}\" and \"{}\"", spec.source, field, id, spec.tokens[i], text);
  spec.tokens[i] = text;
  spec.types[i] = type;
  set[i] = true;
  return Ok();
}

Result<void> Vocab(const json& model, VocabSpec& spec, std::vector<bool>& set) {
  if (!model.contains("vocab") || !model["vocab"].is_object())
    return Error::Corruption("{}: model.vocab is missing or not an object", spec.source);
  const json& vocab = model["vocab"];
  spec.tokens.reserve(vocab.size() + 64);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer())
      return Error::Corruption("{}: model.vocab[\"{}\"] is not an integer id", spec.source, it.key());
    TENZRO_CHECK_OK(PutToken(spec, set, it.value().get<int64_t>(), it.key(), TokenType::kNormal, "model.vocab"));
  }
  return Ok();
}

Result<void> Merges(const json& model, VocabSpec& spec) {
  auto it = model.find("merges");
  if (it == model.end() || it->is_null()) return Ok();
  if (!it->is_array()) return Error::Corruption("{}: model.merges is not an array", spec.source);
  spec.merges_field = "model.merges";
  spec.merges.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      size_t sp = s.size() > 1 ? s.find(' ', 1) : std::string::npos;
      if (sp == std::string::npos)
        return Error::Corruption("{}: model.merges[{}] (\"{}\") is not \"left right\"", spec.source, i, s);
      spec.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return Error::Corruption("{}: model.merges[{}] is neither \"a b\" nor [a, b]", spec.source, i);
    }
  }
  return Ok();
}

Result<void> AddedTokens(const json& root, VocabSpec& spec, std::vector<bool>& set) {
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return Ok();
  if (!it->is_array()) return Error::Corruption("{}: added_tokens is not an array", spec.source);
  for (size_t i = 0; i < it->size(); ++i) {
    const json& a = (*it)[i];
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
        !a["content"].is_string())
      return Error::Corruption("{}: added_tokens[{}] lacks an integer id or a string content", spec.source, i);
    for (const char* opt : {"lstrip", "rstrip", "single_word"})
      if (a.value(opt, false))
        return Error::Unsupported("{}: added_tokens[{}]: {} is not supported", spec.source, i, opt);
    TokenType type = a.value("special", false) ? TokenType::kControl : TokenType::kUserDefined;
    TENZRO_CHECK_OK(PutToken(spec, set, a["id"].get<int64_t>(), a["content"].get<std::string>(), type,
                             "added_tokens[" + std::to_string(i) + "]"));
  }
  return Ok();
}

// A special-token entry of tokenizer_config.json: "text", {"content": "text"} or null.
Result<int32_t> ConfigToken(const json& cfg, const char* key, const VocabSpec& spec) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return kNoToken;
  std::string text;
  if (it->is_string()) text = it->get<std::string>();
  else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) text = (*it)["content"];
  else return Error::Corruption("{}: tokenizer_config.json: {} is not a token", spec.source, key);
  for (size_t i = 0; i < spec.tokens.size(); ++i)
    if (spec.tokens[i] == text) return static_cast<int32_t>(i);
  return Error::Corruption("{}: tokenizer_config.json: {} \"{}\" is not in the vocabulary", spec.source, key, text);
}

Result<void> Config(std::string_view config_json, VocabSpec& spec) {
  if (config_json.empty()) {
    for (size_t i = 0; i < spec.tokens.size(); ++i)
      if (spec.tokens[i] == "<|endoftext|>") spec.eos = static_cast<int32_t>(i);
    return Ok();
  }
  json cfg = json::parse(config_json, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object())
    return Error::Corruption("{}: tokenizer_config.json is not a JSON object", spec.source);
  TENZRO_TRY(spec.bos, ConfigToken(cfg, "bos_token", spec));
  TENZRO_TRY(spec.eos, ConfigToken(cfg, "eos_token", spec));
  TENZRO_TRY(spec.pad, ConfigToken(cfg, "pad_token", spec));
  if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) spec.add_bos = cfg["add_bos_token"];
  if (cfg.contains("chat_template") && cfg["chat_template"].is_string()) spec.chat_template = cfg["chat_template"];
  return Ok();
}

Result<std::unique_ptr<Tokenizer>> Load(std::string_view text, std::string_view config_json, const std::string& src) {
  json root = json::parse(text, nullptr, false);
  if (root.is_discarded() || !root.is_object()) return Error::Corruption("{}: not a JSON object", src);
  if (!root.contains("model") || !root["model"].is_object())
    return Error::Corruption("{}: model is missing or not an object", src);
  const json& model = root["model"];
  if (model.contains("type") && model["type"] != "BPE")
    return Error::Unsupported("{}: model.type {} is not supported (only BPE)", src, model["type"].dump());
  if (!IsNullOrEmpty(model, "continuing_subword_prefix") || !IsNullOrEmpty(model, "end_of_word_suffix") ||
      !IsNullOrEmpty(model, "byte_fallback") || !IsNullOrEmpty(model, "ignore_merges") ||
      !IsNullOrEmpty(model, "dropout"))
    return Error::Unsupported(
        "{}: model options continuing_subword_prefix / end_of_word_suffix / byte_fallback / ignore_merges / dropout "
        "are not supported",
        src);
  VocabSpec spec;
  spec.source = src;
  spec.tokens_field = "model.vocab";
  TENZRO_TRY(spec.nfc, Normalizer(root, src));
  TENZRO_TRY(spec.pre, PreTokenizer(root, src));
  std::vector<bool> set;
  TENZRO_CHECK_OK(Vocab(model, spec, set));
  TENZRO_CHECK_OK(AddedTokens(root, spec, set));
  for (size_t i = 0; i < set.size(); ++i)
    if (!set[i]) return Error::Corruption("{}: no token has id {} (ids must be dense)", src, i);
  TENZRO_CHECK_OK(Merges(model, spec));
  TENZRO_CHECK_OK(Config(config_json, spec));
  return Tokenizer::Build(std::move(spec));
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> TokenizerFromHfJson(std::string_view tokenizer_json, std::string_view config_json,
                                                       const std::string& source) {
  // nlohmann::json throws on a type mismatch this file did not foresee:
  // such a file is malformed, and no exception leaves the module.
  try {
    return Load(tokenizer_json, config_json, source);
  } catch (const std::exception& e) {
    return Error::Corruption("{}: malformed tokenizer.json: {}", source, e.what());
  }
}

}  // namespace tenzro::tokenizer
