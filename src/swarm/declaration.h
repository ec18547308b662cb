// tenzro swarm: signed holder declarations.
//
// A holder announces, per model, what it carries: its node id, endpoints,
// the experts and gates it holds, its capacity, the tokens/s it served per
// expert, its state, and a sequence number, timestamp and TTL. The record is
// a canonical JSON body signed with the node's Ed25519 key (identity.h);
// readers verify it before believing anything in it. A holder of thousands
// of experts splits its declaration into parts (Split) so every record fits
// the 64 KiB value limit of the DHT. Wire format: docs/formats/declaration.md.
//
// Pure encoding/decoding: no I/O, no clock (callers pass now_ms).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "identity/identity.h"

namespace tenzro::swarm {

inline constexpr int kDeclarationVersion = 1;
inline constexpr size_t kMaxRecordBytes = 64 * 1024;  // OpenDHT value limit
// Domain separation: the signed message is this prefix (with its NUL) || body.
inline constexpr std::string_view kDeclarationDomain{"tenzro-declaration-v1\0", 22};

enum class HolderState : uint8_t { kJoining, kServing, kLeaving };
enum class Tier : uint8_t { kWarm, kCold };

std::string_view HolderStateName(HolderState s);  // "joining" | "serving" | "leaving"
std::string_view TierName(Tier t);                // "warm" | "cold"

// How to reach the holder. kind "http": address is a URL ("http://1.2.3.4:8080");
// kind "quic": address is "ip:port" and the peer is authenticated by node id.
struct Endpoint {
  std::string kind;
  std::string address;
  bool operator==(const Endpoint&) const = default;
};

struct HeldExpert {
  int layer = 0;
  int expert = 0;
  // Quant format name per projection ("q4_k", "q6_k", "f32", ...).
  std::string gate_format, up_format, down_format;
  std::string blob_hash;  // content hash of the expert blob (hex), may be empty
  Tier tier = Tier::kWarm;
  double served_tps = 0;  // EMA of tokens/s this holder served for this expert
  bool operator==(const HeldExpert&) const = default;
};

struct HeldGate {
  int layer = 0;
  std::string blob_hash;
  bool operator==(const HeldGate&) const = default;
};

// A blob this node serves without holding it loaded (e.g. an expert it
// prepared): lets a rebalancer find the blob of an uncovered expert.
// expert == -1 names the layer's gate. Not counted as a replica.
struct OfferedBlob {
  int layer = 0;
  int expert = -1;
  std::string blob_hash;
  bool operator==(const OfferedBlob&) const = default;
};

struct Declaration {
  std::string node_id;  // 64 lower-case hex (the signer's public key)
  std::string model;
  std::vector<Endpoint> endpoints;
  std::vector<HeldExpert> experts;
  std::vector<HeldGate> gates;
  std::vector<OfferedBlob> offers;  // optional on the wire ("offers")
  uint64_t memory_budget = 0;  // bytes
  uint64_t free_bytes = 0;
  HolderState state = HolderState::kServing;
  uint64_t seq = 0;          // strictly increasing per (node, model)
  int64_t timestamp_ms = 0;  // unix ms when signed
  uint32_t ttl_s = 60;       // the record is dead after timestamp + ttl
  uint32_t part = 0;         // this part's index, < parts
  uint32_t parts = 1;
  bool operator==(const Declaration&) const = default;

  int64_t expires_ms() const { return timestamp_ms + int64_t{ttl_s} * 1000; }
};

// The canonical body (keys sorted; nlohmann's default object is ordered).
nlohmann::json DeclarationToJson(const Declaration& d);
// Validates types and ranges; unknown members are ignored. kCorruption naming
// the field.
Result<Declaration> DeclarationFromJson(const nlohmann::json& j);

// Signs `d` and returns the wire record {"body":..,"sig":..,"v":1}.
// kInvalidArgument if d.node_id != id.node_id() or d is out of range;
// kResourceExhausted if the record exceeds kMaxRecordBytes (use Split).
Result<std::string> EncodeRecord(const Declaration& d, const identity::Identity& id);

// Full validation of an untrusted record: size <= kMaxRecordBytes, JSON,
// envelope and body fields, node id, signature over the body by node_id.
// Errors: kCorruption (malformed), kUnsupported (unknown "v"),
// kPermissionDenied (signature does not verify: forged or wrong node id).
Result<Declaration> DecodeRecord(std::string_view record);

// Splits `d` into parts whose encoded records each fit max_record_bytes:
// experts (then gates) are packed in order; every part repeats the scalar
// fields (node, endpoints, capacity, state, seq, timestamp, ttl) and gets
// part/parts set. One part when everything fits. kResourceExhausted if even a
// single entry cannot fit.
Result<std::vector<Declaration>> Split(const Declaration& d, size_t max_record_bytes = kMaxRecordBytes);

}  // namespace tenzro::swarm
