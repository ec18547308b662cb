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
#include "dispatch/exec_server.h"

namespace tenzro::node {

class Node;

// The options this node serves exec requests with (limits, RecordServed);
// the local executor of the node's forward uses the same.
dispatch::ExecServeOptions NodeExecOptions(Node& node);

// The runner behind POST /v1/moe/exec (the node's expert cache on its worker
// pool), for other transports of the same frame (QUIC): ServeExec(frame,
// *runner, NodeExecOptions(node)).
Result<std::shared_ptr<dispatch::ExpertRunner>> NodeExpertRunner(Node& node);

Result<void> AddExecService(Node& node);

}  // namespace tenzro::node
