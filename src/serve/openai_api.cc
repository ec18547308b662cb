#include "serve/openai_api.h"

#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

namespace tenzro::serve {
namespace {

using nlohmann::json;

struct Bad {
  std::string param, message;
};

std::optional<Bad> Fail(std::string param, std::string message) { return Bad{std::move(param), std::move(message)}; }

std::string TypeName(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

// A number field in [lo, hi]; absent or null keeps `out`.
std::optional<Bad> Number(const json& j, const char* key, double lo, double hi, float& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return Fail(key, fmt::format("'{}' must be a number, got {}", key, TypeName(*it)));
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi)
    return Fail(key, fmt::format("'{}' must be between {:g} and {:g}, got {:g}", key, lo, hi, v));
  out = static_cast<float>(v);
  return std::nullopt;
}

std::optional<Bad> Integer(const json& j, const char* key, int64_t lo, int64_t hi, int64_t& out, bool& given) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() && !(it->is_number_float() && std::floor(it->get<double>()) == it->get<double>()))
    return Fail(key, fmt::format("'{}' must be an integer, got {}", key, TypeName(*it)));
  const double d = it->get<double>();
  // (A float past 2^53 is not a trustworthy integer, and past 2^63 its
  // conversion would overflow.)
  if (d < static_cast<double>(lo) || d > static_cast<double>(hi) || (it->is_number_float() && std::fabs(d) > 0x1p53))
    return Fail(key, fmt::format("'{}' must be between {} and {}, got {}", key, lo, hi, it->dump()));
  out = it->is_number_float() ? static_cast<int64_t>(d)
        : it->is_number_unsigned() ? static_cast<int64_t>(it->get<uint64_t>())
                                   : it->get<int64_t>();
  given = true;
  return std::nullopt;
}

std::optional<Bad> Bool(const json& j, const char* key, bool& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return Fail(key, fmt::format("'{}' must be a boolean, got {}", key, TypeName(*it)));
  out = it->get<bool>();
  return std::nullopt;
}

// Fields both endpoints share.
std::optional<Bad> ParseCommon(const json& j, CompletionRequest& r) {
  auto m = j.find("model");
  if (m == j.end() || m->is_null()) return Fail("model", "you must provide a model parameter");
  if (!m->is_string()) return Fail("model", "'model' must be a string");
  r.model = m->get<std::string>();
  int64_t v = 0;
  bool given = false;
  const char* max_key = j.contains("max_completion_tokens") && !j["max_completion_tokens"].is_null()
                            ? "max_completion_tokens"
                            : "max_tokens";
  if (auto b = Integer(j, max_key, 1, 1 << 20, v, given)) return b;
  if (given) r.max_tokens = static_cast<int>(v);
  r.sampling.temperature = 1;
  if (auto b = Number(j, "temperature", 0, 2, r.sampling.temperature)) return b;
  if (auto b = Number(j, "top_p", 0, 1, r.sampling.top_p)) return b;
  if (r.sampling.top_p <= 0) return Fail("top_p", "'top_p' must be greater than 0");
  if (auto b = Number(j, "presence_penalty", -2, 2, r.sampling.presence_penalty)) return b;
  if (auto b = Number(j, "frequency_penalty", -2, 2, r.sampling.frequency_penalty)) return b;
  given = false;
  if (auto b = Integer(j, "seed", INT64_MIN, INT64_MAX, v, given)) return b;
  r.seed_given = given;
  if (given) {
    r.sampling.seed = static_cast<uint64_t>(v);
  } else {
    std::random_device rd;
    r.sampling.seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  given = false;
  if (auto b = Integer(j, "n", 1, 128, v, given)) return b;
  if (given && v != 1) return Fail("n", fmt::format("'n' must be 1 on this server, got {}", v));
  if (auto b = Bool(j, "stream", r.stream)) return b;
  if (auto b = Bool(j, "ignore_eos", r.ignore_eos)) return b;
  if (auto it = j.find("stream_options"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return Fail("stream_options", "'stream_options' must be an object");
    if (!r.stream) return Fail("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (auto b = Bool(*it, "include_usage", r.include_usage)) {
      b->param = "stream_options.include_usage";
      return b;
    }
  }
  if (auto it = j.find("stop"); it != j.end() && !it->is_null()) {
    if (it->is_string()) {
      r.stop.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      if (it->size() > model::kMaxStopStrings)
        return Fail("stop", fmt::format("'stop' takes at most {} strings, got {}", model::kMaxStopStrings, it->size()));
      for (const json& s : *it) {
        if (!s.is_string()) return Fail("stop", "'stop' must be a string or an array of strings");
        r.stop.push_back(s.get<std::string>());
      }
    } else {
      return Fail("stop", "'stop' must be a string or an array of strings");
    }
    for (const std::string& s : r.stop)
      if (s.empty()) return Fail("stop", "'stop' strings must not be empty");
  }
  if (auto it = j.find("logit_bias"); it != j.end() && !it->is_null() && !(it->is_object() && it->empty()))
    return Fail("logit_bias", "'logit_bias' is not supported by this server");
  return std::nullopt;
}

std::optional<Bad> ParseMessages(const json& j, CompletionRequest& r) {
  auto it = j.find("messages");
  if (it == j.end()) return Fail("messages", "'messages' is required");
  if (!it->is_array()) return Fail("messages", "'messages' must be an array");
  if (it->empty()) return Fail("messages", "'messages' must contain at least one message");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string at = fmt::format("messages[{}]", i);
    if (!m.is_object()) return Fail(at, fmt::format("'{}' must be an object", at));
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return Fail(at + ".role", fmt::format("'{}.role' must be a string", at));
    std::string rs = role->get<std::string>();
    if (rs == "developer") rs = "system";
    if (rs != "system" && rs != "user" && rs != "assistant")
      return Fail(at + ".role", fmt::format("'{}.role' must be one of system, developer, user, assistant; got '{}'", at,
                                            role->get<std::string>()));
    auto content = m.find("content");
    if (content == m.end() || content->is_null())
      return Fail(at + ".content", fmt::format("'{}.content' is required", at));
    std::string text;
    if (content->is_string()) {
      text = content->get<std::string>();
    } else if (content->is_array()) {
      for (size_t k = 0; k < content->size(); ++k) {
        const json& part = (*content)[k];
        const std::string pat = fmt::format("{}.content[{}]", at, k);
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
          return Fail(pat, fmt::format("'{}' must be an object with a 'type'", pat));
        if (part["type"] != "text")
          return Fail(pat + ".type", fmt::format("'{}.type' '{}' is not supported (only 'text')", pat,
                                                 part["type"].get<std::string>()));
        if (!part.contains("text") || !part["text"].is_string())
          return Fail(pat + ".text", fmt::format("'{}.text' must be a string", pat));
        text += part["text"].get<std::string>();
      }
    } else {
      return Fail(at + ".content", fmt::format("'{}.content' must be a string or an array of parts", at));
    }
    r.messages.push_back({rs, std::move(text)});
  }
  return std::nullopt;
}

std::optional<Bad> ParseTokenArray(const json& a, std::vector<int32_t>& out) {
  for (const json& t : a) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX)
      return Fail("prompt", "'prompt' token ids must be non-negative integers");
    out.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return std::nullopt;
}

std::optional<Bad> ParsePrompt(const json& j, CompletionRequest& r) {
  auto it = j.find("prompt");
  if (it == j.end() || it->is_null()) return Fail("prompt", "'prompt' is required");
  const json* p = &*it;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  if (p->is_string()) {
    r.prompt_text = p->get<std::string>();
    if (r.prompt_text.empty()) return Fail("prompt", "'prompt' must not be empty");
    return std::nullopt;
  }
  if (p->is_array()) {
    if (p->empty()) return Fail("prompt", "'prompt' must not be empty");
    if (!(*p)[0].is_number()) return Fail("prompt", "'prompt' with several prompts is not supported (n = 1 only)");
    r.prompt_is_ids = true;
    return ParseTokenArray(*p, r.prompt_ids);
  }
  return Fail("prompt", "'prompt' must be a string, an array of token ids, or a one-element array of either");
}

std::optional<CompletionRequest> Parse(std::string_view body, Endpoint e, ApiError& err) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  auto fail = [&](const Bad& b) {
    err = ApiError{};
    err.param = b.param;
    err.message = b.message;
    return std::nullopt;
  };
  if (j.is_discarded()) return fail({"", "the request body is not valid JSON"});
  if (!j.is_object()) return fail({"", "the request body must be a JSON object"});
  CompletionRequest r;
  r.endpoint = e;
  if (auto b = ParseCommon(j, r)) return fail(*b);
  if (e == Endpoint::kChat) {
    if (auto b = ParseMessages(j, r)) return fail(*b);
    bool logprobs = false;
    if (auto b = Bool(j, "logprobs", logprobs)) return fail(*b);
    int64_t v = 0;
    bool given = false;
    if (auto b = Integer(j, "top_logprobs", 0, 20, v, given)) return fail(*b);
    if (given && !logprobs) return fail({"top_logprobs", "'top_logprobs' requires 'logprobs' to be true"});
    if (logprobs) r.top_logprobs = given ? static_cast<int>(v) : 0;
  } else {
    if (auto b = ParsePrompt(j, r)) return fail(*b);
    int64_t v = 0;
    bool given = false;
    if (auto b = Integer(j, "logprobs", 0, 20, v, given)) return fail(*b);
    if (given) r.top_logprobs = static_cast<int>(v);
    if (r.max_tokens < 0) r.max_tokens = 16;  // OpenAI's default for completions
    if (auto it = j.find("echo"); it != j.end() && it->is_boolean() && it->get<bool>())
      return fail({"echo", "'echo' is not supported by this server"});
  }
  return r;
}

json Bytes(std::string_view s) {
  json a = json::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

double Finite(float lp) { return std::isfinite(lp) ? lp : -9999.0; }

}  // namespace

json ApiError::ToJson() const {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code.empty() ? json(nullptr) : json(code)}}}};
}

std::optional<CompletionRequest> ParseChatRequest(std::string_view body, ApiError& err) {
  return Parse(body, Endpoint::kChat, err);
}
std::optional<CompletionRequest> ParseCompletionRequest(std::string_view body, ApiError& err) {
  return Parse(body, Endpoint::kCompletions, err);
}

std::string NewCompletionId(Endpoint e) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{:012x}{:012x}", e == Endpoint::kChat ? "chatcmpl-" : "cmpl-", rng() & 0xffffffffffffull,
                     rng() & 0xffffffffffffull);
}

const char* OpenAiFinishReason(model::FinishReason r) {
  return r == model::FinishReason::kLength ? "length" : "stop";
}

json UsageJson(int prompt_tokens, int completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

json ChatLogprobEntry(const tokenizer::Tokenizer& tok, const model::LogprobResult& lp) {
  json top = json::array();
  for (const auto& t : lp.top) {
    std::string_view b = tok.TokenBytes(t.id);
    top.push_back({{"token", std::string(b)}, {"logprob", Finite(t.logprob)}, {"bytes", Bytes(b)}});
  }
  std::string_view b = tok.TokenBytes(lp.chosen.id);
  return {{"token", std::string(b)}, {"logprob", Finite(lp.chosen.logprob)}, {"bytes", Bytes(b)}, {"top_logprobs", top}};
}

json CompletionLogprobs(const tokenizer::Tokenizer& tok, const std::vector<model::LogprobResult>& lps) {
  json tokens = json::array(), token_lps = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = 0;
  for (const auto& lp : lps) {
    std::string_view b = tok.TokenBytes(lp.chosen.id);
    tokens.push_back(std::string(b));
    token_lps.push_back(Finite(lp.chosen.logprob));
    json top = json::object();
    for (const auto& t : lp.top) top[std::string(tok.TokenBytes(t.id))] = Finite(t.logprob);
    tops.push_back(top);
    offsets.push_back(offset);
    offset += b.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json ChatCompletionJson(const std::string& id, int64_t created, const std::string& model, const std::string& text,
                        model::FinishReason finish, int prompt_tokens, int completion_tokens, const json& logprobs) {
  json choice = {{"index", 0},
                 {"message", {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}}},
                 {"logprobs", logprobs},
                 {"finish_reason", OpenAiFinishReason(finish)}};
  return {{"id", id},           {"object", "chat.completion"}, {"created", created},
          {"model", model},     {"choices", json::array({choice})},
          {"usage", UsageJson(prompt_tokens, completion_tokens)}, {"system_fingerprint", "tenzro"}};
}

json TextCompletionJson(const std::string& id, int64_t created, const std::string& model, const std::string& text,
                        model::FinishReason finish, int prompt_tokens, int completion_tokens, const json& logprobs) {
  json choice = {{"index", 0}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", OpenAiFinishReason(finish)}};
  return {{"id", id},       {"object", "text_completion"}, {"created", created},
          {"model", model}, {"choices", json::array({choice})},
          {"usage", UsageJson(prompt_tokens, completion_tokens)}, {"system_fingerprint", "tenzro"}};
}

json ChunkJson(Endpoint e, const std::string& id, int64_t created, const std::string& model, const json& delta,
               std::optional<model::FinishReason> finish, const json& logprobs) {
  json choice = {{"index", 0},
                 {"logprobs", logprobs},
                 {"finish_reason", finish ? json(OpenAiFinishReason(*finish)) : json(nullptr)}};
  if (e == Endpoint::kChat) choice["delta"] = delta;
  else choice["text"] = delta.value("text", "");
  return {{"id", id},
          {"object", e == Endpoint::kChat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", model},
          {"system_fingerprint", "tenzro"},
          {"choices", json::array({choice})}};
}

json UsageChunkJson(Endpoint e, const std::string& id, int64_t created, const std::string& model, int prompt_tokens,
                    int completion_tokens) {
  return {{"id", id},
          {"object", e == Endpoint::kChat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", model},
          {"system_fingerprint", "tenzro"},
          {"choices", json::array()},
          {"usage", UsageJson(prompt_tokens, completion_tokens)}};
}

std::string DumpJson(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string SseFrame(const json& j) { return "data: " + DumpJson(j) + "\n\n"; }

}  // namespace tenzro::serve
