// tenzro tokenizer: text <-> token ids for byte-level BPE vocabularies
// (GPT-2 / Qwen family), as llama.cpp's `gpt2` tokenizer and Hugging Face's
// BPE + ByteLevel tokenizer.json do it. Spec: docs/tokenizer.md.
//
// Encode: control tokens (when parse_special) and user-defined tokens are
// matched in the text as whole strings, longest first, and never split; the
// rest is normalized (NFC, only when the source asks for it: Hugging Face's
// Qwen tokenizer.json does, GGUF never), split by the pre-tokenizer
// (pre_tokenizer.h) and each piece merged by rank (bpe.h). Every byte is a
// token, so every input encodes and Decode(Encode(s)) == s for any bytes s
// without normalization.
// Decode: the tokens' bytes joined, then ill-formed UTF-8 replaced by U+FFFD;
// control and user-defined tokens give their text.
//
// Build validates the whole vocabulary: duplicate token texts, merges naming
// missing tokens or a result outside the vocabulary, special ids out of
// range, a missing byte symbol: kCorruption naming the field and index.
// Memory: the token strings, one hash map text -> id and the merge table;
// nothing is cached across calls (one Encode call memoizes up to 8192 of its
// own pieces, bpe.h). Thread-safety: immutable after Build; Encode
// and Decode may run concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"

namespace tenzro::tokenizer {

// llama.cpp's token types (GGUF tokenizer.ggml.token_type).
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// What a loader hands to Tokenizer::Build (gguf_vocab.h, hf_vocab.h).
struct VocabSpec {
  std::string source;                    // file name, for errors
  std::vector<std::string> tokens;       // id -> text as stored (byte-level alphabet for normal tokens)
  std::vector<TokenType> types;          // id -> type (same size as tokens)
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::string tokens_field = "tokens";   // field names for errors
  std::string merges_field = "merges";
  PreTokenizerKind pre = PreTokenizerKind::kQwen2;
  bool nfc = false;                      // normalize to NFC before splitting
  int32_t bos = -1, eos = -1, pad = -1;  // -1: none
  bool add_bos = false;
  std::string chat_template;             // empty when the source has none
};

inline constexpr int32_t kNoToken = -1;

class Tokenizer {
 public:
  // Validates `spec` and builds the lookup tables. kCorruption (naming
  // spec.source and the field) for a malformed vocabulary.
  static Result<std::unique_ptr<Tokenizer>> Build(VocabSpec spec);

  // Token ids of `text` (any bytes). Never adds BOS: callers that want it
  // prepend bos() when add_bos() is true.
  std::vector<int32_t> Encode(std::string_view text, bool parse_special = true) const;
  // The text of `ids`: bytes joined, ill-formed UTF-8 -> U+FFFD. An id
  // outside [0, vocab_size()) decodes to U+FFFD.
  std::string Decode(const std::vector<int32_t>& ids) const;
  // The raw bytes of one token (may be part of a UTF-8 character); empty for
  // an id out of range.
  std::string_view TokenBytes(int32_t id) const;
  // The stored text of one token (byte-level alphabet for normal tokens).
  std::string_view TokenText(int32_t id) const;
  // The id of the token whose stored text is `text`, e.g. "<|im_end|>" or
  // "Ġthe"; nullopt when absent.
  std::optional<int32_t> TokenId(std::string_view text) const;

  int32_t vocab_size() const { return static_cast<int32_t>(tokens_.size()); }
  bool IsValid(int32_t id) const { return id >= 0 && id < vocab_size(); }
  TokenType Type(int32_t id) const { return IsValid(id) ? types_[id] : TokenType::kUndefined; }
  bool IsControl(int32_t id) const { return Type(id) == TokenType::kControl; }
  // eos, <|im_end|> and <|endoftext|> when present.
  bool IsEndOfGeneration(int32_t id) const;
  const std::vector<int32_t>& end_of_generation() const { return eog_; }

  int32_t bos() const { return bos_; }  // kNoToken when the vocabulary has none
  int32_t eos() const { return eos_; }
  int32_t pad() const { return pad_; }
  bool add_bos() const { return add_bos_; }
  bool nfc() const { return nfc_; }
  PreTokenizerKind pre_tokenizer() const { return pre_; }
  size_t merge_count() const { return merges_.size(); }
  const std::string& chat_template() const { return chat_template_; }
  const std::string& source() const { return source_; }

 private:
  struct Special {
    std::string_view text;  // into tokens_
    int32_t id;
    bool control;  // matched only when parse_special
  };
  Tokenizer() = default;
  Result<void> BuildVocab(VocabSpec& spec);
  Result<void> BuildMerges(const VocabSpec& spec);
  Result<void> BuildSpecials(const VocabSpec& spec);
  void EncodePlain(std::string_view text, BpeScratch& scratch, std::vector<int32_t>& out) const;

  std::string source_;
  std::vector<std::string> tokens_;  // stored text
  std::vector<std::string> bytes_;   // decoded bytes
  std::vector<TokenType> types_;
  std::unordered_map<std::string_view, int32_t> by_text_;  // keys view tokens_
  std::array<int32_t, 256> byte_ids_{};
  MergeTable merges_;
  std::array<std::vector<Special>, 256> specials_;  // by first byte, longest first
  std::vector<int32_t> eog_;
  PreTokenizerKind pre_ = PreTokenizerKind::kQwen2;
  bool nfc_ = false;
  int32_t bos_ = kNoToken, eos_ = kNoToken, pad_ = kNoToken;
  bool add_bos_ = false;
  std::string chat_template_;
};

}  // namespace tenzro::tokenizer
