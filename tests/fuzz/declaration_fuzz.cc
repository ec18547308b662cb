// libFuzzer: the swarm's untrusted-record decoders (declarations and
// provider records) and the table that ingests them. Anything may come back
// as an error; nothing may crash, leak or hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "swarm/declaration.h"
#include "swarm/declaration_table.h"
#include "swarm/provider.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rec(reinterpret_cast<const char*>(data), size);
  auto d = tenzro::swarm::DecodeRecord(rec);
  if (d) {
    // A decoded declaration re-encodes to a body the decoder accepts.
    auto again = tenzro::swarm::DeclarationFromJson(tenzro::swarm::DeclarationToJson(*d));
    if (!again || !(*again == *d)) __builtin_trap();
  }
  (void)tenzro::swarm::DecodeProviderRecord(rec);
  tenzro::swarm::DeclarationTable table;
  (void)table.Ingest(rec, 1'700'000'000'000);
  return 0;
}
