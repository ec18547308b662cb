// tenzro node: the distributed forward and the dispatch planner on the
// admin API (docs/dispatch.md, docs/formats/admin-api.md).
//
//   POST /v1/moe/forward-distributed
//        the body of POST /v1/moe/forward plus optional "on_missing"
//        ("fail" | "renormalize"), "wire_dtype" ("bf16" default | "f32" |
//        "f16" | "q8_0"),
//        "timeout_ms" (per holder call, default 10000), "max_rounds"
//        (default 3). Gates here (the layer's gate must be loaded), runs the
//        shared expert here, dispatches the routed experts (this node's own
//        locally, the rest to live holders over HTTP) and answers the
//        forward's JSON plus "distributed": true, "stages", "holders",
//        "dropped", "tokens_without_experts".
//   POST /v1/moe/plan-dispatch   {"model", "routings": [...]}
//        -> {"model", "self", "n_tokens", "batches", "unheld",
//            "holders_considered", "holder_stats"}
// Remote holders are called over QUIC when they advertise a quic endpoint
// and this node runs one, else over HTTP. Handlers run on the node's worker
// pool; remote calls block only the forward's own threads.
#pragma once

#include <memory>

#include "core/result.h"
#include "dispatch/exec_server.h"
#include "dispatch/forward.h"
#include "holder/expert_runtime.h"
#include "node/quic_service.h"
#include "swarm/agent.h"

namespace tenzro::node {

class Node;

// The node's Dispatcher: self id and live declarations from `agent`, own
// experts from `rt`, executors local (`runner` with `exec_options`), HTTP,
// and QUIC (dispatch::QuicExecutor over `quic`'s client; HTTP fallback only
// with `quic_http_fallback`) when `quic` is set. Its holder stats persist across forwards.
std::shared_ptr<dispatch::Dispatcher> MakeNodeDispatcher(std::shared_ptr<holder::ExpertRuntime> rt,
                                                         std::shared_ptr<swarm::SwarmAgent> agent,
                                                         std::shared_ptr<dispatch::ExpertRunner> runner,
                                                         dispatch::ExecServeOptions exec_options,
                                                         std::shared_ptr<QuicState> quic,
                                                         bool quic_http_fallback = false);

// The routes above over `rt` (gates, shared experts) and `d`.
Result<void> AddDispatchService(Node& node, std::shared_ptr<holder::ExpertRuntime> rt,
                                std::shared_ptr<dispatch::Dispatcher> d);

// The optional "on_missing", "wire_dtype", "timeout_ms" (1..600000) and
// "max_rounds" (1..10) fields of a request body over the defaults;
// kInvalidArgument naming a bad field.
Result<dispatch::ForwardOptions> ParseForwardOptions(const nlohmann::json& body);

// Spot checks as configured (--spot-check-*), with a per-process seed.
dispatch::SpotCheckOptions NodeSpotCheckOptions(const Node& node);

}  // namespace tenzro::node
