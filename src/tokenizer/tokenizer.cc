#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace tenzro::tokenizer {

// Ids are int32 and every token costs memory: a bound far above any real
// vocabulary (Qwen: 151,669; the largest known ~260k) that still refuses
// absurd counts before anything is built.
inline constexpr size_t kMaxVocab = 1u << 24;

Result<std::unique_ptr<Tokenizer>> Tokenizer::Build(VocabSpec spec) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  t->source_ = spec.source;
  TENZRO_CHECK_OK(t->BuildVocab(spec));
  TENZRO_CHECK_OK(t->BuildMerges(spec));
  TENZRO_CHECK_OK(t->BuildSpecials(spec));
  t->pre_ = spec.pre;
  t->nfc_ = spec.nfc;
  t->add_bos_ = spec.add_bos;
  t->chat_template_ = std::move(spec.chat_template);
  return t;
}

Result<void> Tokenizer::BuildVocab(VocabSpec& spec) {
  const std::string& src = spec.source;
  const std::string& field = spec.tokens_field;
  if (spec.tokens.empty()) return Error::Corruption("{}: {}: empty vocabulary", src, field);
  if (spec.tokens.size() > kMaxVocab)
    return Error::Corruption("{}: {}: {} tokens (more than {})", src, field, spec.tokens.size(), kMaxVocab);
  if (spec.types.size() != spec.tokens.size())
    return Error::Corruption("{}: token_type: {} entries for {} tokens", src, spec.types.size(), spec.tokens.size());
  tokens_ = std::move(spec.tokens);
  types_ = std::move(spec.types);
  bytes_.resize(tokens_.size());
  by_text_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    auto [it, fresh] = by_text_.emplace(tokens_[i], static_cast<int32_t>(i));
    if (!fresh)
      return Error::Corruption("{}: {}[{}] duplicates {}[{}] (\"{}\")", src, field, i, field, it->second,
                               SanitizeUtf8(tokens_[i]));
    TokenType ty = types_[i];
    std::optional<std::string> raw;
    if (ty == TokenType::kNormal || ty == TokenType::kUndefined) raw = SymbolsToBytes(tokens_[i]);
    // Tokens outside the byte-level alphabet (control, user-defined, or a
    // normal token of another alphabet) stand for their own text.
    bytes_[i] = raw ? std::move(*raw) : tokens_[i];
  }
  for (int b = 0; b < 256; ++b) {
    std::string sym = BytesToSymbols(std::string(1, static_cast<char>(b)));
    auto it = by_text_.find(sym);
    if (it == by_text_.end())
      return Error::Corruption("{}: {}: no token for byte 0x{:02X} (\"{}\"): not a byte-level BPE vocabulary", src,
                               field, b, sym);
    byte_ids_[b] = it->second;
  }
  auto check_id = [&](int32_t id, const char* what) -> Result<void> {
    if (id != kNoToken && (id < 0 || id >= vocab_size()))
      return Error::Corruption("{}: {}: id {} out of range (vocabulary of {})", src, what, id, vocab_size());
    return Ok();
  };
  TENZRO_CHECK_OK(check_id(spec.bos, "bos_token_id"));
  TENZRO_CHECK_OK(check_id(spec.eos, "eos_token_id"));
  TENZRO_CHECK_OK(check_id(spec.pad, "padding_token_id"));
  bos_ = spec.bos;
  eos_ = spec.eos;
  pad_ = spec.pad;
  return Ok();
}

Result<void> Tokenizer::BuildMerges(const VocabSpec& spec) {
  const std::string& src = spec.source;
  if (spec.merges.size() > kMaxVocab)
    return Error::Corruption("{}: {}: {} merges (more than {})", src, spec.merges_field, spec.merges.size(), kMaxVocab);
  merges_.Reserve(spec.merges.size());
  std::string joined;
  for (size_t r = 0; r < spec.merges.size(); ++r) {
    const auto& [a, b] = spec.merges[r];
    auto ia = by_text_.find(a), ib = by_text_.find(b);
    if (ia == by_text_.end() || ib == by_text_.end())
      return Error::Corruption("{}: {}[{}]: \"{}\" is not in the vocabulary", src, spec.merges_field, r,
                               SanitizeUtf8(ia == by_text_.end() ? a : b));
    joined.assign(a).append(b);
    auto ir = by_text_.find(joined);
    if (ir == by_text_.end())
      return Error::Corruption("{}: {}[{}]: the merged token \"{}\" is not in the vocabulary", src, spec.merges_field,
                               r, SanitizeUtf8(joined));
    // A repeated pair keeps its first (lowest) rank, as Hugging Face does.
    (void)merges_.Insert(ia->second, ib->second, {static_cast<int32_t>(r), ir->second});
  }
  return Ok();
}

Result<void> Tokenizer::BuildSpecials(const VocabSpec& spec) {
  (void)spec;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    TokenType ty = types_[i];
    if ((ty != TokenType::kControl && ty != TokenType::kUserDefined) || tokens_[i].empty()) continue;
    specials_[static_cast<uint8_t>(tokens_[i][0])].push_back(
        {tokens_[i], static_cast<int32_t>(i), ty == TokenType::kControl});
  }
  for (auto& v : specials_)
    std::stable_sort(v.begin(), v.end(), [](const Special& a, const Special& b) { return a.text.size() > b.text.size(); });
  auto add_eog = [&](int32_t id) {
    if (id != kNoToken && std::find(eog_.begin(), eog_.end(), id) == eog_.end()) eog_.push_back(id);
  };
  add_eog(eos_);
  for (const char* s : {"<|im_end|>", "<|endoftext|>"}) add_eog(TokenId(s).value_or(kNoToken));
  return Ok();
}

void Tokenizer::EncodePlain(std::string_view text, BpeScratch& scratch, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string normalized;
  if (nfc_) {
    bool ascii = true;  // ASCII is NFC: skip the copy
    for (char c : text) ascii = ascii && static_cast<uint8_t>(c) < 0x80;
    if (!ascii) {
      normalized = NormalizeNfc(text);
      text = normalized;
    }
  }
  PreTokenize(pre_, text, [&](std::string_view piece) { BpeMergeMemo(piece, byte_ids_, merges_, scratch, out); });
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  BpeScratch scratch;
  size_t plain_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    const auto& cands = specials_[static_cast<uint8_t>(text[pos])];
    const Special* hit = nullptr;
    for (const Special& s : cands) {
      if (s.control && !parse_special) continue;
      if (text.compare(pos, s.text.size(), s.text) == 0) {
        hit = &s;
        break;
      }
    }
    if (!hit) {
      ++pos;
      continue;
    }
    EncodePlain(text.substr(plain_start, pos - plain_start), scratch, out);
    out.push_back(hit->id);
    pos += hit->text.size();
    plain_start = pos;
  }
  EncodePlain(text.substr(plain_start), scratch, out);
  return out;
}

std::string Tokenizer::Decode(const std::vector<int32_t>& ids) const {
  std::string joined;
  for (int32_t id : ids) {
    if (IsValid(id)) joined += bytes_[id];
    else joined += "\xEF\xBF\xBD";
  }
  return SanitizeUtf8(joined);
}

std::string_view Tokenizer::TokenBytes(int32_t id) const { return IsValid(id) ? std::string_view(bytes_[id]) : ""; }

std::string_view Tokenizer::TokenText(int32_t id) const { return IsValid(id) ? std::string_view(tokens_[id]) : ""; }

std::optional<int32_t> Tokenizer::TokenId(std::string_view text) const {
  auto it = by_text_.find(text);
  if (it == by_text_.end()) return std::nullopt;
  return it->second;
}

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  return std::find(eog_.begin(), eog_.end(), id) != eog_.end();
}

}  // namespace tenzro::tokenizer
