// tenzro serve: the OpenAI-compatible HTTP routes on a net::Router.
//
//   POST /v1/chat/completions   chat (ChatML prompt), whole or streamed (SSE)
//   POST /v1/completions        raw prompt text or token ids
//   GET  /v1/models             the served model
//   GET  /health                200 {"status":"ok"} when loaded, else 503 with why
//
// Completion handlers parse, tokenize and submit on options().request_pool
// (the loop thread when null); the scheduler's worker produces tokens; a
// whole response is sent from the worker (Responder), a streamed one is a
// BodyProducer (on the server's producer pool) that waits for its frames. A streamed response's
// status is sent with its first event, so a request that fails before its
// first token (no session: 503) still gets a proper error. A producer whose
// client is gone (the server drops it after a write error) cancels the
// request: its session is freed at the next step boundary.
// When options().api_key is set, /v1/* require "Authorization: Bearer KEY"
// (constant-time compare); /health does not.
// Wire format and errors: docs/serving.md.
#pragma once

#include <memory>

#include "net/router.h"
#include "serve/serve_app.h"

namespace tenzro::serve {

// REQUIRES: `app` outlives the router's server (it is captured shared).
void AddServeRoutes(net::Router& router, std::shared_ptr<ServeApp> app);


}  // namespace tenzro::serve
