// libFuzzer target: safetensors parsing from memory plus the Checkpoint MoE view.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/checkpoint_open.h"
#include "format/safetensors_reader.h"

using namespace tenzro;
using namespace tenzro::format;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = SafetensorsFile::Parse(ByteSpan(data, size), "fuzz.safetensors");
  if (!f) return 0;
  volatile uint64_t sink = 0;
  for (const auto& t : (*f)->tensors()) {
    ByteSpan b = (*f)->TensorBytes(t);
    if (!b.empty()) sink = sink + b[0] + b[b.size() - 1];
  }
  std::vector<std::unique_ptr<SafetensorsFile>> shards;
  shards.push_back(std::move(*f));
  auto ck = MakeSafetensorsCheckpoint(std::move(shards), R"({"text_config":{"num_experts":2}})");
  if (!ck) return 0;
  const Checkpoint& c = **ck;
  (void)c.GetInt("num_experts");
  for (int l = 0; l < c.n_layers() && l < 64; ++l) {
    (void)c.Router(l);
    (void)c.SharedExpertGate(l);
    for (Projection p : kProjections) {
      (void)c.SharedExpert(l, p);
      int n = c.n_experts(l);
      for (int e : {0, n - 1, n}) {
        auto s = c.Expert(l, e, p);
        if (s && !s->bytes.empty()) sink = sink + s->bytes[0] + s->bytes[s->bytes.size() - 1];
      }
    }
  }
  return 0;
}
