// tenzro CLI: which checkpoint a `--model` argument means.
//
// Shared by the commands that need a model's files (tokenize, detokenize,
// generate): `model` is a model id recorded with `tenzro moe catalog-add`
// (DATA_DIR/catalog.json, catalog/catalog.h), or a path to a checkpoint (a
// .gguf / .safetensors file, a tokenizer.json or a checkpoint directory).
#pragma once

#include <string>

#include "cli/command.h"
#include "core/result.h"

namespace tenzro::cli {

// The checkpoint path for `model`: a cataloged id wins (its stored absolute
// path); otherwise an existing file or directory is returned as given
// (made absolute). kNotFound naming the cataloged ids when it is neither;
// kCorruption / kUnsupported from a catalog that does not load.
Result<std::string> ResolveCheckpointPath(const Globals& g, const std::string& model);

}  // namespace tenzro::cli
