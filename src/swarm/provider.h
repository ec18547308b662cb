// tenzro swarm: blob provider records.
//
// A node storing a blob announces itself under ProviderKey(<blob hash>) with
// a small signed record: who (node id), where (endpoints), when (timestamp,
// ttl). The blob itself is verified against its hash when fetched, so a
// provider record only has to be authentic enough not to be spoofed in bulk:
// it is signed like a declaration (Ed25519 over a domain-separated canonical
// JSON body). Wire format: docs/formats/declaration.md ("Provider records").
//
// Pure encoding/decoding: no I/O, no clock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "identity/identity.h"
#include "swarm/declaration.h"

namespace tenzro::swarm {

inline constexpr std::string_view kProviderDomain{"tenzro-provider-v1\0", 19};

struct ProviderRecord {
  std::string node_id;
  std::string blob_hash;  // 64 lower-case hex (BLAKE3)
  std::vector<Endpoint> endpoints;
  int64_t timestamp_ms = 0;
  uint32_t ttl_s = 60;
  bool operator==(const ProviderRecord&) const = default;
  int64_t expires_ms() const { return timestamp_ms + int64_t{ttl_s} * 1000; }
};

// Signs `r` ({"body":..,"sig":..,"v":1}). kInvalidArgument if r.node_id is not
// id's node id or the hash is malformed.
Result<std::string> EncodeProviderRecord(const ProviderRecord& r, const identity::Identity& id);
// Full validation of an untrusted record: kCorruption (malformed),
// kUnsupported (unknown "v"), kPermissionDenied (bad signature).
Result<ProviderRecord> DecodeProviderRecord(std::string_view record);

}  // namespace tenzro::swarm
