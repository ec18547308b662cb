// Request parsing (every field and its error, `param` named), response
// shapes and SSE framing of the OpenAI-compatible API.
#include "serve/openai_api.h"

#include <gtest/gtest.h>

namespace tenzro::serve {
namespace {

using nlohmann::json;

std::optional<CompletionRequest> Chat(const json& j, ApiError& e) { return ParseChatRequest(j.dump(), e); }
std::optional<CompletionRequest> Comp(const json& j, ApiError& e) { return ParseCompletionRequest(j.dump(), e); }

json ChatBase() { return {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}}; }
json CompBase() { return {{"model", "m"}, {"prompt", "Hello"}}; }

// The `param` a bad chat request names (or "<ok>").
std::string ChatParam(json patch) {
  json j = ChatBase();
  j.merge_patch(patch);
  ApiError e;
  auto r = Chat(j, e);
  if (r) return "<ok>";
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.type, "invalid_request_error");
  EXPECT_FALSE(e.message.empty());
  return e.param;
}
std::string CompParam(json patch) {
  json j = CompBase();
  j.merge_patch(patch);
  ApiError e;
  auto r = Comp(j, e);
  if (r) return "<ok>";
  EXPECT_EQ(e.status, 400);
  return e.param;
}

TEST(OpenAiParseTest, ChatDefaultsAndFields) {
  ApiError e;
  auto r = Chat(ChatBase(), e);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->model, "m");
  ASSERT_EQ(r->messages.size(), 1u);
  EXPECT_EQ(r->messages[0].role, "user");
  EXPECT_EQ(r->messages[0].content, "Hi");
  EXPECT_EQ(r->max_tokens, -1);
  EXPECT_EQ(r->sampling.temperature, 1.0f);
  EXPECT_FALSE(r->stream);
  EXPECT_EQ(r->top_logprobs, -1);

  json j = ChatBase();
  j["messages"] = {{{"role", "system"}, {"content", "Be brief."}},
                   {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "A"}}, {{"type", "text"}, {"text", "B"}}}}},
                   {{"role", "developer"}, {"content", "x"}}};
  j["max_completion_tokens"] = 7;
  j["temperature"] = 0;
  j["top_p"] = 0.5;
  j["seed"] = 42;
  j["stop"] = {"a", "b"};
  j["n"] = 1;
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  j["logprobs"] = true;
  j["top_logprobs"] = 3;
  j["presence_penalty"] = 0.5;
  j["frequency_penalty"] = -0.5;
  j["some_unknown_field"] = {1, 2};
  r = Chat(j, e);
  ASSERT_TRUE(r) << e.message;
  EXPECT_EQ(r->messages[1].content, "AB");
  EXPECT_EQ(r->messages[2].role, "system");
  EXPECT_EQ(r->max_tokens, 7);
  EXPECT_EQ(r->sampling.temperature, 0.0f);
  EXPECT_EQ(r->sampling.top_p, 0.5f);
  EXPECT_EQ(r->sampling.seed, 42u);
  EXPECT_EQ(r->stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->top_logprobs, 3);
  EXPECT_EQ(r->sampling.presence_penalty, 0.5f);
  EXPECT_EQ(r->sampling.frequency_penalty, -0.5f);
  j.erase("top_logprobs");
  r = Chat(j, e);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->top_logprobs, 0);
}

TEST(OpenAiParseTest, ChatErrorsNameTheParam) {
  EXPECT_EQ(ChatParam({{"model", nullptr}}), "model");
  EXPECT_EQ(ChatParam({{"model", 3}}), "model");
  EXPECT_EQ(ChatParam({{"messages", nullptr}}), "messages");
  EXPECT_EQ(ChatParam({{"messages", json::array()}}), "messages");
  EXPECT_EQ(ChatParam({{"messages", "hi"}}), "messages");
  EXPECT_EQ(ChatParam({{"messages", {1}}}), "messages[0]");
  EXPECT_EQ(ChatParam({{"messages", {{{"role", "tool"}, {"content", "x"}}}}}), "messages[0].role");
  EXPECT_EQ(ChatParam({{"messages", {{{"content", "x"}}}}}), "messages[0].role");
  EXPECT_EQ(ChatParam({{"messages", {{{"role", "user"}}}}}), "messages[0].content");
  EXPECT_EQ(ChatParam({{"messages", {{{"role", "user"}, {"content", 5}}}}}), "messages[0].content");
  EXPECT_EQ(ChatParam({{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}}),
            "messages[0].content[0].type");
  EXPECT_EQ(ChatParam({{"messages", {{{"role", "user"}, {"content", {{{"type", "text"}}}}}}}}),
            "messages[0].content[0].text");
  EXPECT_EQ(ChatParam({{"max_tokens", 0}}), "max_tokens");
  EXPECT_EQ(ChatParam({{"max_tokens", 1.5}}), "max_tokens");
  EXPECT_EQ(ChatParam({{"max_tokens", "9"}}), "max_tokens");
  EXPECT_EQ(ChatParam({{"max_completion_tokens", -1}}), "max_completion_tokens");
  EXPECT_EQ(ChatParam({{"temperature", 2.5}}), "temperature");
  EXPECT_EQ(ChatParam({{"temperature", "hot"}}), "temperature");
  EXPECT_EQ(ChatParam({{"top_p", 0}}), "top_p");
  EXPECT_EQ(ChatParam({{"top_p", 1.5}}), "top_p");
  EXPECT_EQ(ChatParam({{"seed", "x"}}), "seed");
  EXPECT_EQ(ChatParam({{"stop", 1}}), "stop");
  EXPECT_EQ(ChatParam({{"stop", {"a", "b", "c", "d", "e"}}}), "stop");
  EXPECT_EQ(ChatParam({{"stop", {""}}}), "stop");
  EXPECT_EQ(ChatParam({{"stop", {"a", 1}}}), "stop");
  EXPECT_EQ(ChatParam({{"n", 2}}), "n");
  EXPECT_EQ(ChatParam({{"stream", "yes"}}), "stream");
  EXPECT_EQ(ChatParam({{"stream_options", {{"include_usage", true}}}}), "stream_options");  // without stream
  EXPECT_EQ(ChatParam({{"stream", true}, {"stream_options", 1}}), "stream_options");
  EXPECT_EQ(ChatParam({{"stream", true}, {"stream_options", {{"include_usage", 1}}}}), "stream_options.include_usage");
  EXPECT_EQ(ChatParam({{"logprobs", 1}}), "logprobs");
  EXPECT_EQ(ChatParam({{"top_logprobs", 2}}), "top_logprobs");  // without logprobs
  EXPECT_EQ(ChatParam({{"logprobs", true}, {"top_logprobs", 21}}), "top_logprobs");
  EXPECT_EQ(ChatParam({{"presence_penalty", 3}}), "presence_penalty");
  EXPECT_EQ(ChatParam({{"frequency_penalty", -2.5}}), "frequency_penalty");
  EXPECT_EQ(ChatParam({{"logit_bias", {{"5", 1}}}}), "logit_bias");
  EXPECT_EQ(ChatParam({{"stop", "x"}, {"n", 1}, {"stream", false}}), "<ok>");
}

TEST(OpenAiParseTest, BodyThatIsNotAnObject) {
  ApiError e;
  EXPECT_FALSE(ParseChatRequest("{nope", e));
  EXPECT_EQ(e.status, 400);
  EXPECT_TRUE(e.param.empty());
  EXPECT_FALSE(ParseChatRequest("[1]", e));
  EXPECT_TRUE(e.ToJson()["error"]["param"].is_null());
}

TEST(OpenAiParseTest, CompletionPromptForms) {
  ApiError e;
  auto r = Comp(CompBase(), e);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->prompt_text, "Hello");
  EXPECT_FALSE(r->prompt_is_ids);
  EXPECT_EQ(r->max_tokens, 16);  // OpenAI's completions default
  r = Comp({{"model", "m"}, {"prompt", {1, 2, 3}}}, e);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->prompt_is_ids);
  EXPECT_EQ(r->prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  r = Comp({{"model", "m"}, {"prompt", {"Hi"}}}, e);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->prompt_text, "Hi");
  r = Comp({{"model", "m"}, {"prompt", {{4, 5}}}}, e);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->prompt_ids, (std::vector<int32_t>{4, 5}));
  r = Comp({{"model", "m"}, {"prompt", "x"}, {"logprobs", 2}}, e);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->top_logprobs, 2);

  EXPECT_EQ(CompParam({{"prompt", nullptr}}), "prompt");
  EXPECT_EQ(CompParam({{"prompt", ""}}), "prompt");
  EXPECT_EQ(CompParam({{"prompt", json::array()}}), "prompt");
  EXPECT_EQ(CompParam({{"prompt", {"a", "b"}}}), "prompt");
  EXPECT_EQ(CompParam({{"prompt", {1, -2}}}), "prompt");
  EXPECT_EQ(CompParam({{"prompt", {1, "x"}}}), "prompt");
  EXPECT_EQ(CompParam({{"prompt", 7}}), "prompt");
  EXPECT_EQ(CompParam({{"logprobs", true}}), "logprobs");
  EXPECT_EQ(CompParam({{"logprobs", 21}}), "logprobs");
  EXPECT_EQ(CompParam({{"echo", true}}), "echo");
  EXPECT_EQ(CompParam({{"max_tokens", 0}}), "max_tokens");
}

TEST(OpenAiShapeTest, SseFramesAndChunks) {
  json c = ChunkJson(Endpoint::kChat, "chatcmpl-1", 5, "m", {{"content", "h\xc3"}}, std::nullopt, nullptr);
  std::string f = SseFrame(c);
  ASSERT_TRUE(f.starts_with("data: {"));
  ASSERT_TRUE(f.ends_with("}\n\n"));
  EXPECT_EQ(f.find('\n'), f.size() - 2);  // one line of JSON
  json back = json::parse(f.substr(6));
  EXPECT_EQ(back["object"], "chat.completion.chunk");
  EXPECT_EQ(back["choices"][0]["delta"]["content"], "h\xef\xbf\xbd");  // invalid UTF-8 replaced
  EXPECT_TRUE(back["choices"][0]["finish_reason"].is_null());
  json fin = ChunkJson(Endpoint::kCompletions, "cmpl-1", 5, "m", {{"text", "x"}}, model::FinishReason::kEog, nullptr);
  EXPECT_EQ(fin["object"], "text_completion");
  EXPECT_EQ(fin["choices"][0]["text"], "x");
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "stop");
  json u = UsageChunkJson(Endpoint::kChat, "c", 1, "m", 3, 4);
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 7);
  EXPECT_EQ(std::string(kSseDone), "data: [DONE]\n\n");
  EXPECT_STREQ(OpenAiFinishReason(model::FinishReason::kLength), "length");
  EXPECT_STREQ(OpenAiFinishReason(model::FinishReason::kStop), "stop");
  EXPECT_TRUE(NewCompletionId(Endpoint::kChat).starts_with("chatcmpl-"));
  json whole = ChatCompletionJson("id", 1, "m", "hello", model::FinishReason::kLength, 2, 3, nullptr);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(whole["usage"]["completion_tokens"], 3);
}

TEST(OpenAiShapeTest, ErrorShape) {
  ApiError e;
  e.message = "bad";
  e.param = "stop";
  json j = e.ToJson();
  EXPECT_EQ(j["error"]["message"], "bad");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "stop");
  EXPECT_TRUE(j["error"]["code"].is_null());
}

}  // namespace
}  // namespace tenzro::serve
