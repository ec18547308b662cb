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

// The text the model at `path` generates all-local for the ChatML prompt of
// one user message "Hi": greedy, `max_tokens` tokens, end-of-generation
// tokens ignored, routed-expert rows rounded through the default wire dtype
// as a node serving with its default serve_wire_dtype does (the reference the
// served streams are checked against).
Result<std::string> LocalChatText(const std::string& path, int max_tokens);

}  // namespace tenzro::cli
