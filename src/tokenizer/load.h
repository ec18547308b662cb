// tenzro tokenizer: the tokenizer of a checkpoint, whatever its format.
//
// `path` is a .gguf file (its tokenizer.ggml.* keys), a tokenizer.json file,
// a safetensors file (the tokenizer.json beside it), or a directory holding
// tokenizer.json. tokenizer_config.json beside a tokenizer.json is read when
// present. kNotFound when the checkpoint has no tokenizer; other errors as
// gguf_vocab.h / hf_vocab.h.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "tokenizer/tokenizer.h"

namespace tenzro::tokenizer {

Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path);

}  // namespace tenzro::tokenizer
