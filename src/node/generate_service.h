// tenzro node: whole-model generation on this node with the routed experts
// on the swarm (docs/engine.md, docs/formats/admin-api.md).
//
//   POST /v1/model/generate   (admin listener)
//     {"model": model id, "spine"?: tenzro://blob/<hash>, "prompt_ids": [int...], "max_tokens"?: 128,
//      "temperature"?, "top_k"?, "top_p"?, "min_p"?, "repeat_penalty"?,
//      "presence_penalty"?, "frequency_penalty"?, "seed"?, "stop"?: [str],
//      "ignore_eos"?: false, "logits"?: false, "ctx"?: positions,
//      "on_missing"?: "fail"|"renormalize", "wire_dtype"?: "bf16" (default) |
//      "f32"|"f16"|"q8_0", "timeout_ms"?, "max_rounds"?}
//     -> {"model", "tokens", "text", "finish_reason", "prompt_tokens",
//         "generated_tokens", "prefill_ms", "decode_ms", "decode_tokens_per_s",
//         "ms_per_token", "wire_dtype" (the one used), "layers": [per-layer dispatch
//         totals, SwarmMoeExecutor::StatsJson], "n_vocab",
//         "logits_rows"?, "logits_f32_b64"?}
//
// The engine opens the spine blob when "spine" is given (one in this node's
// store, from `tenzro moe prepare-dense`; its tenzro.model_id must be
// "model"), else the model's checkpoint from the node's catalog. It runs the
// dense spine here, and a SwarmMoeExecutor (swarm_moe_executor.h) gates each
// layer here with that file's routers and shared experts and sends the
// routed experts to the swarm's holders through the node's dispatcher (with
// the node's spot-check settings). Rows travel as "wire_dtype" (default
// bf16), so tokens and logits are bit for bit those of `tenzro generate
// --local --wire-dtype` with the same dtype (which rounds each routed
// expert's rows the same way; runtime/wire_rows.h). The engine (a view of
// the mmap'ed checkpoint) is opened on first use and kept per model; it is
// reopened when the catalog points the id at another file. Generations run
// one at a time on their own thread (a generation waits on remote holders,
// whose exec requests run on the holders' worker pools).
// Errors: kNotFound for a model not in the catalog (or a spine not in the
// store), kInvalidArgument for a
// bad field (named), the engine's and the dispatcher's errors otherwise.
#pragma once

#include <memory>

#include "blob/blob_store.h"
#include "core/result.h"
#include "dispatch/forward.h"
#include "manifest/manifest_trust.h"

namespace tenzro::node {

class Node;

// The route, opening spines from `store` and sending experts through
// `dispatcher`. In manifest mode (`trust` enabled) a spine blob must be one
// the model's trusted manifest lists (kPermissionDenied otherwise).
Result<void> AddGenerateService(Node& node, std::shared_ptr<blob::BlobStore> store,
                                std::shared_ptr<dispatch::Dispatcher> dispatcher,
                                std::shared_ptr<manifest::TrustStore> trust = nullptr);

}  // namespace tenzro::node
