// libFuzzer target: the OpenAI-compatible request bodies a serving node
// parses from the network (docs/serving.md): POST /v1/chat/completions and
// /v1/completions through serve::Parse*Request. Nothing may throw or crash;
// an accepted request satisfies the limits the scheduler relies on, and a
// refused one is a 400 with a message; every error renders as JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "serve/openai_api.h"

using namespace tenzro;

namespace {

void Check(const std::optional<serve::CompletionRequest>& r, const serve::ApiError& e) {
  if (!r) {
    if (e.status != 400 || e.message.empty()) std::abort();
    (void)serve::SseFrame(e.ToJson());
    return;
  }
  if (r->max_tokens != -1 && r->max_tokens < 1) std::abort();
  if (r->stop.size() > model::kMaxStopStrings) std::abort();
  for (const auto& s : r->stop)
    if (s.empty()) std::abort();
  if (r->top_logprobs < -1 || r->top_logprobs > 20) std::abort();
  if (!r->sampling.Validate()) std::abort();
  if (r->endpoint == serve::Endpoint::kChat) {
    if (r->messages.empty()) std::abort();
    for (const auto& m : r->messages)
      if (m.role != "system" && m.role != "user" && m.role != "assistant") std::abort();
  } else if (r->prompt_is_ids ? r->prompt_ids.empty() : r->prompt_text.empty()) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  serve::ApiError e;
  Check(serve::ParseChatRequest(body, e), e);
  Check(serve::ParseCompletionRequest(body, e), e);
  return 0;
}
