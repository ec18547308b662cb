// libFuzzer target: the expert mini-GGUF (docs/formats/expert-gguf.md) as a
// node receives it from the swarm: format::DecodeExpertGguf and the runtime
// decoders that turn an image into weights (runtime/expert_loader.h). Any
// input may be refused; nothing may crash. A decoded expert's three
// projections hold exactly the bytes their types and shapes need, inside the
// image, and re-encoding a decoded expert gives an image that decodes to the
// same shapes and bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "format/expert_gguf.h"
#include "quant/types.h"
#include "runtime/expert_ffn.h"
#include "runtime/expert_loader.h"
#include "runtime/gating.h"

using namespace tenzro;

namespace {

bool Inside(ByteSpan part, ByteSpan whole) {
  if (part.empty()) return true;
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

void CheckMatrix(const format::Matrix& m, ByteSpan image) {
  if (m.rows < 0 || m.row_len < 0 || !Inside(m.bytes, image)) std::abort();
  auto row = quant::RowBytes(m.type, m.row_len);
  if (row && static_cast<uint64_t>(*row) * static_cast<uint64_t>(m.rows) != m.bytes.size()) std::abort();
}

bool SameMatrix(const format::Matrix& a, const format::Matrix& b) {
  return a.type == b.type && a.row_len == b.row_len && a.rows == b.rows && a.bytes.size() == b.bytes.size() &&
         (a.bytes.empty() || std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ByteSpan in(data, size);
  if (auto f = format::DecodeExpertGguf(in, nullptr, "fuzz.gguf")) {
    if (f->kind == format::kKindExpert) {
      for (const auto& m : f->expert.proj) CheckMatrix(m, in);
      if (format::ValidateExpertTensors(f->expert, "fuzz")) {
        auto again = format::EncodeExpertGguf(f->id, f->expert);
        if (!again) std::abort();
        auto g = format::DecodeExpertGguf(ByteSpan(*again), nullptr, "again.gguf");
        if (!g || g->kind != format::kKindExpert) std::abort();
        for (int p = 0; p < 3; ++p)
          if (!SameMatrix(f->expert.proj[p], g->expert.proj[p])) std::abort();
      }
    } else if (f->kind == format::kKindGate) {
      CheckMatrix(f->gate.router, in);
      if (f->gate.bias) CheckMatrix(*f->gate.bias, in);
      if (f->gate.shared_gate) CheckMatrix(*f->gate.shared_gate, in);
      if (f->gate.shared)
        for (const auto& m : f->gate.shared->proj) CheckMatrix(m, in);
    }
  }
  // The runtime's own decoders (what the expert cache does with a blob).
  auto image = std::make_shared<const Bytes>(in.begin(), in.end());
  (void)runtime::LooksLikeGguf(in);
  if (auto w = runtime::DecodeWarmExpert(image, "fuzz-expert")) {
    if ((*w)->info.n_embd <= 0 || (*w)->info.n_ff <= 0 || (*w)->bytes() != size) std::abort();
    (void)(*w)->info.formats();
    // Small experts are also run: the kernels must stay inside the weights.
    const int64_t n_embd = (*w)->info.n_embd, n_ff = (*w)->info.n_ff;
    if (n_embd <= 4096 && n_ff <= 4096 && n_embd * n_ff <= (1 << 18)) {
      std::vector<float> x(2 * n_embd, 0.5f), y(2 * n_embd);
      (void)runtime::ExpertFfn((*w)->weights, x.data(), 2, y.data());
    }
  }
  if (auto g = runtime::DecodeGate(image, "fuzz-gate")) {
    if ((*g)->info.n_embd <= 0 || (*g)->info.n_expert <= 0) std::abort();
    (void)(*g)->info.formats();
    const int64_t n_embd = (*g)->info.n_embd;
    if (n_embd <= 4096 && int64_t{(*g)->info.n_expert} * n_embd <= (1 << 18)) {
      std::vector<float> x(2 * n_embd, 0.5f), y(2 * n_embd);
      runtime::RoutingConfig rc;
      rc.top_k = std::min(2, (*g)->info.n_expert);
      (void)runtime::Route((*g)->router, rc, x.data(), 2);
      if ((*g)->shared && (*g)->info.n_ff_shexp * n_embd <= (1 << 18))
        (void)runtime::SharedExpertFfn(*(*g)->shared, x.data(), 2, y.data());
    }
  }
  return 0;
}
