#include "tokenizer/chat_format.h"

namespace tenzro::tokenizer {

std::string RenderChatMl(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                         std::optional<bool> thinking) {
  std::string out;
  for (const ChatMessage& m : messages) {
    out += "<|im_start|>";
    out += m.role;
    out += '\n';
    out += m.content;
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (thinking.has_value() && !*thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

Result<void> CheckChatTemplate(std::string_view chat_template) {
  if (chat_template.empty())
    return Error::Unsupported("the model has no chat template (tokenizer.chat_template); only ChatML is built in");
  if (chat_template.find("<|im_start|>") == std::string_view::npos)
    return Error::Unsupported(
        "the model's chat template is not ChatML (no <|im_start|>): only ChatML is built in; template starts \"{}\"",
        chat_template.substr(0, 80));
  return Ok();
}

}  // namespace tenzro::tokenizer
