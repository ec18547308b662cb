#include "node/serve_service.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "catalog/catalog.h"
#include "node/node.h"
#include "serve/routes.h"

namespace tenzro::node {
namespace {

constexpr size_t kDashboardRequests = 32;

// The dashboard's "serving" section (docs/formats/admin-api.md).
nlohmann::json ServingJson(serve::ServeApp& app) {
  using nlohmann::json;
  // Not the loading status itself: it names the checkpoint's path.
  std::string status = app.status();
  if (status.rfind("loading", 0) == 0) status = "loading";
  json j = {{"model", app.options().model_id}, {"status", status}, {"ready", app.ready()}};
  if (!app.ready()) return j;
  const auto now = serve::LiveStats::Clock::now();
  const serve::SchedulerStats st = app.scheduler().stats();
  const serve::LiveStats::Rates rates = app.live().Read(now);
  j["active"] = st.active;
  j["queued"] = st.queued;
  j["max_active"] = app.scheduler().options().max_active;
  j["session_bytes"] = st.session_bytes;
  j["session_budget"] = st.session_budget;
  j["totals"] = {{"requests", st.requests},
                 {"prompt_tokens", st.prompt_tokens},
                 {"generated_tokens", st.generated_tokens},
                 {"steps", st.steps},
                 {"drafted_tokens", st.drafted_tokens},
                 {"accepted_tokens", st.accepted_tokens}};
  j["last_step_ms"] = st.last_step_ms;
  j["generated_tokens_per_s"] = rates.generated_per_s;
  j["mean_batch"] = rates.mean_batch;
  j["window_s"] = rates.window_s;
  json reqs = json::array();
  for (const serve::RequestSnapshot& r : app.scheduler().Requests(kDashboardRequests)) {
    reqs.push_back({{"id", r.id},
                    {"state", r.queued ? "queued" : r.prefilled < r.prompt_tokens ? "prefill" : "decode"},
                    {"prompt_tokens", r.prompt_tokens},
                    {"generated", r.generated},
                    {"max_tokens", r.max_tokens},
                    {"age_ms", std::chrono::duration_cast<std::chrono::milliseconds>(now - r.submitted).count()}});
  }
  j["requests"] = std::move(reqs);
  return j;
}

}  // namespace

Result<void> AddServeService(Node& node, serve::MakeExecutor make_executor,
                             std::function<std::string(const model::HParams&)> coverage) {
  const NodeConfig& cfg = node.config();
  if (cfg.serve.empty()) return Ok();
  TENZRO_TRY(catalog::Catalog cat, catalog::Catalog::Load(cfg.data_dir));
  const catalog::CatalogEntry* e = cat.Lookup(cfg.serve);
  if (!e)
    return Error::NotFound("--serve {}: not in the catalog of {} (cataloged: {}); add it with `tenzro moe catalog-add`",
                           cfg.serve, cfg.data_dir, fmt::join(cat.Ids(), ", "));
  serve::ServeOptions o;
  o.model_id = e->id;
  o.checkpoint = e->checkpoint;
  o.api_key = cfg.api_key;
  o.engine.threads = static_cast<int>(cfg.serve_threads);
  o.engine.session_budget = cfg.serve_session_budget;
  o.engine.wire_dtype = cfg.serve_wire_dtype;  // the in-process executor's rounding (serve_experts local)
  o.scheduler.max_active = static_cast<int>(cfg.serve_max_active);
  o.scheduler.max_waiting = static_cast<int>(cfg.serve_max_waiting);
  o.scheduler.max_step_tokens = static_cast<int>(cfg.serve_step_tokens);
  o.scheduler.draft.draft_max = static_cast<int>(cfg.serve_draft_max);
  o.max_context = static_cast<int>(cfg.serve_ctx);
  o.make_executor = std::move(make_executor);
  o.coverage = std::move(coverage);
  o.request_pool = &node.pool();
  auto app = std::make_shared<serve::ServeApp>(std::move(o));
  serve::AddServeRoutes(node.public_router(), app);
  node.AddMetrics([app](std::string& out) {
    if (app->ready()) {
      serve::SchedulerStats st = app->scheduler().stats();
      app->metrics().Render(&st, out);
    } else {
      app->metrics().Render(nullptr, out);
    }
  });
  node.AddInfo("serve", [app] {
    return nlohmann::json{{"model", app->options().model_id}, {"status", app->status()}};
  });
  node.AddDashboardSection("serving", [app] { return ServingJson(*app); });
  auto loader = std::make_shared<std::thread>([app] {
    Result<void> r = app->Load();
    if (r) spdlog::info("serving model '{}' from {}", app->options().model_id, app->options().checkpoint);
    else spdlog::error("{}", app->status());
  });
  node.OnStop([loader] {
    if (loader->joinable()) loader->join();
  });
  return Ok();
}

}  // namespace tenzro::node
