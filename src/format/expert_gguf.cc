#include "format/expert_gguf.h"

#include "format/gguf_writer.h"

namespace tenzro::format {
namespace {


constexpr const char* kExpertNames[3] = {"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"};
constexpr const char* kShexpNames[3] = {"ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight"};

Result<void> ValidateMatrix(const Matrix& m, std::string_view what) {
  if (m.row_len <= 0 || m.rows <= 0) return Error::InvalidArgument("{}: empty shape {}x{}", what, m.rows, m.row_len);
  TENZRO_TRY(uint64_t row_bytes, quant::RowBytes(m.type, m.row_len));
  uint64_t need;
  if (MulOverflow(row_bytes, static_cast<uint64_t>(m.rows), &need) || need != m.bytes.size())
    return Error::InvalidArgument("{}: {} rows of {} {} values need {} bytes, have {}", what, m.rows, m.row_len,
                                  quant::TypeName(m.type), row_bytes * static_cast<uint64_t>(m.rows), m.bytes.size());
  return Ok();
}

void SetIdentity(GgufWriter& w, const ExpertIdentity& id, const char* kind, std::string name) {
  w.Set("general.architecture", GgufValue::Str(id.architecture.empty() ? "unknown" : id.architecture));
  w.Set("general.type", GgufValue::Str(kind));
  w.Set("general.name", GgufValue::Str(std::move(name)));
  w.Set("tenzro.format_version", GgufValue::U32(kExpertGgufVersion));
  w.Set("tenzro.model_id", GgufValue::Str(id.model_id));
  w.Set("tenzro.layer", GgufValue::U32(static_cast<uint32_t>(id.layer)));
}

Result<void> AddMatrix(GgufWriter& w, const char* name, const Matrix& m) {
  std::vector<int64_t> ne = m.rows == 1 && std::string_view(name).find("_inp_shexp") != std::string_view::npos
                                ? std::vector<int64_t>{m.row_len}
                                : std::vector<int64_t>{m.row_len, m.rows};
  return w.AddTensor(name, m.type, std::move(ne), m.bytes);
}

Result<void> AddFfn(GgufWriter& w, const ExpertTensors& t, const char* const names[3]) {
  for (int p = 0; p < 3; ++p) TENZRO_CHECK_OK(AddMatrix(w, names[p], t.proj[p]));
  return Ok();
}

// --- decoding helpers ---

Result<int64_t> GetU(const GgufFile& f, std::string_view key, std::string_view name) {
  const GgufValue* v = f.Find(key);
  if (!v || !v->AsInt()) return Error::Corruption("{}: missing integer key {}", name, key);
  int64_t x = *v->AsInt();
  if (x < 0 || x > (1ll << 31)) return Error::Corruption("{}: key {} = {} out of range", name, key, x);
  return x;
}

Result<std::string> GetS(const GgufFile& f, std::string_view key, std::string_view name) {
  const GgufValue* v = f.Find(key);
  if (!v || !v->AsString()) return Error::Corruption("{}: missing string key {}", name, key);
  return *v->AsString();
}

// Reads tensor `tname` as a matrix of `rows` x `row_len` (rows == 1 accepts a
// 1-D tensor of row_len values).
Result<Matrix> GetMatrix(const GgufFile& f, const char* tname, int64_t row_len, int64_t rows,
                         std::string_view name) {
  const GgufTensorInfo* t = f.FindTensor(tname);
  if (!t) return Error::Corruption("{}: missing tensor {}", name, tname);
  int64_t got_rows = t->ne.size() >= 2 ? t->ne[1] : 1;
  for (size_t i = 2; i < t->ne.size(); ++i)
    if (t->ne[i] != 1) return Error::Corruption("{}: tensor {} has more than 2 dimensions", name, tname);
  if (t->ne.empty() || t->ne[0] != row_len || got_rows != rows)
    return Error::Corruption("{}: tensor {} has shape {{{}, {}}}, expected {{{}, {}}}", name, tname,
                             t->ne.empty() ? 0 : t->ne[0], got_rows, row_len, rows);
  Matrix m{t->type, row_len, rows, f.TensorBytes(*t)};
  auto ok = ValidateMatrix(m, tname);
  if (!ok) return Error::Corruption("{}: {}", name, ok.error().message());
  return m;
}

Result<ExpertTensors> GetFfn(const GgufFile& f, const char* const names[3], int64_t n_embd, int64_t n_ff,
                             std::string_view name) {
  ExpertTensors t;
  TENZRO_TRY(t.proj[0], GetMatrix(f, names[0], n_embd, n_ff, name));
  TENZRO_TRY(t.proj[1], GetMatrix(f, names[1], n_embd, n_ff, name));
  TENZRO_TRY(t.proj[2], GetMatrix(f, names[2], n_ff, n_embd, name));
  return t;
}

}  // namespace

Result<void> ValidateExpertTensors(const ExpertTensors& t, std::string_view what) {
  for (Projection p : kProjections)
    TENZRO_CHECK_OK(ValidateMatrix(t.proj[static_cast<int>(p)], fmt::format("{} {}", what, ProjectionName(p))));
  const Matrix &g = t.proj[0], &u = t.proj[1], &d = t.proj[2];
  if (u.row_len != g.row_len || u.rows != g.rows)
    return Error::InvalidArgument("{}: up {}x{} differs from gate {}x{}", what, u.rows, u.row_len, g.rows, g.row_len);
  if (d.row_len != g.rows || d.rows != g.row_len)
    return Error::InvalidArgument("{}: down is {}x{}, expected {}x{} (n_embd x n_ff)", what, d.rows, d.row_len,
                                  g.row_len, g.rows);
  return Ok();
}

Result<Bytes> EncodeExpertGguf(const ExpertIdentity& id, const ExpertTensors& t) {
  TENZRO_CHECK_OK(ValidateExpertTensors(t, fmt::format("layer {} expert {}", id.layer, id.expert)));
  GgufWriter w;
  SetIdentity(w, id, kKindExpert, fmt::format("{} layer {} expert {}", id.model_id, id.layer, id.expert));
  w.Set("tenzro.expert", GgufValue::U32(static_cast<uint32_t>(id.expert)));
  w.Set("tenzro.n_embd", GgufValue::U32(static_cast<uint32_t>(t.n_embd())));
  w.Set("tenzro.n_ff", GgufValue::U32(static_cast<uint32_t>(t.n_ff())));
  w.Set("tenzro.quant", GgufValue::Str(id.quant));
  TENZRO_CHECK_OK(AddFfn(w, t, kExpertNames));
  return w.Serialize();
}

Result<Bytes> EncodeGateGguf(const ExpertIdentity& id, const GateTensors& g) {
  TENZRO_CHECK_OK(ValidateMatrix(g.router, "router"));
  const int64_t n_embd = g.router.row_len, n_expert = g.router.rows;
  GgufWriter w;
  SetIdentity(w, id, kKindGate, fmt::format("{} layer {} gate", id.model_id, id.layer));
  w.Set("tenzro.n_embd", GgufValue::U32(static_cast<uint32_t>(n_embd)));
  w.Set("tenzro.n_expert", GgufValue::U32(static_cast<uint32_t>(n_expert)));
  w.Set("tenzro.n_expert_used", GgufValue::U32(static_cast<uint32_t>(g.n_expert_used)));
  w.Set("tenzro.n_ff_shexp", GgufValue::U32(g.shared ? static_cast<uint32_t>(g.shared->n_ff()) : 0));
  w.Set("tenzro.quant", GgufValue::Str(id.quant));
  TENZRO_CHECK_OK(w.AddTensor("ffn_gate_inp.weight", g.router.type, {n_embd, n_expert}, g.router.bytes));
  if (g.bias) {
    if (g.bias->type != quant::GgmlType::F32 || g.bias->row_len != n_expert || g.bias->rows != 1)
      return Error::InvalidArgument("selection bias must be {} f32 values", n_expert);
    TENZRO_CHECK_OK(w.AddTensor("exp_probs_b.bias", quant::GgmlType::F32, {n_expert}, g.bias->bytes));
  }
  if (g.shared) {
    TENZRO_CHECK_OK(ValidateExpertTensors(*g.shared, "shared expert"));
    if (g.shared->n_embd() != n_embd) return Error::InvalidArgument("shared expert n_embd differs from the router's");
    TENZRO_CHECK_OK(AddFfn(w, *g.shared, kShexpNames));
  }
  if (g.shared_gate) {
    TENZRO_CHECK_OK(ValidateMatrix(*g.shared_gate, "shared expert gate"));
    if (g.shared_gate->row_len != n_embd || g.shared_gate->rows != 1)
      return Error::InvalidArgument("shared expert gate must be one row of n_embd = {}", n_embd);
    TENZRO_CHECK_OK(w.AddTensor("ffn_gate_inp_shexp.weight", g.shared_gate->type, {n_embd}, g.shared_gate->bytes));
  }
  return w.Serialize();
}

Result<DecodedExpertFile> DecodeExpertGguf(ByteSpan data, std::shared_ptr<const void> owner, std::string name) {
  DecodedExpertFile out;
  out.owner = std::move(owner);
  TENZRO_TRY(out.file, GgufFile::Parse(data, name));
  const GgufFile& f = *out.file;
  TENZRO_TRY(out.kind, GetS(f, "general.type", name));
  if (out.kind != kKindExpert && out.kind != kKindGate)
    return Error::Corruption("{}: general.type is '{}', not a tenzro expert or gate file", name, out.kind);
  TENZRO_TRY(int64_t version, GetU(f, "tenzro.format_version", name));
  if (version > kExpertGgufVersion)
    return Error::Unsupported("{}: expert file version {} is newer than this build ({})", name, version,
                              kExpertGgufVersion);
  TENZRO_TRY(out.id.architecture, GetS(f, "general.architecture", name));
  TENZRO_TRY(out.id.model_id, GetS(f, "tenzro.model_id", name));
  TENZRO_TRY(int64_t layer, GetU(f, "tenzro.layer", name));
  out.id.layer = static_cast<int>(layer);
  if (const GgufValue* q = f.Find("tenzro.quant"); q && q->AsString()) out.id.quant = *q->AsString();
  TENZRO_TRY(int64_t n_embd, GetU(f, "tenzro.n_embd", name));
  if (out.kind == kKindExpert) {
    TENZRO_TRY(int64_t expert, GetU(f, "tenzro.expert", name));
    TENZRO_TRY(int64_t n_ff, GetU(f, "tenzro.n_ff", name));
    out.id.expert = static_cast<int>(expert);
    TENZRO_TRY(out.expert, GetFfn(f, kExpertNames, n_embd, n_ff, name));
    return out;
  }
  TENZRO_TRY(int64_t n_expert, GetU(f, "tenzro.n_expert", name));
  TENZRO_TRY(int64_t used, GetU(f, "tenzro.n_expert_used", name));
  TENZRO_TRY(int64_t n_ff_sh, GetU(f, "tenzro.n_ff_shexp", name));
  if (used < 1 || used > n_expert)
    return Error::Corruption("{}: n_expert_used {} not in [1, {}]", name, used, n_expert);
  out.gate.n_expert_used = static_cast<int>(used);
  TENZRO_TRY(out.gate.router, GetMatrix(f, "ffn_gate_inp.weight", n_embd, n_expert, name));
  if (f.FindTensor("exp_probs_b.bias")) {
    TENZRO_TRY(Matrix b, GetMatrix(f, "exp_probs_b.bias", n_expert, 1, name));
    if (b.type != quant::GgmlType::F32) return Error::Corruption("{}: exp_probs_b.bias is not F32", name);
    out.gate.bias = b;
  }
  if (n_ff_sh > 0) {
    TENZRO_TRY(ExpertTensors sh, GetFfn(f, kShexpNames, n_embd, n_ff_sh, name));
    out.gate.shared = sh;
  }
  if (f.FindTensor("ffn_gate_inp_shexp.weight")) {
    TENZRO_TRY(Matrix sg, GetMatrix(f, "ffn_gate_inp_shexp.weight", n_embd, 1, name));
    out.gate.shared_gate = sg;
  }
  return out;
}

}  // namespace tenzro::format
