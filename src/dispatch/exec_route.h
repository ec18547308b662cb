// tenzro dispatch: the HTTP side of a holder — POST /v1/moe/exec
// (docs/formats/exec-frame.md, docs/formats/admin-api.md).
//
// The body is an exec request frame; the answer is an exec response frame
// with Content-Type application/x-tenzro-exec: status 200, or the status of
// the whole-request error (HttpStatusFor, e.g. 400 for a frame that does not
// decode or a wrong d_model) with an error frame. Per-expert errors (an
// expert not held) travel inside a 200 frame. The route runs on `pool`; the
// body size limit is the server's (413, JSON error, as for every route).
// The client side is HttpExecutor (executor.h).
#pragma once

#include <memory>

#include "core/thread_pool.h"
#include "dispatch/exec_server.h"
#include "net/router.h"

namespace tenzro::dispatch {

inline constexpr std::string_view kExecPath = "/v1/moe/exec";

// REQUIRES: pool outlives the router's server.
void AddExecRoute(net::Router& router, ThreadPool* pool, std::shared_ptr<ExpertRunner> runner,
                  ExecServeOptions options);

}  // namespace tenzro::dispatch
