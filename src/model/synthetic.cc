#include "model/synthetic.h"

#include <cmath>
#include <deque>
#include <filesystem>

#include <fmt/format.h>

#include "format/gguf_writer.h"

namespace tenzro::model {

namespace {

using format::GgufValue;
using quant::GgmlType;

const SyntheticShape kShapes[] = {
    // Qwen3.5-122B-A10B: 48 layers (3 delta net : 1 gated attention), 256
    // experts of 1024, one shared expert of 1024, vocabulary 248,320.
    {"qwen3.5-122b-a10b", "qwen35moe", 48, 3072, 248320, 32, 2, 256, 64, 1e7, 256, 8, 1024, 1024, 4, 128, 16, 64,
     8192, 4},
    {"qwen3.5-35b-a3b", "qwen35moe", 40, 2048, 248320, 16, 2, 256, 64, 1e7, 256, 8, 512, 512, 4, 128, 16, 32, 4096,
     4},
    {"qwen3-30b-a3b", "qwen3moe", 48, 2048, 151936, 32, 4, 128, 128, 1e6, 128, 8, 768, 0, 0, 0, 0, 0, 0, 0},
    {"tiny-qwen3moe", "qwen3moe", 2, 256, 1024, 4, 2, 64, 64, 1e6, 8, 2, 512, 0, 0, 0, 0, 0, 0, 0},
};

// xorshift64*: deterministic on every platform.
struct Rng {
  uint64_t s;
  float Uniform() {  // [-1, 1)
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    uint64_t r = s * 2685821657736338717ull;
    return static_cast<float>((r >> 40) * (1.0 / (1ull << 24))) * 2.0f - 1.0f;
  }
};

class Builder {
 public:
  Builder(uint64_t seed) : rng_{seed * 0x9E3779B97F4A7C15ull + 1} {}
  format::GgufWriter w;

  // A [row_len, rows] matrix of uniform values scaled by `scale`.
  Result<void> Matrix(const std::string& name, GgmlType type, int64_t row_len, int64_t rows, float scale) {
    std::vector<float> f(static_cast<size_t>(row_len * rows));
    for (float& v : f) v = rng_.Uniform() * scale;
    return Add(name, type, {row_len, rows}, f);
  }
  // A [row_len, rows, n] stack (experts).
  Result<void> Stack(const std::string& name, GgmlType type, int64_t row_len, int64_t rows, int64_t n, float scale) {
    std::vector<float> f(static_cast<size_t>(row_len * rows * n));
    for (float& v : f) v = rng_.Uniform() * scale;
    return Add(name, type, {row_len, rows, n}, f);
  }
  Result<void> Vector(const std::string& name, std::vector<int64_t> ne, std::vector<float> f) {
    return Add(name, GgmlType::F32, std::move(ne), f);
  }
  Result<void> Constant(const std::string& name, int64_t n, float v) {
    return Vector(name, {n}, std::vector<float>(static_cast<size_t>(n), v));
  }
  float Uniform() { return rng_.Uniform(); }

 private:
  Result<void> Add(const std::string& name, GgmlType type, std::vector<int64_t> ne, const std::vector<float>& f) {
    TENZRO_TRY(uint64_t row_bytes, quant::RowBytes(type, ne[0]));
    int64_t rows = static_cast<int64_t>(f.size()) / ne[0];
    keep_.emplace_back(row_bytes * rows);
    auto q = quant::QuantizeRowsParallel(type, f.data(), keep_.back().data(), rows, ne[0]);
    if (!q) return q.error().WithContext(name);
    return w.AddTensor(name, type, std::move(ne), ByteSpan(keep_.back().data(), keep_.back().size()));
  }
  Rng rng_;
  std::deque<Bytes> keep_;
};

std::string Blk(int il, std::string_view s) { return fmt::format("blk.{}.{}", il, s); }

}  // namespace

Result<SyntheticShape> FindSyntheticShape(std::string_view id) {
  for (const SyntheticShape& s : kShapes)
    if (s.id == id) return s;
  return Error::NotFound("no synthetic shape '{}' (known: {})", id, fmt::join(SyntheticShapeIds(), ", "));
}

std::vector<std::string_view> SyntheticShapeIds() {
  std::vector<std::string_view> v;
  for (const SyntheticShape& s : kShapes) v.push_back(s.id);
  return v;
}

Result<uint64_t> WriteSyntheticModel(const SyntheticShape& shape, const SyntheticOptions& o, const std::string& path) {
  const int layers = o.layers > 0 ? o.layers : shape.n_layer;
  const int vocab = o.n_vocab > 0 ? o.n_vocab : shape.n_vocab;
  const int experts = o.experts > 0 ? std::min(o.experts, shape.n_expert) : shape.n_expert;
  const int used = std::min(shape.n_expert_used, experts);
  if (layers > 4096 || vocab > (1 << 24)) return Error::InvalidArgument("synthetic model too large");
  const std::string& a = shape.arch;
  const bool q35 = a == "qwen35moe";
  const int64_t E = shape.n_embd, hd = shape.head_dim;
  const float s_e = 1.0f / std::sqrt(static_cast<float>(E));
  Builder b(o.seed);
  format::GgufWriter& w = b.w;
  w.Set("general.architecture", GgufValue::Str(a));
  w.Set("general.name", GgufValue::Str(shape.id + " (random weights)"));
  w.Set(a + ".block_count", GgufValue::U32(layers));
  w.Set(a + ".context_length", GgufValue::U32(4096));
  w.Set(a + ".embedding_length", GgufValue::U32(static_cast<uint32_t>(E)));
  w.Set(a + ".attention.head_count", GgufValue::U32(shape.n_head));
  w.Set(a + ".attention.head_count_kv", GgufValue::U32(shape.n_head_kv));
  w.Set(a + ".attention.key_length", GgufValue::U32(static_cast<uint32_t>(hd)));
  w.Set(a + ".attention.value_length", GgufValue::U32(static_cast<uint32_t>(hd)));
  w.Set(a + ".attention.layer_norm_rms_epsilon", GgufValue::F32(1e-6f));
  w.Set(a + ".rope.dimension_count", GgufValue::U32(shape.n_rot));
  w.Set(a + ".rope.freq_base", GgufValue::F32(static_cast<float>(shape.rope_base)));
  w.Set(a + ".expert_count", GgufValue::U32(experts));
  w.Set(a + ".expert_used_count", GgufValue::U32(used));
  w.Set(a + ".expert_feed_forward_length", GgufValue::U32(static_cast<uint32_t>(shape.n_ff_exp)));
  if (shape.n_ff_shexp > 0)
    w.Set(a + ".expert_shared_feed_forward_length", GgufValue::U32(static_cast<uint32_t>(shape.n_ff_shexp)));
  if (q35) {
    w.Set(a + ".ssm.conv_kernel", GgufValue::U32(shape.ssm_conv_kernel));
    w.Set(a + ".ssm.state_size", GgufValue::U32(shape.ssm_d_state));
    w.Set(a + ".ssm.group_count", GgufValue::U32(shape.ssm_n_k_heads));
    w.Set(a + ".ssm.time_step_rank", GgufValue::U32(shape.ssm_n_v_heads));
    w.Set(a + ".ssm.inner_size", GgufValue::U32(static_cast<uint32_t>(shape.ssm_d_inner)));
    w.Set(a + ".full_attention_interval", GgufValue::U32(shape.full_attention_interval));
  }
  const GgmlType dt = o.dense_type, et = o.expert_type;
  TENZRO_CHECK_OK(b.Matrix("token_embd.weight", dt, E, vocab, 1.0f));
  for (int il = 0; il < layers; ++il) {
    TENZRO_CHECK_OK(b.Constant(Blk(il, "attn_norm.weight"), E, 1.0f));
    TENZRO_CHECK_OK(b.Constant(Blk(il, q35 ? "post_attention_norm.weight" : "ffn_norm.weight"), E, 1.0f));
    bool full = !q35 || (il + 1) % shape.full_attention_interval == 0;
    if (full) {
      const int64_t qd = static_cast<int64_t>(shape.n_head) * hd, kvd = static_cast<int64_t>(shape.n_head_kv) * hd;
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "attn_q.weight"), dt, E, q35 ? 2 * qd : qd, s_e));
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "attn_k.weight"), dt, E, kvd, s_e));
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "attn_v.weight"), dt, E, kvd, s_e));
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "attn_output.weight"), dt, qd, E, 1.0f / std::sqrt(static_cast<float>(qd))));
      TENZRO_CHECK_OK(b.Constant(Blk(il, "attn_q_norm.weight"), hd, 1.0f));
      TENZRO_CHECK_OK(b.Constant(Blk(il, "attn_k_norm.weight"), hd, 1.0f));
    } else {
      const int64_t ch = 2LL * shape.ssm_n_k_heads * shape.ssm_d_state + shape.ssm_d_inner;
      const int nv = shape.ssm_n_v_heads;
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "attn_qkv.weight"), dt, E, ch, s_e));
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "attn_gate.weight"), dt, E, shape.ssm_d_inner, s_e));
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "ssm_alpha.weight"), GgmlType::F32, E, nv, s_e));
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "ssm_beta.weight"), GgmlType::F32, E, nv, s_e));
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "ssm_out.weight"), dt, shape.ssm_d_inner, E,
                               1.0f / std::sqrt(static_cast<float>(shape.ssm_d_inner))));
      std::vector<float> conv(static_cast<size_t>(ch * shape.ssm_conv_kernel)), dtb(nv), av(nv);
      for (float& v : conv) v = b.Uniform() * 0.5f;
      for (int h = 0; h < nv; ++h) {
        dtb[h] = b.Uniform();
        av[h] = -std::exp(b.Uniform() * 2.0f);  // -exp(A_log), A_log in [-2, 2)
      }
      TENZRO_CHECK_OK(b.Vector(Blk(il, "ssm_conv1d.weight"), {shape.ssm_conv_kernel, ch}, std::move(conv)));
      TENZRO_CHECK_OK(b.Vector(Blk(il, "ssm_dt.bias"), {nv}, std::move(dtb)));
      TENZRO_CHECK_OK(b.Vector(Blk(il, "ssm_a"), {nv}, std::move(av)));
      TENZRO_CHECK_OK(b.Constant(Blk(il, "ssm_norm.weight"), shape.ssm_d_inner / nv, 1.0f));
    }
    const int64_t ff = shape.n_ff_exp;
    TENZRO_CHECK_OK(b.Matrix(Blk(il, "ffn_gate_inp.weight"), GgmlType::F32, E, experts, s_e));
    TENZRO_CHECK_OK(b.Stack(Blk(il, "ffn_gate_exps.weight"), et, E, ff, experts, s_e));
    TENZRO_CHECK_OK(b.Stack(Blk(il, "ffn_up_exps.weight"), et, E, ff, experts, s_e));
    TENZRO_CHECK_OK(b.Stack(Blk(il, "ffn_down_exps.weight"), et, ff, E, experts, 1.0f / std::sqrt(static_cast<float>(ff))));
    if (shape.n_ff_shexp > 0) {
      const int64_t sf = shape.n_ff_shexp;
      std::vector<float> g(static_cast<size_t>(E));
      for (float& v : g) v = b.Uniform() * s_e;
      TENZRO_CHECK_OK(b.Vector(Blk(il, "ffn_gate_inp_shexp.weight"), {E}, std::move(g)));
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "ffn_gate_shexp.weight"), et, E, sf, s_e));
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "ffn_up_shexp.weight"), et, E, sf, s_e));
      TENZRO_CHECK_OK(b.Matrix(Blk(il, "ffn_down_shexp.weight"), et, sf, E, 1.0f / std::sqrt(static_cast<float>(sf))));
    }
  }
  TENZRO_CHECK_OK(b.Constant("output_norm.weight", E, 1.0f));
  TENZRO_CHECK_OK(b.Matrix("output.weight", dt, E, vocab, s_e));
  if (o.tokenizer) {
    std::vector<std::string> tokens(static_cast<size_t>(vocab));
    // Tokens 0..255: the 256 bytes as byte-level BPE spells them (GPT-2's
    // bytes_to_unicode: printable bytes as themselves, the rest from U+0100).
    for (int i = 0, extra = 0; i < vocab; ++i) {
      if (i >= 256) {
        tokens[i] = fmt::format("t{}", i);
        continue;
      }
      const bool printable = (i >= 33 && i <= 126) || (i >= 161 && i <= 172) || i >= 174;
      const uint32_t cp = printable ? static_cast<uint32_t>(i) : 256u + extra++;
      tokens[i] = cp < 0x80 ? std::string(1, static_cast<char>(cp))
                            : std::string{static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
    w.Set("tokenizer.ggml.model", GgufValue::Str("gpt2"));
    w.Set("tokenizer.ggml.pre", GgufValue::Str("qwen2"));
    w.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
    w.Set("tokenizer.ggml.token_type",
          GgufValue::IntArray(format::GgufType::kInt32, std::vector<int64_t>(tokens.size(), 1)));
    w.Set("tokenizer.ggml.eos_token_id", GgufValue::U32(static_cast<uint32_t>(vocab - 1)));
  }
  TENZRO_CHECK_OK(w.Write(path));
  std::error_code ec;
  return static_cast<uint64_t>(std::filesystem::file_size(path, ec));
}

}  // namespace tenzro::model
