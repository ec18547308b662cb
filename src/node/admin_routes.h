// tenzro node: built-in admin routes over the job registry.
//
//   GET  /v1/jobs          {"jobs": [<job>...]} oldest first; ?kind=K&state=S filter
//   GET  /v1/jobs/<id>     <job>, or 404 not_found
//   POST /v1/debug/jobs    (config debug_routes only) starts a "debug.sleep" job:
//                          {"steps": N, "step_ms": M, "fail": "message"?} -> 202 {"id": ...}
// The job object is JobInfo::ToJson (docs/formats/admin-api.md).
#pragma once

#include "core/thread_pool.h"
#include "net/router.h"
#include "node/job_registry.h"

namespace tenzro::node {

void AddJobRoutes(net::Router& admin, JobRegistry& jobs);
void AddDebugRoutes(net::Router& admin, JobRegistry& jobs, ThreadPool& pool);

}  // namespace tenzro::node
