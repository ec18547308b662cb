// tenzro node: the expert runtime's admin routes (docs/runtime.md,
// docs/formats/admin-api.md).
//
//   POST /v1/moe/load-expert  {"model", "layer", "expert", "file", "from"?}
//   POST /v1/moe/load-gate    {"model", "layer", "file", "from"?}
//        "file": an absolute path (safetensors or mini-GGUF) or a
//        tenzro://blob/<hash> URI; "from": peer URL for a missing blob.
//   GET  /v1/moe/status        experts, gates, tiers, memory, compute backend
//   POST /v1/moe/forward       {"model", "layer"?, "d_model", "n_tokens",
//                               "hidden_f32_b64"}  ->  {"model", "layer",
//        "n_tokens", "d_model", "output_f32_b64", "routing", "shared_expert",
//        "elapsed_ms", "cache"}; hidden/output are n_tokens x d_model
//        little-endian float32, base64 (RFC 4648, padded).
// Loads and forwards run on the node's worker pool (they read files, fetch
// blobs and compute); status answers on the loop thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include "core/bytes.h"
#include "core/result.h"
#include "holder/expert_runtime.h"

#include <nlohmann/json.hpp>

namespace tenzro::node {

class Node;

// The node's ExpertRuntime over `store`, with config().memory_budget and
// DATA_DIR, computing on the node's worker pool. `fetch_blob`, `on_change`
// and `trust` are holder::ExpertRuntimeOptions' (node/compose.cc points
// them at the transfer module, the swarm and the node's trusted manifests).
// Logs what a restart skipped.
Result<std::shared_ptr<holder::ExpertRuntime>> OpenNodeExpertRuntime(
    Node& node, std::shared_ptr<blob::BlobStore> store,
    decltype(holder::ExpertRuntimeOptions::fetch_blob) fetch_blob, std::function<void()> on_change,
    std::shared_ptr<manifest::TrustStore> trust);

Result<void> AddRuntimeService(Node& node, std::shared_ptr<holder::ExpertRuntime> rt);

// The body of POST /v1/moe/forward (also read by the distributed forward,
// dispatch_service.h): the hidden state checked to be exactly n_tokens x
// d_model float32. kInvalidArgument naming the field.
struct ForwardRequest {
  std::string model;
  std::optional<int> layer;
  int64_t d_model = 0;
  int64_t n_tokens = 0;
  std::vector<float> x;
};
Result<ForwardRequest> ParseForwardRequest(const nlohmann::json& body);
// [{"token_index", "experts": [{"layer", "expert", "weight"}]}] (the answer's "routing").
nlohmann::json ForwardRoutingJson(const std::vector<runtime::TokenRouting>& routing, int layer);

// RFC 4648 base64 with padding (the forward wire format).
std::string Base64Encode(ByteSpan data);
// kInvalidArgument naming the offset of the first bad character.
Result<Bytes> Base64Decode(std::string_view text);

}  // namespace tenzro::node
