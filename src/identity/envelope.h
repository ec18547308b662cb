// tenzro identity: the signed record envelope shared by declarations,
// provider records (swarm) and model manifests (manifest).
//
//   {"body":"<canonical JSON body as a string>","sig":"<128 hex>","v":1}
//
// The signature is Ed25519 by the key whose hex is the body's "node_id", over
// domain || body (the domain names the record kind, NUL-terminated, so a
// signature of one kind never verifies as another). Pure functions.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "identity/identity.h"

namespace tenzro::identity {

inline constexpr int kEnvelopeVersion = 1;

// Exact size of the record SealEnvelope produces for `body_text`.
size_t EnvelopeBytes(const std::string& body_text);

// Signs domain || body_text with `id` and wraps it.
std::string SealEnvelope(std::string_view domain, const std::string& body_text, const Identity& id);

// Parses and verifies an untrusted record of at most `max_bytes`; returns the
// body object. `what` names the record kind in errors ("declaration record").
// kCorruption (malformed, body without a valid "node_id"), kUnsupported
// (unknown "v"), kPermissionDenied (signature does not verify).
Result<nlohmann::json> OpenEnvelope(std::string_view domain, std::string_view record, size_t max_bytes,
                                    std::string_view what);

}  // namespace tenzro::identity
