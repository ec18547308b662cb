// ISA selection and the row drivers behind types.h QuantizeRows /
// DequantizeRows and quantize_kernels.h GetCodec.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

#include "core/cpu.h"
#include "quant/quantize_kernels.h"
#include "quant/types.h"

namespace tenzro::quant {
namespace {

Codec RefCodec(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return {ref::DequantizeRowF32, ref::QuantizeRowF32};
    case GgmlType::F16: return {ref::DequantizeRowF16, ref::QuantizeRowF16};
    case GgmlType::BF16: return {ref::DequantizeRowBf16, ref::QuantizeRowBf16};
    case GgmlType::Q8_0: return {ref::DequantizeRowQ8_0, ref::QuantizeRowQ8_0};
    case GgmlType::Q4_0: return {ref::DequantizeRowQ4_0, nullptr};
    case GgmlType::MXFP4: return {ref::DequantizeRowMxfp4, nullptr};
    case GgmlType::Q4_K: return {ref::DequantizeRowQ4_K, ref::QuantizeRowQ4_K};
    case GgmlType::Q5_K: return {ref::DequantizeRowQ5_K, ref::QuantizeRowQ5_K};
    case GgmlType::Q6_K: return {ref::DequantizeRowQ6_K, ref::QuantizeRowQ6_K};
    default: return {};
  }
}

// The SIMD codecs exist on x86-64 only (quants_avx2.cc, quantize_kquants_avx2.cc,
// quants_avx512.cc); elsewhere every ISA above scalar is unsupported
// (core/cpu.h reports no x86 flags) and the overlays are empty.
#if defined(__x86_64__)
void OverlayAvx2(GgmlType type, Codec& c) {
  switch (type) {
    case GgmlType::F16: c = {avx2::DequantizeRowF16, avx2::QuantizeRowF16}; break;
    case GgmlType::BF16: c = {avx2::DequantizeRowBf16, avx2::QuantizeRowBf16}; break;
    case GgmlType::Q8_0: c = {avx2::DequantizeRowQ8_0, avx2::QuantizeRowQ8_0}; break;
    case GgmlType::Q4_0: c.to_float = avx2::DequantizeRowQ4_0; break;
    case GgmlType::MXFP4: c.to_float = avx2::DequantizeRowMxfp4; break;
    case GgmlType::Q4_K: c = {avx2::DequantizeRowQ4_K, avx2::QuantizeRowQ4_K}; break;
    case GgmlType::Q5_K: c = {avx2::DequantizeRowQ5_K, avx2::QuantizeRowQ5_K}; break;
    case GgmlType::Q6_K: c = {avx2::DequantizeRowQ6_K, avx2::QuantizeRowQ6_K}; break;
    default: break;
  }
}

void OverlayAvx512(GgmlType type, Codec& c) {
  switch (type) {
    case GgmlType::F16: c.to_float = avx512::DequantizeRowF16; break;
    case GgmlType::BF16: c.to_float = avx512::DequantizeRowBf16; break;
    case GgmlType::Q8_0: c.to_float = avx512::DequantizeRowQ8_0; break;
    case GgmlType::Q4_K: c.to_float = avx512::DequantizeRowQ4_K; break;
    default: break;
  }
}
#else
void OverlayAvx2(GgmlType, Codec&) {}
void OverlayAvx512(GgmlType, Codec&) {}
#endif

Isa DetectBestIsa() {
  Isa best = Isa::kScalar;
  if (IsaSupported(Isa::kAvx512)) best = Isa::kAvx512;
  else if (IsaSupported(Isa::kAvx2)) best = Isa::kAvx2;
  if (const char* env = std::getenv("TENZRO_QUANT_ISA")) {
    const std::string_view v(env);
    Isa cap = best;
    if (v == "scalar") cap = Isa::kScalar;
    else if (v == "avx2") cap = Isa::kAvx2;
    if (cap < best) best = cap;
  }
  return best;
}

// Validates a request and returns the row kernel's traits.
Result<const TypeTraits*> Check(Isa isa, GgmlType type, int64_t n_rows, int64_t n_per_row) {
  if (!IsaSupported(isa)) return Error::InvalidArgument("this CPU cannot run {} kernels", IsaName(isa));
  if (n_rows < 0) return Error::InvalidArgument("negative row count {}", n_rows);
  TENZRO_TRY(uint64_t row_bytes, RowBytes(type, n_per_row));
  (void)row_bytes;
  return FindTraits(type);
}

// Runs fn(first_row, n) over [0, n_rows) on up to n_threads threads.
template <typename Fn>
void ForRowChunks(int64_t n_rows, int64_t n_per_row, int n_threads, Fn fn) {
  if (n_threads <= 0) n_threads = HardwareThreads();
  // Below ~64K values per thread, thread start-up costs more than it saves.
  const int64_t by_work = std::max<int64_t>(1, n_rows * std::max<int64_t>(n_per_row, 1) / 65536);
  const int64_t t = std::min<int64_t>({static_cast<int64_t>(n_threads), n_rows, by_work});
  if (t <= 1) {
    fn(0, n_rows);
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(t - 1);
  const int64_t per = n_rows / t, extra = n_rows % t;
  int64_t first = 0;
  for (int64_t k = 0; k < t; ++k) {
    const int64_t n = per + (k < extra ? 1 : 0);
    if (k + 1 < t) threads.emplace_back(fn, first, n);
    else fn(first, n);
    first += n;
  }
  for (auto& th : threads) th.join();
}

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

bool IsaSupported(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return GetCpuFeatures().HasAvx2Set();
    case Isa::kAvx512: return GetCpuFeatures().HasAvx512Set();
  }
  return false;
}

Isa BestIsa() {
  static const Isa best = DetectBestIsa();
  return best;
}

Codec GetCodec(GgmlType type, Isa isa) {
  Codec c = RefCodec(type);
  if (isa >= Isa::kAvx2) OverlayAvx2(type, c);
  if (isa >= Isa::kAvx512) OverlayAvx512(type, c);
  return c;
}

Result<void> QuantizeRowsIsa(Isa isa, GgmlType type, const float* src, void* dst, int64_t n_rows,
                             int64_t n_per_row) {
  TENZRO_TRY(const TypeTraits* t, Check(isa, type, n_rows, n_per_row));
  const FromFloatFn fn = GetCodec(type, isa).from_float;
  if (!fn) return Error::Unsupported("tenzro cannot quantize to {}", t->name);
  const uint64_t row_bytes = n_per_row / t->block_elems * t->block_bytes;
  for (int64_t r = 0; r < n_rows; ++r) fn(src + r * n_per_row, static_cast<uint8_t*>(dst) + r * row_bytes, n_per_row);
  return Ok();
}

Result<void> DequantizeRowsIsa(Isa isa, GgmlType type, const void* src, float* dst, int64_t n_rows,
                               int64_t n_per_row) {
  TENZRO_TRY(const TypeTraits* t, Check(isa, type, n_rows, n_per_row));
  const ToFloatFn fn = GetCodec(type, isa).to_float;
  if (!fn) return Error::Unsupported("tenzro cannot dequantize {}", t->name);
  const uint64_t row_bytes = n_per_row / t->block_elems * t->block_bytes;
  for (int64_t r = 0; r < n_rows; ++r)
    fn(static_cast<const uint8_t*>(src) + r * row_bytes, dst + r * n_per_row, n_per_row);
  return Ok();
}

Result<void> QuantizeRows(GgmlType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row) {
  return QuantizeRowsIsa(BestIsa(), type, src, dst, n_rows, n_per_row);
}

Result<void> DequantizeRows(GgmlType type, const void* src, float* dst, int64_t n_rows, int64_t n_per_row) {
  return DequantizeRowsIsa(BestIsa(), type, src, dst, n_rows, n_per_row);
}

Result<void> QuantizeRowsParallel(GgmlType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                                  int n_threads) {
  TENZRO_TRY(const TypeTraits* t, Check(BestIsa(), type, n_rows, n_per_row));
  if (!GetCodec(type, BestIsa()).from_float) return Error::Unsupported("tenzro cannot quantize to {}", t->name);
  const uint64_t row_bytes = n_per_row / t->block_elems * t->block_bytes;
  ForRowChunks(n_rows, n_per_row, n_threads, [&](int64_t first, int64_t n) {
    (void)QuantizeRows(type, src + first * n_per_row, static_cast<uint8_t*>(dst) + first * row_bytes, n, n_per_row);
  });
  return Ok();
}

Result<void> DequantizeRowsParallel(GgmlType type, const void* src, float* dst, int64_t n_rows, int64_t n_per_row,
                                    int n_threads) {
  TENZRO_TRY(const TypeTraits* t, Check(BestIsa(), type, n_rows, n_per_row));
  if (!GetCodec(type, BestIsa()).to_float) return Error::Unsupported("tenzro cannot dequantize {}", t->name);
  const uint64_t row_bytes = n_per_row / t->block_elems * t->block_bytes;
  ForRowChunks(n_rows, n_per_row, n_threads, [&](int64_t first, int64_t n) {
    (void)DequantizeRows(type, static_cast<const uint8_t*>(src) + first * row_bytes, dst + first * n_per_row, n,
                         n_per_row);
  });
  return Ok();
}

}  // namespace tenzro::quant
