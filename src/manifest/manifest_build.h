// tenzro manifest: a model's manifest from what this node prepared.
//
// The results of `tenzro moe prepare-experts` jobs (prepare/prepare_job.h:
// per expert its blob hash, bytes and projection formats; the gate's blob)
// and `prepare-dense` jobs (the spine's hash, bytes and quant) of one model
// become one Manifest: every expert in every format it was prepared in, every
// gate, every spine. Results of other models are skipped; a malformed result
// is kCorruption naming the field. Pure: no I/O, no clock — the same
// prepared blobs give the same manifest, so re-publishing changes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "catalog/model_shape.h"
#include "core/result.h"
#include "manifest/manifest.h"

namespace tenzro::manifest {

Result<Manifest> ManifestFromPrepareResults(const std::string& model, std::span<const nlohmann::json> results,
                                            std::optional<catalog::ModelShape> shape);

}  // namespace tenzro::manifest
