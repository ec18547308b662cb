// libFuzzer: the model manifest decoder (manifest/manifest.h) — the signed
// envelope and, since a fuzzer cannot forge signatures, the body decoder on
// its own. Anything may come back as an error; nothing may crash, leak or
// hang, and a decoded manifest re-encodes to a body that decodes to itself.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "manifest/manifest.h"

namespace {

void RoundTrip(const tenzro::manifest::Manifest& m) {
  auto again = tenzro::manifest::ManifestFromBody(nlohmann::json::parse(tenzro::manifest::ManifestBody(m)));
  if (!again || again->experts != m.experts || again->gates != m.gates || again->spines != m.spines ||
      again->model != m.model || again->publisher != m.publisher)
    __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto m = tenzro::manifest::OpenManifest(text)) RoundTrip(*m);
  nlohmann::json body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!body.is_discarded())
    if (auto m = tenzro::manifest::ManifestFromBody(body)) RoundTrip(*m);
  return 0;
}
