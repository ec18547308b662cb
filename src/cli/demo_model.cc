#include "cli/demo_model.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "format/gguf_value.h"
#include "format/gguf_writer.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/types.h"

namespace tenzro::cli {
namespace {

using format::GgufValue;
using quant::GgmlType;

// splitmix64: fast, deterministic, good enough for random weights.
struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float Uniform() { return static_cast<float>(Next() >> 40) / static_cast<float>(1 << 24); }  // [0, 1)
  void Fill(uint8_t* p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const uint64_t v = Next();
      std::memcpy(p + i, &v, 8);
    }
    for (; i < n; ++i) p[i] = static_cast<uint8_t>(Next());
  }
};

// `rows` rows of `row_len` values in `type`, random valid blocks. Magnitudes
// are chosen so a row's values are ~N(0, 1/row_len)-sized, like trained
// weights, and activations stay in range through gate/up/down.
// REQUIRES: row_len a multiple of the type's block (checked by the caller).
uint64_t RowBytesOf(GgmlType type, int64_t row_len) { return *quant::RowBytes(type, row_len); }

std::vector<uint8_t> RandomRows(GgmlType type, int64_t row_len, int64_t rows, Rng& rng) {
  const uint64_t row_bytes = RowBytesOf(type, row_len);
  std::vector<uint8_t> out(row_bytes * rows);
  const float amp = 1.7f / std::sqrt(static_cast<float>(row_len));  // ~max |w| of a sub-block
  if (type == GgmlType::F32) {
    for (int64_t i = 0; i < row_len * rows; ++i) {
      const float v = (rng.Uniform() * 2 - 1) * amp;
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return out;
  }
  rng.Fill(out.data(), out.size());
  const int64_t n_blocks = row_len * rows / quant::QK_K;
  if (type == GgmlType::Q4_K) {
    auto* b = reinterpret_cast<quant::block_q4_K*>(out.data());
    for (int64_t i = 0; i < n_blocks; ++i) {
      // value = d * sc * q - dmin * m, q in 0..15, sc/m in 0..63 (random bytes).
      b[i].d = quant::Fp32ToFp16(amp / (15.0f * 40.0f) * (0.75f + 0.5f * rng.Uniform()));
      b[i].dmin = quant::Fp32ToFp16(amp / (2.0f * 40.0f) * (0.75f + 0.5f * rng.Uniform()));
    }
  } else if (type == GgmlType::Q6_K) {
    auto* b = reinterpret_cast<quant::block_q6_K*>(out.data());
    for (int64_t i = 0; i < n_blocks; ++i) {
      for (auto& s : b[i].scales) s = static_cast<int8_t>(16 + (rng.Next() % 48));  // 16..63
      b[i].d = quant::Fp32ToFp16(amp / (32.0f * 40.0f) * (0.75f + 0.5f * rng.Uniform()));
    }
  }
  return out;
}

}  // namespace

Result<RandomCheckpointInfo> WriteRandomMoeCheckpoint(const catalog::ModelShape& shape, int layers, int experts,
                                                      const std::string& path, uint64_t seed) {
  const int64_t n_embd = shape.n_embd, n_ff = shape.n_ff_exp;
  if (n_embd <= 0 || n_ff <= 0 || shape.n_expert <= 0 || shape.n_expert_used <= 0)
    return Error::InvalidArgument("model '{}' is not a MoE shape", shape.id);
  if (n_embd % quant::QK_K || n_ff % quant::QK_K)
    return Error::InvalidArgument("model '{}': n_embd {} and expert FFN {} must be multiples of {}", shape.id, n_embd,
                                  n_ff, quant::QK_K);
  if (layers < 1 || layers > shape.n_layer)
    return Error::InvalidArgument("--layers {} must be in 1..{} for {}", layers, shape.n_layer, shape.id);
  if (experts < shape.n_expert_used || experts > shape.n_expert)
    return Error::InvalidArgument("--experts {} must be in {}..{} (top-k .. experts of {})", experts,
                                  shape.n_expert_used, shape.n_expert, shape.id);
  const std::string arch = shape.architecture;
  const int64_t n_ff_sh = shape.n_shared_expert > 0 ? shape.n_ff_shexp : 0;
  if (n_ff_sh % quant::QK_K) return Error::InvalidArgument("shared FFN {} is not a multiple of 256", n_ff_sh);

  format::GgufWriter w;
  w.Set("general.architecture", GgufValue::Str(arch));
  w.Set("general.name", GgufValue::Str(shape.id + " (random weights, tenzro demo)"));
  w.Set("general.file_type", GgufValue::U32(15));  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  w.Set(arch + ".block_count", GgufValue::U32(layers));
  w.Set(arch + ".embedding_length", GgufValue::U32(static_cast<uint32_t>(n_embd)));
  w.Set(arch + ".expert_count", GgufValue::U32(experts));
  w.Set(arch + ".expert_used_count", GgufValue::U32(shape.n_expert_used));
  w.Set(arch + ".expert_feed_forward_length", GgufValue::U32(static_cast<uint32_t>(n_ff)));
  if (n_ff_sh > 0) w.Set(arch + ".expert_shared_feed_forward_length", GgufValue::U32(static_cast<uint32_t>(n_ff_sh)));
  if (shape.full_attention_interval > 0)
    w.Set(arch + ".full_attention_interval", GgufValue::U32(shape.full_attention_interval));

  Rng rng{seed};
  std::vector<std::vector<uint8_t>> keep;  // tensor data outlives the writer's Write
  auto add = [&](const std::string& name, GgmlType type, std::vector<int64_t> ne, std::vector<uint8_t> data) {
    keep.push_back(std::move(data));
    return w.AddTensor(name, type, std::move(ne), ByteSpan(keep.back().data(), keep.back().size()));
  };
  RandomCheckpointInfo info;
  for (int l = 0; l < layers; ++l) {
    const GgmlType down = catalog::UseMoreBits(l, layers) ? GgmlType::Q6_K : GgmlType::Q4_K;
    const std::string blk = "blk." + std::to_string(l) + ".";
    TENZRO_CHECK_OK(add(blk + "ffn_gate_inp.weight", GgmlType::F32, {n_embd, experts},
                        RandomRows(GgmlType::F32, n_embd, experts, rng)));
    TENZRO_CHECK_OK(add(blk + "ffn_gate_exps.weight", GgmlType::Q4_K, {n_embd, n_ff, experts},
                        RandomRows(GgmlType::Q4_K, n_embd, n_ff * experts, rng)));
    TENZRO_CHECK_OK(add(blk + "ffn_up_exps.weight", GgmlType::Q4_K, {n_embd, n_ff, experts},
                        RandomRows(GgmlType::Q4_K, n_embd, n_ff * experts, rng)));
    TENZRO_CHECK_OK(add(blk + "ffn_down_exps.weight", down, {n_ff, n_embd, experts},
                        RandomRows(down, n_ff, n_embd * experts, rng)));
    info.expert_bytes = 2 * RowBytesOf(GgmlType::Q4_K, n_embd) * n_ff + RowBytesOf(down, n_ff) * n_embd;
    if (n_ff_sh > 0) {
      TENZRO_CHECK_OK(add(blk + "ffn_gate_inp_shexp.weight", GgmlType::F32, {n_embd},
                          RandomRows(GgmlType::F32, n_embd, 1, rng)));
      TENZRO_CHECK_OK(add(blk + "ffn_gate_shexp.weight", GgmlType::Q4_K, {n_embd, n_ff_sh},
                          RandomRows(GgmlType::Q4_K, n_embd, n_ff_sh, rng)));
      TENZRO_CHECK_OK(add(blk + "ffn_up_shexp.weight", GgmlType::Q4_K, {n_embd, n_ff_sh},
                          RandomRows(GgmlType::Q4_K, n_embd, n_ff_sh, rng)));
      TENZRO_CHECK_OK(add(blk + "ffn_down_shexp.weight", down, {n_ff_sh, n_embd},
                          RandomRows(down, n_ff_sh, n_embd, rng)));
    }
  }
  TENZRO_CHECK_OK(w.Write(path));
  for (const auto& k : keep) info.file_bytes += k.size();
  return info;
}

}  // namespace tenzro::cli
