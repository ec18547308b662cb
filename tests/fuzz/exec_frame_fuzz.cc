// libFuzzer target: exec request and response frames (docs/formats/exec-frame.md).
// Decoding must never crash; a request in a float dtype that decodes
// re-encodes to the same bytes (non-finite rows are refused, so every value
// survives the round trip); a q8_0 request re-encodes to the same length
// (quantizing dequantized values need not give the same blocks: a block
// whose largest |q| is under 127 gets another scale); a response that decodes
// decodes again after re-encoding unless it is q8_0 (re-quantizing a block
// of 65504 x -128 overflows the fp16 scale, which the decoder refuses).
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
    const Bytes again = EncodeExecRequest(*req);
    if (req->dtype == RowType::kQ8_0 ? again.size() != size : again != Bytes(in.begin(), in.end())) std::abort();
  }
  if (auto resp = DecodeExecResponse(in, limits)) {
    const Bytes again = EncodeExecResponse(*resp);
    if (again.size() != size) std::abort();
    if (resp->dtype != RowType::kQ8_0 && !DecodeExecResponse(again, limits)) std::abort();
  }
  return 0;
}
