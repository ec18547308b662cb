#include "serve/routes.h"


#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "model/stop_matcher.h"
#include "net/bearer.h"
#include "serve/openai_api.h"
#include "tokenizer/chat_format.h"
#include "tokenizer/stream_decoder.h"

namespace tenzro::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kChatRoute = "/v1/chat/completions";
constexpr const char* kCompletionsRoute = "/v1/completions";

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

net::Response JsonResponse(int status, const json& j) {
  net::Response r;
  r.status = status;
  r.content_type = "application/json";
  r.body = DumpJson(j);
  return r;
}

net::Response ErrorResponse(const ApiError& e) {
  net::Response r = JsonResponse(e.status, e.ToJson());
  if (!e.retry_after.empty()) r.headers.emplace_back("Retry-After", e.retry_after);
  if (e.status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

ApiError MakeError(int status, std::string message, std::string param = "", std::string code = "",
                   std::string type = "invalid_request_error") {
  ApiError e;
  e.status = status;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  e.type = std::move(type);
  return e;
}

// A scheduler or engine error as an API error.
ApiError FromError(const Error& err) {
  switch (err.code()) {
    case ErrorCode::kInvalidArgument: return MakeError(400, err.message());
    case ErrorCode::kResourceExhausted: {
      ApiError e = MakeError(503, err.message(), "", "overloaded", "server_error");
      e.retry_after = "1";
      return e;
    }
    case ErrorCode::kUnavailable: {
      ApiError e = MakeError(503, err.message(), "", "unavailable", "server_error");
      e.retry_after = "1";
      return e;
    }
    default: return MakeError(500, err.ToString(), "", "", "server_error");
  }
}

// Frames from the scheduler's worker to the streamed body's producer.
struct Pipe {
  std::mutex mu;
  std::condition_variable cv;
  std::string buf;
  bool closed = false;  // no more frames after buf
  std::atomic<uint64_t> id{0};
  Scheduler* scheduler = nullptr;

  void Push(std::string s, bool close) {
    {
      std::lock_guard lk(mu);
      buf += s;
      if (close) closed = true;
    }
    cv.notify_all();
  }
};

// Held by the producer only: when the server drops the producer before the
// stream ended (the client went away), the request is cancelled.
struct CancelGuard {
  std::shared_ptr<Pipe> pipe;
  ~CancelGuard() {
    bool closed;
    {
      std::lock_guard lk(pipe->mu);
      closed = pipe->closed;
    }
    if (!closed) pipe->scheduler->Cancel(pipe->id.load());
  }
};

net::BodyProducer MakeProducer(std::shared_ptr<Pipe> pipe, std::shared_ptr<ServeApp> app) {
  auto guard = std::make_shared<CancelGuard>();  // (a temporary would cancel in its destructor)
  guard->pipe = pipe;
  return [pipe, guard, app](std::span<uint8_t> out) -> Result<size_t> {
    std::unique_lock lk(pipe->mu);
    pipe->cv.wait_for(lk, std::chrono::seconds(10), [&] { return !pipe->buf.empty() || pipe->closed; });
    if (pipe->buf.empty()) {
      if (pipe->closed) return size_t{0};
      pipe->buf = ": keep-alive\n\n";  // an SSE comment: clients ignore it
    }
    const size_t n = std::min(out.size(), pipe->buf.size());
    std::copy_n(pipe->buf.data(), n, out.data());
    pipe->buf.erase(0, n);
    return n;
  };
}

// One generation's state; its callbacks run on the scheduler's worker. It
// holds the app weakly: the app's scheduler owns the callbacks (no cycle),
// and finishes every request before the app is gone.
struct Gen {
  ServeApp* app;
  std::weak_ptr<ServeApp> weak_app;
  CompletionRequest req;
  std::string route;
  net::Responder responder;
  tokenizer::StreamDecoder dec;
  std::optional<model::StopMatcher> stop;
  std::string text;
  std::vector<model::LogprobResult> lps;  // whole responses
  json pending_lp = json::array();        // streamed chat: entries not yet sent
  std::vector<model::LogprobResult> pending_cl;  // streamed completions: not yet sent
  std::string id;
  int64_t created = 0;
  Clock::time_point arrived, last_token;
  int tokens = 0;
  bool started = false;  // streamed: response headers sent
  std::shared_ptr<Pipe> pipe;

  Gen(const std::shared_ptr<ServeApp>& a, net::Responder r)
      : app(a.get()), weak_app(a), responder(std::move(r)), dec(a->tokenizer()) {}

  Endpoint endpoint() const { return req.endpoint; }

  void Start() {
    if (started) return;
    started = true;
    net::Response r = net::Response::Stream("text/event-stream", MakeProducer(pipe, weak_app.lock()));
    r.headers.emplace_back("Cache-Control", "no-cache");
    responder.Send(std::move(r));
    app->metrics().CountRequest(route, 200);
    if (endpoint() == Endpoint::kChat)
      pipe->Push(SseFrame(ChunkJson(endpoint(), id, created, req.model, {{"role", "assistant"}, {"content", ""}},
                                    std::nullopt, nullptr)),
                 false);
  }

  json StreamLogprobs() {
    if (req.top_logprobs < 0 || (pending_lp.empty() && pending_cl.empty())) return nullptr;
    json out;
    if (endpoint() == Endpoint::kChat) out = {{"content", pending_lp}, {"refusal", nullptr}};
    else out = CompletionLogprobs(app->tokenizer(), pending_cl);
    pending_lp = json::array();
    pending_cl.clear();
    return out;
  }

  void Emit(const std::string& piece) {
    text += piece;
    if (!req.stream || (piece.empty() && pending_lp.empty() && pending_cl.empty())) return;
    json delta = endpoint() == Endpoint::kChat ? json{{"content", piece}} : json{{"text", piece}};
    pipe->Push(SseFrame(ChunkJson(endpoint(), id, created, req.model, delta, std::nullopt, StreamLogprobs())), false);
  }

  bool OnToken(const TokenEvent& ev) {
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - (tokens == 0 ? arrived : last_token)).count();
    if (tokens == 0) app->metrics().ObserveTtft(since);
    else app->metrics().ObserveInterToken(since);
    last_token = now;
    ++tokens;
    app->metrics().AddGeneratedToken();
    if (ev.logprob) {
      if (!req.stream) lps.push_back(*ev.logprob);
      else if (endpoint() == Endpoint::kChat) pending_lp.push_back(ChatLogprobEntry(app->tokenizer(), *ev.logprob));
      else pending_cl.push_back(*ev.logprob);
    }
    if (req.stream) Start();
    model::StopMatcher::Output out = stop->Feed(dec.Feed(ev.id));
    Emit(out.emit);
    return !out.stopped;
  }

  void OnDone(const FinishEvent& fe) {
    if (!fe.status) {
      ApiError e = FromError(fe.status.error());
      if (!started) {
        app->metrics().CountRequest(route, e.status);
        responder.Send(ErrorResponse(e));
      } else {
        pipe->Push(SseFrame(e.ToJson()), true);
      }
      return;
    }
    model::FinishReason reason = fe.reason;
    if (!stop->stopped()) {
      model::StopMatcher::Output out = stop->Feed(dec.Flush());
      Emit(out.emit);
      if (!out.stopped) Emit(stop->Flush());
    }
    if (stop->stopped()) reason = model::FinishReason::kStop;
    if (!req.stream) {
      json lp = nullptr;
      if (req.top_logprobs >= 0) {
        if (endpoint() == Endpoint::kChat) {
          json content = json::array();
          for (const auto& l : lps) content.push_back(ChatLogprobEntry(app->tokenizer(), l));
          lp = {{"content", content}, {"refusal", nullptr}};
        } else {
          lp = CompletionLogprobs(app->tokenizer(), lps);
        }
      }
      json body = endpoint() == Endpoint::kChat
                      ? ChatCompletionJson(id, created, req.model, text, reason, fe.prompt_tokens, fe.completion_tokens, lp)
                      : TextCompletionJson(id, created, req.model, text, reason, fe.prompt_tokens, fe.completion_tokens, lp);
      app->metrics().CountRequest(route, 200);
      responder.Send(JsonResponse(200, body));
      return;
    }
    Start();
    json delta = endpoint() == Endpoint::kChat ? json::object() : json{{"text", ""}};
    std::string frames = SseFrame(ChunkJson(endpoint(), id, created, req.model, delta, reason, StreamLogprobs()));
    if (req.include_usage)
      frames += SseFrame(UsageChunkJson(endpoint(), id, created, req.model, fe.prompt_tokens, fe.completion_tokens));
    frames += kSseDone;
    pipe->Push(std::move(frames), true);
  }
};

std::optional<ApiError> CheckAuth(const ServeApp& app, const net::Request& req) {
  if (app.options().api_key.empty() || net::BearerMatches(req, app.options().api_key)) return std::nullopt;
  return MakeError(401, "Incorrect API key provided: send 'Authorization: Bearer <key>'.", "", "invalid_api_key");
}

std::optional<ApiError> CheckReady(const ServeApp& app) {
  if (app.ready()) return std::nullopt;
  ApiError e = MakeError(503, app.status(), "", "model_not_ready", "server_error");
  e.retry_after = "5";
  return e;
}

// The prompt's token ids, or an error.
std::optional<ApiError> PromptIds(ServeApp& app, const CompletionRequest& r, std::vector<int32_t>& ids) {
  const tokenizer::Tokenizer& tok = app.tokenizer();
  if (r.endpoint == Endpoint::kCompletions && r.prompt_is_ids) {
    for (int32_t id : r.prompt_ids)
      if (!tok.IsValid(id) || id >= app.engine().hparams().n_vocab)
        return MakeError(400, fmt::format("'prompt' token id {} is outside the vocabulary [0, {})", id, tok.vocab_size()),
                         "prompt");
    ids = r.prompt_ids;
    return std::nullopt;
  }
  std::string text = r.prompt_text;
  if (r.endpoint == Endpoint::kChat) {
    if (!tok.chat_template().empty()) {
      if (Result<void> c = tokenizer::CheckChatTemplate(tok.chat_template()); !c)
        return MakeError(500, "the model's chat template is not supported: " + c.error().message(), "", "",
                         "server_error");
    }
    text = tokenizer::RenderChatMl(r.messages, /*add_generation_prompt=*/true);
  }
  if (tok.add_bos() && tok.bos() != tokenizer::kNoToken) ids.push_back(tok.bos());
  std::vector<int32_t> body = tok.Encode(text, /*parse_special=*/true);
  ids.insert(ids.end(), body.begin(), body.end());
  if (ids.empty()) return MakeError(400, "the prompt encodes to no tokens", r.endpoint == Endpoint::kChat ? "messages" : "prompt");
  return std::nullopt;
}

void HandleCompletion(const std::shared_ptr<ServeApp>& app, Endpoint e, const net::Request& req,
                      net::Responder responder) {
  const std::string route = e == Endpoint::kChat ? kChatRoute : kCompletionsRoute;
  auto fail = [&](const ApiError& err) {
    app->metrics().CountRequest(route, err.status);
    responder.Send(ErrorResponse(err));
  };
  if (auto err = CheckAuth(*app, req)) return fail(*err);
  if (auto err = CheckReady(*app)) return fail(*err);
  ApiError perr;
  std::optional<CompletionRequest> r =
      e == Endpoint::kChat ? ParseChatRequest(req.body, perr) : ParseCompletionRequest(req.body, perr);
  if (!r) return fail(perr);
  if (r->model != app->options().model_id)
    return fail(MakeError(404, fmt::format("The model '{}' does not exist; this server serves '{}'.", r->model,
                                           app->options().model_id),
                          "model", "model_not_found"));
  std::vector<int32_t> prompt;
  if (auto err = PromptIds(*app, *r, prompt)) return fail(*err);
  const int ctx = app->context();
  const int n_prompt = static_cast<int>(prompt.size());
  const char* prompt_param = e == Endpoint::kChat ? "messages" : "prompt";
  if (n_prompt >= ctx)
    return fail(MakeError(400, fmt::format("the prompt has {} tokens; this server's context is {}", n_prompt, ctx),
                          prompt_param, "context_length_exceeded"));
  if (r->max_tokens < 0) r->max_tokens = ctx - n_prompt;
  if (n_prompt + r->max_tokens > ctx)
    return fail(MakeError(400,
                          fmt::format("the prompt ({} tokens) plus max_tokens ({}) exceed this server's context of {}",
                                      n_prompt, r->max_tokens, ctx),
                          "max_tokens", "context_length_exceeded"));
  Result<model::StopMatcher> stop = model::StopMatcher::Create(r->stop);
  if (!stop) return fail(MakeError(400, stop.error().message(), "stop"));

  auto gen = std::make_shared<Gen>(app, responder);
  gen->req = std::move(*r);
  gen->route = route;
  gen->stop.emplace(std::move(*stop));
  gen->id = NewCompletionId(e);
  gen->created = NowUnix();
  gen->arrived = Clock::now();
  gen->pipe = std::make_shared<Pipe>();
  gen->pipe->scheduler = &app->scheduler();

  GenRequest gr;
  gr.prompt = std::move(prompt);
  gr.max_tokens = gen->req.max_tokens;
  gr.sampling = gen->req.sampling;
  if (!gen->req.ignore_eos) gr.eog = app->tokenizer().end_of_generation();
  gr.top_logprobs = gen->req.top_logprobs;
  gr.on_token = [gen](const TokenEvent& ev) { return gen->OnToken(ev); };
  gr.on_done = [gen](const FinishEvent& fe) { gen->OnDone(fe); };
  Result<uint64_t> id = app->scheduler().Submit(std::move(gr));
  if (!id) {
    if (id.error().code() == ErrorCode::kResourceExhausted) {
      ApiError err = MakeError(429, id.error().message(), "", "queue_full", "rate_limit_error");
      err.retry_after = "1";
      return fail(err);
    }
    return fail(FromError(id.error()));
  }
  gen->pipe->id = *id;
  app->metrics().AddPromptTokens(static_cast<uint64_t>(n_prompt));
}

json ModelJson(const ServeApp& app) {
  return {{"id", app.options().model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "tenzro"}};
}

}  // namespace


void AddServeRoutes(net::Router& router, std::shared_ptr<ServeApp> app) {
  for (Endpoint e : {Endpoint::kChat, Endpoint::kCompletions}) {
    router.AddAsync("POST", e == Endpoint::kChat ? kChatRoute : kCompletionsRoute,
                    [app, e](std::shared_ptr<const net::Request> req, net::Responder resp) {
                      ThreadPool* pool = app->options().request_pool;
                      if (pool && pool->Submit([app, e, req, resp] { HandleCompletion(app, e, *req, resp); })) return;
                      HandleCompletion(app, e, *req, std::move(resp));
                    });
  }
  auto models = [app](const net::Request& req) -> net::Response {
    if (auto err = CheckAuth(*app, req)) return ErrorResponse(*err);
    if (!req.route_suffix.empty() && req.route_suffix != app->options().model_id)
      return ErrorResponse(MakeError(404, fmt::format("The model '{}' does not exist.", req.route_suffix), "model",
                                     "model_not_found"));
    if (!req.route_suffix.empty()) return JsonResponse(200, ModelJson(*app));
    return JsonResponse(200, {{"object", "list"}, {"data", json::array({ModelJson(*app)})}});
  };
  router.Add("GET", "/v1/models", models);
  router.Add("GET", "/v1/models/", models);
  auto health = [app](const net::Request&) {
    std::string missing = app->ready() ? "" : app->status();
    if (app->ready() && app->options().coverage) missing = app->options().coverage(app->engine().hparams());
    if (missing.empty()) return JsonResponse(200, {{"status", "ok"}, {"model", app->options().model_id}});
    net::Response r = JsonResponse(503, {{"status", "unavailable"}, {"error", missing}});
    r.headers.emplace_back("Retry-After", "5");
    return r;
  };
  if (app->options().request_pool)
    router.AddOnPool("GET", "/health", app->options().request_pool, health);
  else
    router.Add("GET", "/health", health);
}

}  // namespace tenzro::serve
