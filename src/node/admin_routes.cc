#include "node/admin_routes.h"

#include <thread>

#include "net/json_http.h"

namespace tenzro::node {

void AddJobRoutes(net::Router& admin, JobRegistry& jobs) {
  admin.Add("GET", "/v1/jobs", [&jobs](const net::Request& req) {
    std::optional<std::string> kind = req.QueryParam("kind");
    std::optional<std::string> state = req.QueryParam("state");
    nlohmann::json list = nlohmann::json::array();
    for (const JobInfo& j : jobs.List()) {
      if (kind && j.kind != *kind) continue;
      if (state && JobStateName(j.state) != *state) continue;
      list.push_back(j.ToJson());
    }
    return net::JsonResponse({{"jobs", std::move(list)}});
  });
  admin.Add("GET", "/v1/jobs/", [&jobs](const net::Request& req) {
    Result<JobInfo> j = jobs.Get(req.route_suffix);
    if (!j) return net::ErrorResponse(j.error());
    return net::JsonResponse(j->ToJson());
  });
}

namespace {

Result<uint64_t> UintField(const nlohmann::json& body, const char* name, uint64_t max) {
  if (!body.contains(name)) return Error::InvalidArgument("field '{}' is missing", name);
  const nlohmann::json& v = body[name];
  if (!v.is_number_unsigned() || v.get<uint64_t>() > max)
    return Error::InvalidArgument("field '{}' must be an integer in 0..{}", name, max);
  return v.get<uint64_t>();
}

Result<std::string> StartDebugJob(JobRegistry& jobs, const std::string& body_text) {
  TENZRO_TRY(nlohmann::json body, net::ParseJsonBody(body_text));
  if (!body.is_object()) return Error::InvalidArgument("request body must be a JSON object");
  TENZRO_TRY(uint64_t steps, UintField(body, "steps", 100000));
  TENZRO_TRY(uint64_t step_ms, UintField(body, "step_ms", 60000));
  std::string fail;
  if (body.contains("fail")) {
    if (!body["fail"].is_string()) return Error::InvalidArgument("field 'fail' must be a string");
    fail = body["fail"];
  }
  return jobs.Submit("debug.sleep", body, [steps, step_ms, fail](JobContext& ctx) -> Result<nlohmann::json> {
    for (uint64_t i = 0; i < steps; ++i) {
      if (ctx.cancelled()) return Error::Unavailable("node is shutting down");
      std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
      ctx.SetProgress(i + 1, steps, fmt::format("step {} of {}", i + 1, steps));
    }
    if (!fail.empty()) return Error::Internal("{}", fail);
    return nlohmann::json{{"steps", steps}};
  });
}

}  // namespace

void AddDebugRoutes(net::Router& admin, JobRegistry& jobs, ThreadPool& pool) {
  // On the pool: Submit writes the job record (fsync) before answering.
  admin.AddOnPool("POST", "/v1/debug/jobs", &pool, [&jobs](const net::Request& req) {
    Result<std::string> id = StartDebugJob(jobs, req.body);
    if (!id) return net::ErrorResponse(id.error());
    return net::JsonResponse({{"id", *id}, {"kind", "debug.sleep"}}, 202);
  });
}

}  // namespace tenzro::node
