// tenzro serve: the OpenAI-compatible wire format — request parsing and
// validation, response and streaming-chunk bodies. Pure logic, no I/O.
// Spec: docs/serving.md.
//
// Parsing follows OpenAI's API reference: unknown fields are ignored; a
// field of the wrong type or out of range is an ApiError naming it in
// `param` ("messages[1].content", "stop", "top_logprobs"), HTTP 400.
// Defaults are OpenAI's: temperature 1, top_p 1, max_tokens 16 for
// /v1/completions and "until the context is full" (the server's cap) for
// chat; no seed = a random one. One extension: "ignore_eos" (bool), as in
// llama.cpp's server and vLLM.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/generator.h"
#include "model/stop_matcher.h"
#include "model/sampler.h"
#include "tokenizer/chat_format.h"
#include "tokenizer/tokenizer.h"

namespace tenzro::serve {

// An OpenAI-shaped error: {"error": {"message", "type", "param", "code"}}.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // "" -> null
  std::string code;   // "" -> null
  std::string retry_after;  // seconds, for 429 / 503 ("" = no header)
  nlohmann::json ToJson() const;
};

enum class Endpoint : uint8_t { kChat, kCompletions };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;
  std::vector<tokenizer::ChatMessage> messages;  // chat
  std::string prompt_text;                       // completions, when given as text
  std::vector<int32_t> prompt_ids;               // completions, when given as token ids
  bool prompt_is_ids = false;
  int max_tokens = -1;  // -1: not given (the server picks)
  model::SamplingParams sampling;
  bool seed_given = false;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;
  int top_logprobs = -1;  // -1: no logprobs; else how many alternatives
  bool ignore_eos = false;  // extension (llama.cpp, vLLM): generate past end-of-generation tokens
};

// Parses a request body. Returns nullopt and fills `err` on a bad request.
std::optional<CompletionRequest> ParseChatRequest(std::string_view body, ApiError& err);
std::optional<CompletionRequest> ParseCompletionRequest(std::string_view body, ApiError& err);

// "chatcmpl-<24 hex>" / "cmpl-<24 hex>".
std::string NewCompletionId(Endpoint e);

// OpenAI's finish_reason: "stop" for a stop string or an end-of-generation
// token, "length" for max_tokens or a full context.
const char* OpenAiFinishReason(model::FinishReason r);

nlohmann::json UsageJson(int prompt_tokens, int completion_tokens);

// One token's entry in chat logprobs ({"token","logprob","bytes","top_logprobs"}).
nlohmann::json ChatLogprobEntry(const tokenizer::Tokenizer& tok, const model::LogprobResult& lp);
// Completions' logprobs object for the tokens of one choice.
nlohmann::json CompletionLogprobs(const tokenizer::Tokenizer& tok, const std::vector<model::LogprobResult>& lps);

// Whole (non-streamed) response objects. `logprobs`: null unless asked.
nlohmann::json ChatCompletionJson(const std::string& id, int64_t created, const std::string& model,
                                  const std::string& text, model::FinishReason finish, int prompt_tokens,
                                  int completion_tokens, const nlohmann::json& logprobs);
nlohmann::json TextCompletionJson(const std::string& id, int64_t created, const std::string& model,
                                  const std::string& text, model::FinishReason finish, int prompt_tokens,
                                  int completion_tokens, const nlohmann::json& logprobs);

// A streaming chunk of endpoint `e`: `delta` is the chat delta object
// ({"role":...} / {"content":...} / {}) or, for completions, {"text": ...};
// finish: null unless given. `logprobs` null unless asked.
nlohmann::json ChunkJson(Endpoint e, const std::string& id, int64_t created, const std::string& model,
                         const nlohmann::json& delta, std::optional<model::FinishReason> finish,
                         const nlohmann::json& logprobs);
// The final usage chunk (choices empty, usage set).
nlohmann::json UsageChunkJson(Endpoint e, const std::string& id, int64_t created, const std::string& model,
                              int prompt_tokens, int completion_tokens);

// Server-sent events framing: "data: <json>\n\n" (JSON on one line, invalid
// UTF-8 replaced) and the terminator "data: [DONE]\n\n".
std::string SseFrame(const nlohmann::json& j);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// JSON text with invalid UTF-8 replaced by U+FFFD (never throws).
std::string DumpJson(const nlohmann::json& j);

}  // namespace tenzro::serve
