// tenzro CLI: which checkpoint a `--model` argument means.
//
// Shared by the commands that need a model's files (tokenize, detokenize,
// generate): `model` is a model id recorded with `tenzro moe catalog-add`
// (DATA_DIR/catalog.json, catalog/catalog.h), or a path to a checkpoint (a
// .gguf / .safetensors file, a tokenizer.json or a checkpoint directory).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "core/result.h"

namespace tenzro::cli {

// The checkpoint path for `model`: a cataloged id wins (its stored absolute
// path); otherwise an existing file or directory is returned as given
// (made absolute). kNotFound naming the cataloged ids when it is neither;
// kCorruption / kUnsupported from a catalog that does not load.
Result<std::string> ResolveCheckpointPath(const Globals& g, const std::string& model);

// As ResolveCheckpointPath, and also a blob URI `tenzro://blob/<hash>` (a
// spine blob, tenzro moe prepare-dense) found in DATA_DIR/blobs: its data
// file's path. kNotFound when the blob is not stored here.
Result<std::string> ResolveModelFile(const Globals& g, const std::string& model);

// "1,2,3" -> ids (spaces around items allowed; "" -> none). kInvalidArgument
// naming `flag` and the item that is not a non-negative int32.
Result<std::vector<int32_t>> ParseTokenIds(const std::string& list, std::string_view flag = "--prompt-tokens");

}  // namespace tenzro::cli
