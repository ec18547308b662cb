// tenzro node: the MoE services a node runs — the blob store served to peers
// and the expert preparation jobs (admin API).
//
//   public  GET  /blobs/<hash>[?ranges=..]   (transfer/http_blobs.h)
//   admin   POST /v1/moe/prepare             body: PrepareRequest JSON without
//           "checkpoint" (resolved from DATA_DIR/catalog.json) or with it;
//           answers {"job_id", "state", "model_id", "layer", "experts", "quant",
//           "checkpoint"} at once. Poll GET /v1/jobs/<job_id>.
//
//   admin   POST /v1/moe/prepare-dense       body: SpineRequest JSON
//           (prepare/spine.h) {"model_id", "quant"?, "checkpoint"?}; answers
//           {"job_id", "state", "kind", "model_id", "quant", "checkpoint"}.
//           The job's result names the spine blob (uri, hash, bytes).
//
// Prepare jobs are of kind "moe.prepare" / "moe.prepare-dense"; they are idempotent (publishing the
// same blob twice is a no-op), so a job interrupted by a restart is resumed.
#pragma once

#include <memory>

#include "blob/blob_store.h"
#include "swarm/agent.h"
#include "core/result.h"

namespace tenzro::node {

class Node;

inline constexpr const char* kPrepareJobKind = "moe.prepare";
inline constexpr const char* kPrepareDenseJobKind = "moe.prepare-dense";

// DATA_DIR/blobs (node/compose.cc opens it once per node; every service
// that serves or stores blobs gets this one).
Result<std::shared_ptr<blob::BlobStore>> OpenNodeBlobStore(const std::string& data_dir);

Result<void> AddBlobService(Node& node, std::shared_ptr<blob::BlobStore> store);
// `agent` (may be null) announces every blob a finished job published; every
// finished job re-publishes the model's manifest (node/manifest_service.h)
// and names it in its result ("manifest": {"hash", "uri"}).
Result<void> AddPrepareService(Node& node, std::shared_ptr<blob::BlobStore> store,
                               std::shared_ptr<swarm::SwarmAgent> agent);

}  // namespace tenzro::node
