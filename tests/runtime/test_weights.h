// Random weight matrices in every compute type, built by writing the block
// structs directly (any bit pattern is a valid block once the f16 scales are
// finite), for the runtime kernel tests and benchmarks.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "runtime/weight_matrix.h"

namespace tenzro::runtime::testing {

inline WeightMatrix RandomMatrix(quant::GgmlType type, int64_t rows, int64_t row_len, uint32_t seed) {
  using quant::GgmlType;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.5e-3f, 2e-3f);
  const uint64_t rb = *quant::RowBytes(type, row_len);
  Bytes data(rb * rows);
  auto fill_bytes = [&](uint8_t* p, size_t n) { for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(byte(rng)); };
  auto h = [](float f) { return quant::Fp32ToFp16(f); };
  const int64_t n = rows * row_len;
  switch (type) {
    case GgmlType::F32:
      for (int64_t i = 0; i < n; ++i) { float v = 0.05f * normal(rng); std::memcpy(&data[4 * i], &v, 4); }
      break;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) { uint16_t v = h(0.05f * normal(rng)); std::memcpy(&data[2 * i], &v, 2); }
      break;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t v = quant::Fp32ToBf16(0.05f * normal(rng)); std::memcpy(&data[2 * i], &v, 2); }
      break;
    case GgmlType::Q8_0: {
      auto* b = reinterpret_cast<quant::block_q8_0*>(data.data());
      for (int64_t i = 0; i < n / 32; ++i) {
        b[i].d = h(scale(rng));
        for (int l = 0; l < 32; ++l) b[i].qs[l] = static_cast<int8_t>(byte(rng) % 255 - 127);
      }
      break;
    }
    case GgmlType::Q4_K: {
      auto* b = reinterpret_cast<quant::block_q4_K*>(data.data());
      for (int64_t i = 0; i < n / 256; ++i) {
        fill_bytes(reinterpret_cast<uint8_t*>(&b[i]), sizeof(b[i]));
        b[i].d = h(scale(rng)); b[i].dmin = h(scale(rng));
      }
      break;
    }
    case GgmlType::Q5_K: {
      auto* b = reinterpret_cast<quant::block_q5_K*>(data.data());
      for (int64_t i = 0; i < n / 256; ++i) {
        fill_bytes(reinterpret_cast<uint8_t*>(&b[i]), sizeof(b[i]));
        b[i].d = h(scale(rng)); b[i].dmin = h(scale(rng));
      }
      break;
    }
    case GgmlType::Q6_K: {
      auto* b = reinterpret_cast<quant::block_q6_K*>(data.data());
      for (int64_t i = 0; i < n / 256; ++i) {
        fill_bytes(reinterpret_cast<uint8_t*>(&b[i]), sizeof(b[i]));
        for (int s = 0; s < 16; ++s) b[i].scales[s] = static_cast<int8_t>(byte(rng) % 255 - 127);
        b[i].d = h(scale(rng) * 0.1f);
      }
      break;
    }
    default:
      break;
  }
  return *WeightMatrix::Own(type, row_len, rows, std::move(data));
}

// A k-quant matrix (Q4_K, Q5_K, Q6_K) whose every block sits at the type's
// extreme: largest weights, scales and mins (Q4_K, Q5_K), or Q6_K's -32 x
// -128 corner, all with d = dmin = 1. Against activations that quantize to
// +-127 with the largest multiplier the kernels' integer sums reach ~2^31.
inline WeightMatrix SaturatedKQuantMatrix(quant::GgmlType type, int64_t rows, int64_t row_len) {
  using quant::GgmlType;
  const uint16_t one = quant::Fp32ToFp16(1.0f);
  const uint64_t rb = *quant::RowBytes(type, row_len);
  const uint64_t block_bytes = rb / (row_len / 256);
  Bytes data(rb * rows);
  for (int64_t b = 0; b < rows * row_len / 256; ++b) {
    uint8_t* p = data.data() + b * block_bytes;
    if (type == GgmlType::Q6_K) {
      auto* blk = reinterpret_cast<quant::block_q6_K*>(p);
      std::memset(blk->ql, 0, sizeof blk->ql);  // q = 0 -> q - 32 = -32
      std::memset(blk->qh, 0, sizeof blk->qh);
      std::memset(blk->scales, 0x80, sizeof blk->scales);  // -128
      blk->d = one;
    } else if (type == GgmlType::Q5_K) {
      auto* blk = reinterpret_cast<quant::block_q5_K*>(p);
      std::memset(blk->qs, 0xFF, sizeof blk->qs);
      std::memset(blk->qh, 0xFF, sizeof blk->qh);
      std::memset(blk->scales, 0xFF, sizeof blk->scales);
      blk->d = blk->dmin = one;
    } else {
      auto* blk = reinterpret_cast<quant::block_q4_K*>(p);
      std::memset(blk->qs, 0xFF, sizeof blk->qs);
      std::memset(blk->scales, 0xFF, sizeof blk->scales);
      blk->d = blk->dmin = one;
    }
  }
  return *WeightMatrix::Own(type, row_len, rows, std::move(data));
}

inline std::vector<float> RandomActs(int64_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

}  // namespace tenzro::runtime::testing
