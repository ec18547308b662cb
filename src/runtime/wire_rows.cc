#include "runtime/wire_rows.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/types.h"

namespace tenzro::runtime {
namespace {

constexpr WireDtype kAll[] = {WireDtype::kF32, WireDtype::kBf16, WireDtype::kF16, WireDtype::kQ8_0};
static_assert(sizeof(quant::block_q8_0) == kWireQ8BlockBytes && quant::QK8_0 == kWireQ8Block);

uint16_t Half(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }

void PutHalf(uint8_t* p, uint16_t h) {
  p[0] = static_cast<uint8_t>(h);
  p[1] = static_cast<uint8_t>(h >> 8);
}

// Q8_0 through quant's codec (the fastest ISA here; every ISA gives the
// reference's bytes). One row of n values is fine: blocks are independent.
// The codec reads and writes block_q8_0 (2-byte aligned); rows inside a
// frame may start at any byte, so an unaligned one goes through a scratch.
bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % alignof(quant::block_q8_0) == 0; }

void QuantizeQ8(const float* x, size_t n, uint8_t* out) {
  if (n == 0) return;
  if (!Aligned(out)) {
    thread_local std::vector<quant::block_q8_0> scratch;
    scratch.resize(n / kWireQ8Block);
    QuantizeQ8(x, n, reinterpret_cast<uint8_t*>(scratch.data()));
    std::memcpy(out, scratch.data(), scratch.size() * sizeof(quant::block_q8_0));
    return;
  }
  auto st = quant::QuantizeRows(quant::GgmlType::Q8_0, x, out, 1, static_cast<int64_t>(n));
  (void)st;  // only fails for n % 32 != 0, excluded by the REQUIRES
}

void DequantizeQ8(const uint8_t* src, size_t n, float* out) {
  if (n == 0) return;
  if (!Aligned(src)) {
    thread_local std::vector<quant::block_q8_0> scratch;
    scratch.resize(n / kWireQ8Block);
    std::memcpy(scratch.data(), src, scratch.size() * sizeof(quant::block_q8_0));
    DequantizeQ8(reinterpret_cast<const uint8_t*>(scratch.data()), n, out);
    return;
  }
  auto st = quant::DequantizeRows(quant::GgmlType::Q8_0, src, out, 1, static_cast<int64_t>(n));
  (void)st;
}

}  // namespace

std::string_view WireDtypeName(WireDtype t) {
  switch (t) {
    case WireDtype::kF32: return "f32";
    case WireDtype::kBf16: return "bf16";
    case WireDtype::kF16: return "f16";
    case WireDtype::kQ8_0: return "q8_0";
  }
  return "?";
}

Result<WireDtype> ParseWireDtype(std::string_view name) {
  for (WireDtype t : kAll)
    if (name == WireDtypeName(t)) return t;
  return Error::InvalidArgument("wire dtype '{}' is not f32, bf16, f16 or q8_0", name);
}

Result<void> CheckWireRow(WireDtype t, int64_t n_embd) {
  if (t == WireDtype::kQ8_0 && n_embd % kWireQ8Block != 0)
    return Error::InvalidArgument("q8_0 rows need n_embd a multiple of {}, this model's is {} (use bf16)",
                                  kWireQ8Block, n_embd);
  return Ok();
}

uint64_t WireBytes(WireDtype t, uint64_t n) {
  switch (t) {
    case WireDtype::kF32: return n * 4;
    case WireDtype::kBf16:
    case WireDtype::kF16: return n * 2;
    case WireDtype::kQ8_0: return n / kWireQ8Block * kWireQ8BlockBytes;
  }
  return 0;
}

void EncodeWireRows(WireDtype t, const float* x, size_t n, uint8_t* out) {
  switch (t) {
    case WireDtype::kF32:
      if (n) std::memcpy(out, x, n * sizeof(float));
      return;
    case WireDtype::kBf16:
      for (size_t i = 0; i < n; ++i) PutHalf(out + 2 * i, quant::Fp32ToBf16(x[i]));
      return;
    case WireDtype::kF16:
      for (size_t i = 0; i < n; ++i) PutHalf(out + 2 * i, quant::Fp32ToFp16(x[i]));
      return;
    case WireDtype::kQ8_0:
      QuantizeQ8(x, n, out);
      return;
  }
}

Result<void> DecodeWireRows(WireDtype t, const uint8_t* src, size_t n, float* out) {
  switch (t) {
    case WireDtype::kF32:
      if (n) std::memcpy(out, src, n * sizeof(float));
      return Ok();
    case WireDtype::kBf16:
      for (size_t i = 0; i < n; ++i) out[i] = quant::Bf16ToFp32(Half(src + 2 * i));
      return Ok();
    case WireDtype::kF16:
      for (size_t i = 0; i < n; ++i) out[i] = quant::Fp16ToFp32(Half(src + 2 * i));
      return Ok();
    case WireDtype::kQ8_0:
      // The scale is the block's first two bytes; exponent all ones = Inf/NaN.
      for (size_t b = 0; b < n / kWireQ8Block; ++b)
        if ((Half(src + b * kWireQ8BlockBytes) & 0x7C00u) == 0x7C00u)
          return Error::Corruption("q8_0 block {} (value {}) has a non-finite scale", b, b * kWireQ8Block);
      DequantizeQ8(src, n, out);
      return Ok();
  }
  return Error::Unsupported("wire dtype {}", static_cast<int>(t));
}

void RoundWireRows(WireDtype t, float* x, size_t n) {
  switch (t) {
    case WireDtype::kF32:
      return;
    case WireDtype::kBf16:
      for (size_t i = 0; i < n; ++i) x[i] = quant::Bf16ToFp32(quant::Fp32ToBf16(x[i]));
      return;
    case WireDtype::kF16:
      for (size_t i = 0; i < n; ++i) x[i] = quant::Fp16ToFp32(quant::Fp32ToFp16(x[i]));
      return;
    case WireDtype::kQ8_0: {
      thread_local std::vector<uint8_t> scratch;
      scratch.resize(WireBytes(t, n));
      QuantizeQ8(x, n, scratch.data());
      DequantizeQ8(scratch.data(), n, x);
      return;
    }
  }
}

}  // namespace tenzro::runtime
