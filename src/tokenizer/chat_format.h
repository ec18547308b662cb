// tenzro tokenizer: chat prompts in ChatML, the format of Qwen's templates.
//
// A built-in renderer, not a Jinja engine: it produces what Qwen's (and the
// test fixture's) chat template produces for plain text messages:
//   <|im_start|>ROLE\nCONTENT<|im_end|>\n      for each message, then, with
//   <|im_start|>assistant\n                     the generation prompt, and
//   <think>\n\n</think>\n\n                     after it when thinking is
// explicitly disabled (Qwen3's enable_thinking=false). No default system
// message is added; contents are copied verbatim (a content holding
// "<|im_end|>" is tokenized as that control token, as in the reference
// templates). A model's own template is only checked to be ChatML-shaped.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tenzro::tokenizer {

struct ChatMessage {
  std::string role, content;
};

// `thinking`: nullopt = the template's default (no switch emitted); false =
// append the empty think block after the generation prompt; true = nothing.
std::string RenderChatMl(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                         std::optional<bool> thinking = std::nullopt);

// Ok when `chat_template` (a model's tokenizer.chat_template) is ChatML-
// shaped, i.e. mentions <|im_start|>; kUnsupported with a message naming
// what was found otherwise, including an empty (absent) template.
Result<void> CheckChatTemplate(std::string_view chat_template);

}  // namespace tenzro::tokenizer
