#include "swarm/provider.h"

#include "identity/envelope.h"

namespace tenzro::swarm {

using nlohmann::json;

namespace {

constexpr size_t kMaxProviderRecordBytes = 4096;
constexpr size_t kMaxEndpoints = 8;
constexpr size_t kMaxAddress = 256;

bool IsHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool Printable(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

json Body(const ProviderRecord& r) {
  json eps = json::array();
  for (const auto& e : r.endpoints) eps.push_back({{"addr", e.address}, {"kind", e.kind}});
  return json{{"endpoints", eps}, {"hash", r.blob_hash}, {"node_id", r.node_id}, {"ts_ms", r.timestamp_ms},
              {"ttl_s", r.ttl_s}};
}

}  // namespace

Result<std::string> EncodeProviderRecord(const ProviderRecord& r, const identity::Identity& id) {
  if (r.node_id != id.node_id())
    return Error::InvalidArgument("provider record: node_id {} is not the signing identity {}", r.node_id, id.node_id());
  if (!IsHex64(r.blob_hash)) return Error::InvalidArgument("provider record: hash '{}' is not 64 hex digits", r.blob_hash);
  if (r.endpoints.size() > kMaxEndpoints) return Error::InvalidArgument("provider record: more than {} endpoints", kMaxEndpoints);
  for (const auto& e : r.endpoints) {
    if (e.kind.empty() || e.address.empty() || e.address.size() > kMaxAddress || !Printable(e.kind) ||
        !Printable(e.address))
      return Error::InvalidArgument("provider record: bad endpoint '{}'", e.address);
  }
  if (r.ttl_s == 0 || r.timestamp_ms < 0) return Error::InvalidArgument("provider record: ttl or timestamp out of range");
  return identity::SealEnvelope(kProviderDomain, Body(r).dump(), id);
}

Result<ProviderRecord> DecodeProviderRecord(std::string_view record) {
  TENZRO_TRY(json body, identity::OpenEnvelope(kProviderDomain, record, kMaxProviderRecordBytes, "provider record"));
  ProviderRecord r;
  r.node_id = body["node_id"].get<std::string>();
  auto hash = body.find("hash");
  if (hash == body.end() || !hash->is_string() || !IsHex64(hash->get_ref<const std::string&>()))
    return Error::Corruption("provider record: hash missing or not 64 lower-case hex digits");
  r.blob_hash = hash->get<std::string>();
  auto ts = body.find("ts_ms");
  auto ttl = body.find("ttl_s");
  if (ts == body.end() || !ts->is_number_unsigned() || ts->get<uint64_t>() > uint64_t{INT64_MAX} / 2)
    return Error::Corruption("provider record: ts_ms missing or out of range");
  if (ttl == body.end() || !ttl->is_number_unsigned() || ttl->get<uint64_t>() == 0 ||
      ttl->get<uint64_t>() > 7 * 24 * 3600)
    return Error::Corruption("provider record: ttl_s missing or out of range");
  r.timestamp_ms = static_cast<int64_t>(ts->get<uint64_t>());
  r.ttl_s = static_cast<uint32_t>(ttl->get<uint64_t>());
  auto eps = body.find("endpoints");
  if (eps == body.end() || !eps->is_array() || eps->size() > kMaxEndpoints)
    return Error::Corruption("provider record: endpoints missing, not an array or more than {}", kMaxEndpoints);
  for (const json& e : *eps) {
    if (!e.is_object() || !e.contains("kind") || !e.contains("addr") || !e["kind"].is_string() ||
        !e["addr"].is_string())
      return Error::Corruption("provider record: an endpoint is not {{\"kind\", \"addr\"}}");
    Endpoint ep{e["kind"].get<std::string>(), e["addr"].get<std::string>()};
    if (ep.kind.empty() || ep.address.empty() || ep.address.size() > kMaxAddress || !Printable(ep.kind) ||
        !Printable(ep.address))
      return Error::Corruption("provider record: bad endpoint");
    r.endpoints.push_back(std::move(ep));
  }
  return r;
}

}  // namespace tenzro::swarm
