#include "swarm/value_id.h"

#include <sodium.h>

#include <fmt/format.h>

#include "swarm/declaration.h"
#include "swarm/provider.h"

namespace tenzro::swarm {

uint64_t RecordValueId(std::string_view node_id, std::string_view kind, std::string_view name, uint32_t part) {
  const std::string s = fmt::format("{}\n{}\n{}\n{}", node_id, kind, name, part);
  uint8_t h[8];
  crypto_generichash(h, sizeof(h), reinterpret_cast<const uint8_t*>(s.data()), s.size(), nullptr, 0);
  uint64_t id = 0;
  for (uint8_t b : h) id = (id << 8) | b;
  return id == 0 ? 1 : id;
}

std::optional<RecordSlot> RecordSlotOf(std::string_view record) {
  if (auto d = DecodeRecord(record)) return RecordSlot{RecordValueId(d->node_id, "decl", d->model, d->part), d->seq};
  if (auto p = DecodeProviderRecord(record))
    return RecordSlot{RecordValueId(p->node_id, "provider", p->blob_hash, 0), static_cast<uint64_t>(p->timestamp_ms)};
  return std::nullopt;
}

}  // namespace tenzro::swarm
