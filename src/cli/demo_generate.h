// tenzro cli: the demo's generation step — the bundled tiny Qwen3.5-MoE with
// its tokenizer (tests/data/model), a ChatML prompt, 16 greedy tokens from
// the whole model in-process, checked against the float64 reference's greedy
// continuation (tests/data/model/ref/chat-hi.json).
#pragma once

#include <string>

#include "core/result.h"

namespace tenzro::cli {

// Prints the prompt, the streamed tokens and the check; returns whether the
// tokens equal the reference's. Errors: the model or reference missing or
// unreadable (kNotFound / kCorruption), the engine's.
Result<bool> RunDemoGeneration(const std::string& model_dir);

}  // namespace tenzro::cli
