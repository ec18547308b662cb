// tenzro format: Checkpoint construction from already-parsed files.
//
// Checkpoint::Open resolves a path into files and calls these; the fuzzers
// and tests call them on in-memory images (GgufFile::Parse,
// SafetensorsFile::Parse) to exercise the MoE view without disk I/O.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "format/checkpoint.h"
#include "format/gguf_reader.h"
#include "format/safetensors_reader.h"

namespace tenzro::format {

// `parts` in split order (one part for a plain file). Checks split.no /
// split.count / split.tensors.count when present; metadata comes from the
// first part (keys of later parts fill in what it lacks).
Result<std::unique_ptr<Checkpoint>> MakeGgufCheckpoint(std::vector<std::unique_ptr<GgufFile>> parts);

// `config_json` is the text of config.json ("" when there is none); it must
// be a JSON object. Tensors come from all shards (a name twice is kCorruption).
Result<std::unique_ptr<Checkpoint>> MakeSafetensorsCheckpoint(std::vector<std::unique_ptr<SafetensorsFile>> shards,
                                                              std::string_view config_json,
                                                              std::string_view config_name = "config.json");

}  // namespace tenzro::format
