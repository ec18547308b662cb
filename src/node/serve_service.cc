#include "node/serve_service.h"

#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "catalog/catalog.h"
#include "node/node.h"
#include "serve/routes.h"

namespace tenzro::node {

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
  o.scheduler.max_active = static_cast<int>(cfg.serve_max_active);
  o.scheduler.max_waiting = static_cast<int>(cfg.serve_max_waiting);
  o.scheduler.max_step_tokens = static_cast<int>(cfg.serve_step_tokens);
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
