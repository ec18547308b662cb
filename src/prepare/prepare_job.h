// tenzro prepare: one preparation job — slice a layer's experts (and
// optionally its gate) out of a checkpoint, encode each as an expert
// mini-GGUF and publish it in the blob store.
//
// RunPrepare is synchronous and CPU-bound: the node runs it on its worker
// pool as a persisted job (node/job_registry.h). Its result document is what
// `tenzro moe prepare-status` prints (docs/cli.md): per expert the blob URI,
// byte size, the format of each projection and where it came from
// (checkpoint file, tensor, byte range). A failure publishes nothing partial:
// each blob appears atomically or not at all.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "blob/blob_store.h"
#include "core/result.h"
#include "prepare/quant_plan.h"

namespace tenzro::prepare {

struct PrepareRequest {
  std::string model_id;
  std::string checkpoint;     // path resolved by the catalog
  int layer = 0;
  std::string experts = "all";  // "1,2,5", "0-7", "all" (see ParseExpertList)
  bool gate = false;          // also publish the layer's router + shared expert
  std::string quant;          // preset name, "" for none
  std::string quant_json;     // per-projection JSON text, "" for none
  int threads = 0;            // <= 0: all hardware threads

  nlohmann::json ToJson() const;
  // kInvalidArgument naming the field.
  static Result<PrepareRequest> FromJson(const nlohmann::json& j);
  // The quant plan (preset, JSON, or dense f32); both set is an error.
  Result<QuantPlan> Plan() const;
};

// Parses "1,2,5", "0-7", "0-3,9", or "all" against a layer of n_expert
// experts; sorted, without duplicates. kInvalidArgument when malformed or an
// index is out of range (the message names it and n_expert).
Result<std::vector<int>> ParseExpertList(std::string_view text, int n_expert);

// (done, total, message) after each expert.
using ProgressFn = std::function<void(int, int, const std::string&)>;

// Runs the job. Errors: kNotFound (layer without experts, missing tensors),
// kInvalidArgument (expert out of range, format the row length does not fit),
// kUnsupported (source format), kResourceExhausted (disk full), kCorruption.
Result<nlohmann::json> RunPrepare(const PrepareRequest& req, blob::BlobStore& store, const ProgressFn& progress);

}  // namespace tenzro::prepare
