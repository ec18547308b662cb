// tenzro node: model manifests — the node's trusted manifests and the routes
// that publish and show them (docs/security.md, docs/formats/manifest.md).
//
//   POST /v1/moe/publish-manifest {"model": M}   (admin)
//     Builds M's manifest from this node's finished prepare jobs (every
//     expert in every format, every gate, every spine; the shape when the
//     catalog knows M), signs it with the node key, stores it as a blob and
//     announces it as provided. Answers {"model", "hash", "uri", "bytes",
//     "publisher", "experts", "gates", "spines"}. kNotFound when this node
//     prepared nothing of M. Each prepare job also does this when it
//     finishes and names the result in its own result ("manifest"), covering
//     the jobs finished before it.
//   GET /v1/moe/manifest                          (admin)
//     manifest::TrustStore::Status(): the mode, the trusted manifests loaded,
//     those still pending, the last error.
//
// MakeNodeTrust reads config trust_manifest / trust_publisher; manifests are
// fetched from the node's store, else from the swarm's providers
// (`fetch_blob`), and retried every 2 s in the background until all are
// loaded. ManifestScreen is the swarm agent's screen in manifest mode.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "blob/blob_store.h"
#include "core/result.h"
#include "holder/expert_runtime.h"
#include "manifest/manifest_trust.h"
#include "swarm/agent.h"

namespace tenzro::node {

class Node;

// The node's trust store. kInvalidArgument for a malformed configured hash.
Result<std::shared_ptr<manifest::TrustStore>> MakeNodeTrust(
    Node& node, std::shared_ptr<blob::BlobStore> store,
    decltype(holder::ExpertRuntimeOptions::fetch_blob) fetch_blob);

// Drops from a declaration every expert, gate and offer whose blob no trusted
// manifest of its model lists. Null in open mode.
std::function<void(swarm::Declaration&)> ManifestScreen(std::shared_ptr<manifest::TrustStore> trust);

// Builds, signs, stores and announces the manifest of `model` (see above);
// `extra` is a prepare result not yet in the job registry (a job finishing).
Result<nlohmann::json> PublishManifest(Node& node, blob::BlobStore& store, swarm::SwarmAgent* agent,
                                       const std::string& model, const nlohmann::json* extra = nullptr);

// The routes above, and the background loader of pending manifests.
Result<void> AddManifestService(Node& node, std::shared_ptr<blob::BlobStore> store,
                                std::shared_ptr<manifest::TrustStore> trust, std::shared_ptr<swarm::SwarmAgent> agent);

}  // namespace tenzro::node
