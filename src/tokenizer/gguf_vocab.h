// tenzro tokenizer: a Tokenizer from a GGUF's tokenizer.ggml.* keys, as
// llama.cpp's converter writes them (docs/tokenizer.md lists the keys).
//
// Supported: tokenizer.ggml.model = "gpt2" (byte-level BPE) with pre =
// qwen2 (and the names llama.cpp maps to the same regex), qwen35, or gpt-2's
// regex (gpt2 and its aliases). Another model (llama/SPM, bert, ...) or pre
// is kUnsupported naming it; a GGUF without tokenizer keys is kNotFound; a
// key of the wrong type or a malformed vocabulary is kCorruption naming the
// key (and index). No normalization is applied (llama.cpp applies none).
#pragma once

#include <memory>
#include <string_view>

#include "core/result.h"
#include "format/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace tenzro::tokenizer {

// The split for a tokenizer.ggml.pre / pre-tokenizer name; kUnsupported for
// names this module does not implement (e.g. "default", "llama-bpe").
Result<PreTokenizerKind> PreTokenizerForName(std::string_view name);

Result<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const format::GgufFile& file);

}  // namespace tenzro::tokenizer
