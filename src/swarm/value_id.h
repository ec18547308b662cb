// tenzro swarm: the DHT value id each signed record is stored under.
//
// Every record a node publishes has one value id, derived from what it is:
// RecordValueId(signer's node id, kind, name, part), with kind "decl" (name:
// the model id, part: the declaration part) or "provider" (name: the blob
// hash, part 0). A re-put therefore replaces the node's previous value, and
// storing nodes (dht_transport.cc) accept a value only at the id its own
// content and signer give, and replace it only by a newer version: nobody can
// occupy another node's future ids or push its record out with a replay, and
// a node has exactly one value per (key, kind, name, part). Readers drop a
// valid record found at any other id.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tenzro::swarm {

// A 64-bit BLAKE2b digest of (node_id, kind, name, part); never 0 (OpenDHT's
// invalid id).
uint64_t RecordValueId(std::string_view node_id, std::string_view kind, std::string_view name, uint32_t part);

// Where a valid, correctly signed declaration or provider record belongs and
// how new it is: storing nodes replace a value only by a newer one of the
// same slot, so an old record replayed at its own id cannot push the
// current one out.
struct RecordSlot {
  uint64_t value_id = 0;
  uint64_t version = 0;  // a declaration's seq; a provider record's timestamp_ms
};

// nullopt when `record` is neither a valid declaration nor a valid provider record.
std::optional<RecordSlot> RecordSlotOf(std::string_view record);

}  // namespace tenzro::swarm
