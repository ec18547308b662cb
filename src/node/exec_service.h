// tenzro node: the holder endpoint of the distributed forward.
//
//   POST /v1/moe/exec   (public listener; body: an exec request frame,
//                        answer: an exec response frame,
//                        docs/formats/exec-frame.md)
// Runs the named experts from the node's expert cache (prefetching cold
// ones, pinning one at a time) on the node's worker pool. Limits: the
// listener's max_body_bytes (413), at most 65536 rows and 4096 experts per
// request, the request's deadline capped at 120 s (30 s when it names none).
// Unknown experts, a wrong d_model, NaN/Inf rows: error frames, never a
// crash. Rows served are counted into the swarm agent's tokens/s
// (SwarmAgent::RecordServed).
#pragma once

#include <memory>

#include "core/result.h"
#include "core/thread_pool.h"
#include "dispatch/exec_server.h"
#include "holder/expert_runtime.h"
#include "node/node_config.h"
#include "swarm/agent.h"

namespace tenzro::node {

class Node;

// The options this node serves exec requests with (frame limit from the
// config; rows served counted into `agent`'s tokens/s when given); the local
// executor of the node's forward uses the same.
dispatch::ExecServeOptions NodeExecOptions(const NodeConfig& config, std::shared_ptr<swarm::SwarmAgent> agent);

// The runner behind POST /v1/moe/exec: `rt`'s expert cache computing on
// `pool` (kept alive by the runner). Other transports of the same frame
// (QUIC) reach it through the route.
std::shared_ptr<dispatch::ExpertRunner> MakeNodeExpertRunner(std::shared_ptr<holder::ExpertRuntime> rt, ThreadPool* pool);

// POST /v1/moe/exec on the public router, running on `runner` with `options`.
Result<void> AddExecService(Node& node, std::shared_ptr<dispatch::ExpertRunner> runner,
                            dispatch::ExecServeOptions options);

}  // namespace tenzro::node
