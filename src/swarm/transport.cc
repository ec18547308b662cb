#include "swarm/transport.h"

#include "swarm/declaration.h"

namespace tenzro::swarm {

std::string DeclarationKey(std::string_view model) { return "tenzro/v1/decl/" + std::string(model); }
std::string ProviderKey(std::string_view blob_hash) { return "tenzro/v1/provider/" + std::string(blob_hash); }

Result<void> InMemoryTransport::Put(const std::string& key, uint64_t value_id, std::string value) {
  if (value.size() > kMaxRecordBytes) {
    return Error::ResourceExhausted("transport: value of {} bytes exceeds {}", value.size(), kMaxRecordBytes);
  }
  std::lock_guard<std::mutex> lock(mu_);
  values_[key][value_id] = std::move(value);
  return Ok();
}

Result<std::vector<std::string>> InMemoryTransport::Get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  auto it = values_.find(key);
  if (it != values_.end()) {
    for (const auto& [id, v] : it->second) out.push_back(v);
  }
  return out;
}

}  // namespace tenzro::swarm
