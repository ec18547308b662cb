// tenzro node: serving a model with the OpenAI-compatible API
// (`tenzro node run --serve MODEL_ID [--api-key KEY]`; docs/serving.md).
//
// When config().serve names a model, the service resolves it through the
// catalog (DATA_DIR/catalog.json, the checkpoint recorded by `tenzro moe
// catalog-add`), registers the API routes on the node's public listener
// (serve/routes.h) and its metrics on GET /metrics, and opens the engine,
// the tokenizer and the batch scheduler on a background thread: until that
// is done GET /health answers 503 "loading ..." (or why loading failed).
// It also adds the dashboard's "serving" section (Node::AddDashboardSection;
// fields in docs/formats/admin-api.md): status, totals, tokens/s over ~10 s
// (serve::LiveStats), at most 32 live requests (Scheduler::Requests).
// Without config().serve it does nothing.
// `make_executor` is where the MoE blocks run: null = in-process on the
// checkpoint's experts; the swarm executor (node/swarm_moe_executor.h)
// plugs in here.
// Errors: kNotFound when the id is not in the catalog (naming the ids that
// are), the catalog's own errors.
#pragma once

#include <functional>
#include <string>

#include "core/result.h"
#include "model/hparams.h"
#include "serve/serve_app.h"

namespace tenzro::node {

class Node;

// `coverage` (may be null) tells /health whether every routed expert has a
// live holder (serve::ServeOptions::coverage).
Result<void> AddServeService(Node& node, serve::MakeExecutor make_executor = nullptr,
                             std::function<std::string(const model::HParams&)> coverage = nullptr);

}  // namespace tenzro::node
