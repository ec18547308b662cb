#include "tokenizer/gguf_vocab.h"

#include <string>
#include <vector>

namespace tenzro::tokenizer {
namespace {

using format::GgufFile;
using format::GgufValue;

Result<const GgufValue*> StringArray(const GgufFile& f, const char* key, bool required) {
  const GgufValue* v = f.Find(key);
  if (!v) {
    if (required) return Error::Corruption("{}: {} is missing", f.path(), key);
    return static_cast<const GgufValue*>(nullptr);
  }
  if (!v->is_array() || v->elem_type() != format::GgufType::kString)
    return Error::Corruption("{}: {} is not an array of strings", f.path(), key);
  return v;
}

// An optional id key: kNoToken when absent; kCorruption when not an integer
// in int32 range (the vocabulary range is checked by Tokenizer::Build).
Result<int32_t> OptionalId(const GgufFile& f, const char* key) {
  const GgufValue* v = f.Find(key);
  if (!v) return kNoToken;
  auto i = v->AsInt();
  if (!i || v->is_array() || *i < 0 || *i > INT32_MAX)
    return Error::Corruption("{}: {} is not a token id ({})", f.path(), key, v->ToString());
  return static_cast<int32_t>(*i);
}

Result<void> ReadTypes(const GgufFile& f, size_t n_tokens, std::vector<TokenType>& types) {
  const GgufValue* v = f.Find("tokenizer.ggml.token_type");
  if (!v) {
    types.assign(n_tokens, TokenType::kNormal);
    return Ok();
  }
  auto ints = v->AsIntArray();
  if (!ints) return Error::Corruption("{}: tokenizer.ggml.token_type is not an integer array", f.path());
  if (ints->size() != n_tokens)
    return Error::Corruption("{}: tokenizer.ggml.token_type has {} entries for {} tokens", f.path(), ints->size(),
                             n_tokens);
  types.resize(n_tokens);
  for (size_t i = 0; i < n_tokens; ++i) {
    int64_t t = (*ints)[i];
    if (t < 0 || t > static_cast<int64_t>(TokenType::kByte))
      return Error::Corruption("{}: tokenizer.ggml.token_type[{}] = {} is not a token type (0..6)", f.path(), i, t);
    types[i] = static_cast<TokenType>(t);
  }
  return Ok();
}

}  // namespace

Result<PreTokenizerKind> PreTokenizerForName(std::string_view name) {
  // llama.cpp (llama-vocab.cpp) maps these names to the Qwen2 regex.
  for (std::string_view n : {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "hunyuan"})
    if (name == n) return PreTokenizerKind::kQwen2;
  if (name == "qwen35") return PreTokenizerKind::kQwen35;
  // ... and these to GPT-2's own regex.
  for (std::string_view n : {"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "roberta-bpe"})
    if (name == n) return PreTokenizerKind::kGpt2;
  return Error::Unsupported(
      "pre-tokenizer \"{}\" is not implemented (supported: qwen2, qwen35, gpt-2 and their aliases)", name);
}

Result<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const GgufFile& f) {
  const GgufValue* model = f.Find("tokenizer.ggml.model");
  if (!model) return Error::NotFound("{}: no tokenizer (tokenizer.ggml.model is missing)", f.path());
  const std::string* model_name = model->AsString();
  if (!model_name) return Error::Corruption("{}: tokenizer.ggml.model is not a string", f.path());
  if (*model_name != "gpt2")
    return Error::Unsupported("{}: tokenizer.ggml.model \"{}\" is not supported (only \"gpt2\", byte-level BPE)",
                              f.path(), *model_name);
  VocabSpec spec;
  spec.source = f.path();
  spec.tokens_field = "tokenizer.ggml.tokens";
  spec.merges_field = "tokenizer.ggml.merges";
  const GgufValue* pre = f.Find("tokenizer.ggml.pre");
  if (!pre) return Error::Unsupported("{}: tokenizer.ggml.pre is missing (llama.cpp's \"default\" split)", f.path());
  if (!pre->AsString()) return Error::Corruption("{}: tokenizer.ggml.pre is not a string", f.path());
  auto kind = PreTokenizerForName(*pre->AsString());
  if (!kind) return kind.error().WithContext(f.path());
  spec.pre = *kind;

  TENZRO_TRY(const GgufValue* tokens, StringArray(f, "tokenizer.ggml.tokens", true));
  spec.tokens = *tokens->AsStringArray();
  TENZRO_CHECK_OK(ReadTypes(f, spec.tokens.size(), spec.types));
  TENZRO_TRY(const GgufValue* merges, StringArray(f, "tokenizer.ggml.merges", false));
  if (merges) {
    spec.merges.reserve(merges->size());
    for (size_t i = 0; i < merges->size(); ++i) {
      const std::string& m = *merges->items()[i].AsString();
      // As llama.cpp: split at the first space after the first character
      // (byte-level symbols never contain a space; a space is `Ġ`).
      size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
      if (sp == std::string::npos)
        return Error::Corruption("{}: tokenizer.ggml.merges[{}] (\"{}\") is not \"left right\"", f.path(), i, m);
      spec.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
    }
  }
  TENZRO_TRY(spec.bos, OptionalId(f, "tokenizer.ggml.bos_token_id"));
  TENZRO_TRY(spec.eos, OptionalId(f, "tokenizer.ggml.eos_token_id"));
  TENZRO_TRY(spec.pad, OptionalId(f, "tokenizer.ggml.padding_token_id"));
  if (const GgufValue* v = f.Find("tokenizer.ggml.add_bos_token")) {
    auto b = v->AsInt();
    if (!b || v->type() != format::GgufType::kBool)
      return Error::Corruption("{}: tokenizer.ggml.add_bos_token is not a bool", f.path());
    spec.add_bos = *b != 0;
  }
  if (const GgufValue* v = f.Find("tokenizer.chat_template")) {
    if (!v->AsString()) return Error::Corruption("{}: tokenizer.chat_template is not a string", f.path());
    spec.chat_template = *v->AsString();
  }
  return Tokenizer::Build(std::move(spec));
}

}  // namespace tenzro::tokenizer
