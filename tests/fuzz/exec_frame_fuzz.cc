// libFuzzer target: exec request and response frames (docs/formats/exec-frame.md).
// Decoding must never crash; a request that decodes re-encodes to the same
// bytes (non-finite rows are refused, so every value survives the round
// trip), and a response that decodes decodes again after re-encoding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "dispatch/exec_frame.h"

using namespace tenzro;
using namespace tenzro::dispatch;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ByteSpan in(data, size);
  ExecLimits limits;
  limits.max_frame_bytes = 1 << 20;
  if (auto req = DecodeExecRequest(in, limits)) {
    if (EncodeExecRequest(*req) != Bytes(in.begin(), in.end())) std::abort();
  }
  if (auto resp = DecodeExecResponse(in, limits)) {
    if (!DecodeExecResponse(EncodeExecResponse(*resp), limits)) std::abort();
  }
  return 0;
}
