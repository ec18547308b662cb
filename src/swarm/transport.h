// tenzro swarm: the discovery transport seam.
//
// Declarations and blob-provider announcements travel over a key/value
// transport with multiple values per key (OpenDHT in production, an
// in-memory map in tests). The swarm logic only needs this interface: it
// publishes EncodeRecord output under DeclarationKey(model) and feeds every
// value it gets back into DeclarationTable::Ingest, which verifies it, so a
// transport needs no trust of its own. Keys are plain strings; a DHT
// implementation hashes them (e.g. dht::InfoHash::get(key)).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tenzro::swarm {

// "tenzro/v1/decl/<model>": all declaration parts of all holders of a model.
std::string DeclarationKey(std::string_view model);
// "tenzro/v1/provider/<blob hash>": provider announcements of a blob.
std::string ProviderKey(std::string_view blob_hash);

class DiscoveryTransport {
 public:
  virtual ~DiscoveryTransport() = default;
  // Stores `value` under `key`, replacing this node's previous value with the
  // same `value_id` (one id per declaration part). Values are <= 64 KiB.
  virtual Result<void> Put(const std::string& key, uint64_t value_id, std::string value) = 0;
  // All values currently stored under `key` (any node's), unverified.
  virtual Result<std::vector<std::string>> Get(const std::string& key) = 0;
};

// A process-local transport for tests and single-node setups. Thread-safe.
class InMemoryTransport : public DiscoveryTransport {
 public:
  Result<void> Put(const std::string& key, uint64_t value_id, std::string value) override;
  Result<std::vector<std::string>> Get(const std::string& key) override;

 private:
  std::mutex mu_;
  std::map<std::string, std::map<uint64_t, std::string>> values_;
};

}  // namespace tenzro::swarm
