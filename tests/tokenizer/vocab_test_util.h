// Shared by the tokenizer tests: the fixture's vocabulary as GGUF key/values
// (to rewrite one key) and as a Hugging Face tokenizer.json.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/bytes.h"
#include "format/gguf_writer.h"

namespace tenzro::tokenizer::testing {

// A tensor-less GGUF image with the fixture's key/values, after `edit`.
Bytes FixtureGgufWith(const std::function<void(format::GgufWriter&)>& edit);

// The fixture's vocabulary as tokenizer.json (ids 1021..1023 as special
// added_tokens; merges as "a b" strings, or [a, b] pairs when `pairs`), with
// the given normalizer (null or {"type":"NFC"}).
nlohmann::json FixtureTokenizerJson(bool pairs, bool nfc);

}  // namespace tenzro::tokenizer::testing
