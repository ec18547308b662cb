// tenzro tokenizer: a Tokenizer from a Hugging Face `tokenizer.json` (and,
// optionally, the `tokenizer_config.json` beside it).
//
// Supported: model.type "BPE" (no subword prefix/suffix, no byte fallback, no
// ignore_merges) with merges as "left right" strings or [left, right] pairs;
// pre_tokenizer ByteLevel (GPT-2's regex) or Sequence[Split(regex), ByteLevel
// (use_regex false)] whose regex is Qwen2's or Qwen3.5's exact pattern;
// normalizer null or NFC (alone or in a Sequence). added_tokens are matched
// as whole strings: `special: true` ones are control tokens (parsed only with
// parse_special), the others user-defined (always); lstrip / rstrip /
// single_word are refused, `normalized` is ignored. Anything else is
// kUnsupported naming the field; malformed JSON or vocabulary kCorruption
// naming the field. Ids must be dense 0..n-1 over vocab + added_tokens.
// From tokenizer_config.json: bos_token, eos_token, pad_token (string or
// {content}), add_bos_token, chat_template (string). Without it eos is
// <|endoftext|> when present.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "tokenizer/tokenizer.h"

namespace tenzro::tokenizer {

// `config_json` may be empty (no tokenizer_config.json). `source` names the
// file in errors.
Result<std::unique_ptr<Tokenizer>> TokenizerFromHfJson(std::string_view tokenizer_json, std::string_view config_json,
                                                       const std::string& source);

}  // namespace tenzro::tokenizer
