#include "runtime/expert_loader.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/file.h"
#include "format/gguf_format.h"
#include "format/safetensors_reader.h"

namespace tenzro::runtime {
namespace {

using format::Matrix;

Result<WeightMatrix> ToWeight(const Matrix& m, std::shared_ptr<const void> owner, std::string_view what) {
  if (!IsComputeType(m.type))
    return Error::Unsupported("{}: format {} has no compute kernel in this build", what, quant::TypeName(m.type));
  TENZRO_TRY(WeightMatrix w, WeightMatrix::Borrow(m.type, m.row_len, m.rows, m.bytes));
  w.owner = std::move(owner);
  return w;
}

Result<ExpertWeights> ToExpert(const format::ExpertTensors& t, const std::shared_ptr<const void>& owner,
                               std::string_view what) {
  ExpertWeights w;
  TENZRO_TRY(w.gate, ToWeight(t.proj[0], owner, fmt::format("{} gate", what)));
  TENZRO_TRY(w.up, ToWeight(t.proj[1], owner, fmt::format("{} up", what)));
  TENZRO_TRY(w.down, ToWeight(t.proj[2], owner, fmt::format("{} down", what)));
  TENZRO_CHECK_OK(w.Validate());
  return w;
}

std::string Fmt3(const quant::GgmlType t[3]) {
  return fmt::format("{}/{}/{}", quant::TypeName(t[0]), quant::TypeName(t[1]), quant::TypeName(t[2]));
}

ExpertFileInfo InfoOf(const format::DecodedExpertFile& d, uint64_t bytes) {
  ExpertFileInfo info;
  info.id = d.id;
  info.n_embd = d.expert.n_embd();
  info.n_ff = d.expert.n_ff();
  for (int p = 0; p < 3; ++p) info.types[p] = d.expert.proj[p].type;
  info.bytes = bytes;
  return info;
}

// --- safetensors ---

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The one tensor whose name equals one of `exact` or ends with one of
// `suffixes` (after a '.' or at the start). nullptr when none; an error when
// several match.
Result<const format::SafetensorsTensor*> FindOne(const format::SafetensorsFile& f,
                                                 std::initializer_list<std::string_view> exact,
                                                 std::initializer_list<std::string_view> suffixes,
                                                 std::string_view exclude = {}) {
  std::vector<const format::SafetensorsTensor*> hits;
  for (const auto& t : f.tensors()) {
    if (!exclude.empty() && t.name.find(exclude) != std::string::npos) continue;
    bool match = false;
    for (std::string_view e : exact) match |= t.name == e;
    for (std::string_view s : suffixes)
      match |= t.name == s || (EndsWith(t.name, s) && t.name[t.name.size() - s.size() - 1] == '.');
    if (match) hits.push_back(&t);
  }
  if (hits.size() > 1) {
    std::string names;
    for (auto* h : hits) names += (names.empty() ? "" : ", ") + h->name;
    return Error::InvalidArgument("{}: several tensors match: {}", f.path(), names);
  }
  return hits.empty() ? nullptr : hits[0];
}

// A 2-D (or, for rows_one, 1-D / [1, n]) F32/F16/BF16 tensor as a Matrix.
Result<Matrix> StMatrix(const format::SafetensorsFile& f, const format::SafetensorsTensor& t, bool one_row = false) {
  auto g = format::StDtypeToGgml(t.dtype);
  if (!g || (*g != quant::GgmlType::F32 && *g != quant::GgmlType::F16 && *g != quant::GgmlType::BF16))
    return Error::Unsupported("{}: tensor {} has dtype {}, expected F32, F16 or BF16", f.path(), t.name,
                              format::StDtypeName(t.dtype));
  Matrix m;
  m.type = *g;
  if (one_row && t.shape.size() == 1) {
    m.rows = 1;
    m.row_len = t.shape[0];
  } else if (t.shape.size() == 2 && (!one_row || t.shape[0] == 1)) {
    m.rows = t.shape[0];
    m.row_len = t.shape[1];
  } else {
    std::string dims;
    for (int64_t d : t.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    return Error::InvalidArgument("{}: tensor {} has shape [{}], expected {}", f.path(), t.name, dims,
                                  one_row ? "[n_embd] or [1, n_embd]" : "a 2-D matrix");
  }
  m.bytes = f.TensorBytes(t);
  return m;
}

std::string_view QuantName(quant::GgmlType a, quant::GgmlType b, quant::GgmlType c) {
  if (a != b || b != c) return "custom";
  switch (a) {
    case quant::GgmlType::F32: return "f32";
    case quant::GgmlType::F16: return "f16";
    case quant::GgmlType::BF16: return "bf16";
    default: return "custom";
  }
}

Result<format::ExpertTensors> StFfn(const format::SafetensorsFile& f, bool shared) {
  static constexpr std::string_view kProj[3] = {"gate", "up", "down"};
  format::ExpertTensors t;
  for (int p = 0; p < 3; ++p) {
    const std::string hf = std::string(kProj[p]) + "_proj.weight";
    const std::string sh = "shared_expert." + hf;
    const format::SafetensorsTensor* found = nullptr;
    if (shared) {
      TENZRO_TRY(found, FindOne(f, {}, {sh}));
    } else {
      TENZRO_TRY(found, FindOne(f, {kProj[p]}, {hf}, "shared_expert"));
    }
    if (found == nullptr) {
      if (shared) return Error::NotFound("{}: no tensor named *{}", f.path(), sh);
      return Error::NotFound("{}: no {} projection (looked for a tensor named '{}' or ending in '{}')", f.path(),
                             kProj[p], kProj[p], hf);
    }
    TENZRO_TRY(t.proj[p], StMatrix(f, *found));
  }
  auto ok = format::ValidateExpertTensors(t, f.path());
  if (!ok) return ok.error();
  return t;
}

}  // namespace

std::string ExpertFileInfo::formats() const { return Fmt3(types); }

std::string GateFileInfo::formats() const {
  std::string s = fmt::format("router {}", quant::TypeName(router_type));
  if (n_ff_shexp > 0) s += fmt::format(", shared {}", shared_formats);
  if (shared_gated) s += fmt::format(", shared gate {}", quant::TypeName(shared_gate_type));
  return s;
}

bool LooksLikeGguf(ByteSpan data) {
  return data.size() >= 4 && std::memcmp(data.data(), format::kGgufMagic, 4) == 0;
}

Result<std::shared_ptr<const WarmExpert>> DecodeWarmExpert(std::shared_ptr<const Bytes> image, std::string name) {
  if (!image) return Error::InvalidArgument("{}: no image", name);
  TENZRO_TRY(format::DecodedExpertFile d, format::DecodeExpertGguf(ByteSpan(*image), image, name));
  if (d.kind != format::kKindExpert)
    return Error::InvalidArgument("{}: is a {} file, expected an expert (use load-gate for gates)", name, d.kind);
  auto w = std::make_shared<WarmExpert>();
  TENZRO_TRY(w->weights, ToExpert(d.expert, image, name));
  w->info = InfoOf(d, image->size());
  w->image = std::move(image);
  return std::shared_ptr<const WarmExpert>(std::move(w));
}

Result<std::shared_ptr<const GateWeights>> DecodeGate(std::shared_ptr<const Bytes> image, std::string name) {
  if (!image) return Error::InvalidArgument("{}: no image", name);
  TENZRO_TRY(format::DecodedExpertFile d, format::DecodeExpertGguf(ByteSpan(*image), image, name));
  if (d.kind != format::kKindGate)
    return Error::InvalidArgument("{}: is a {} file, expected a gate (use load-expert for experts)", name, d.kind);
  auto g = std::make_shared<GateWeights>();
  const format::GateTensors& t = d.gate;
  TENZRO_TRY(g->router.w, ToWeight(t.router, image, fmt::format("{} router", name)));
  if (t.bias) {
    g->router.selection_bias.resize(t.bias->row_len);
    std::memcpy(g->router.selection_bias.data(), t.bias->bytes.data(), t.bias->row_len * sizeof(float));
  }
  TENZRO_CHECK_OK(g->router.Validate());
  GateFileInfo& info = g->info;
  info.id = d.id;
  info.n_embd = t.router.row_len;
  info.n_expert = static_cast<int>(t.router.rows);
  info.n_expert_used = t.n_expert_used;
  info.router_type = t.router.type;
  info.has_selection_bias = t.bias.has_value();
  info.bytes = image->size();
  if (t.shared) {
    SharedExpertWeights sh;
    TENZRO_TRY(sh.ffn, ToExpert(*t.shared, image, fmt::format("{} shared expert", name)));
    if (t.shared_gate) {
      TENZRO_TRY(WeightMatrix sg, ToWeight(*t.shared_gate, image, fmt::format("{} shared expert gate", name)));
      sh.gate_inp = sg;
      info.shared_gated = true;
      info.shared_gate_type = t.shared_gate->type;
    }
    TENZRO_CHECK_OK(sh.Validate());
    info.n_ff_shexp = t.shared->n_ff();
    quant::GgmlType ty[3] = {t.shared->proj[0].type, t.shared->proj[1].type, t.shared->proj[2].type};
    info.shared_formats = Fmt3(ty);
    g->shared = std::move(sh);
  }
  g->image = std::move(image);
  return std::shared_ptr<const GateWeights>(std::move(g));
}

Result<std::shared_ptr<const WarmExpert>> LoadWarmExpert(const std::string& path) {
  TENZRO_TRY(Bytes data, ReadFile(path, 16ull << 30));
  return DecodeWarmExpert(std::make_shared<const Bytes>(std::move(data)), path);
}

Result<std::shared_ptr<const GateWeights>> LoadGate(const std::string& path) {
  TENZRO_TRY(Bytes data, ReadFile(path, 16ull << 30));
  return DecodeGate(std::make_shared<const Bytes>(std::move(data)), path);
}

Result<ExpertFileInfo> InspectExpertFile(const std::string& path) {
  TENZRO_TRY(std::shared_ptr<MappedFile> map, MappedFile::Open(path));
  TENZRO_TRY(format::DecodedExpertFile d, format::DecodeExpertGguf(map->bytes(), map, path));
  if (d.kind != format::kKindExpert) return Error::InvalidArgument("{}: is a {} file, not an expert", path, d.kind);
  return InfoOf(d, map->size());
}

Result<Bytes> ExpertGgufFromSafetensors(const std::string& path, const format::ExpertIdentity& id) {
  TENZRO_TRY(auto f, format::SafetensorsFile::Open(path));
  TENZRO_TRY(format::ExpertTensors t, StFfn(*f, /*shared=*/false));
  format::ExpertIdentity ident = id;
  ident.quant = std::string(QuantName(t.proj[0].type, t.proj[1].type, t.proj[2].type));
  return format::EncodeExpertGguf(ident, t);
}

Result<Bytes> GateGgufFromSafetensors(const std::string& path, const format::ExpertIdentity& id, int n_expert_used) {
  TENZRO_TRY(auto f, format::SafetensorsFile::Open(path));
  format::GateTensors g;
  TENZRO_TRY(const format::SafetensorsTensor* r, FindOne(*f, {"weight", "gate.weight"}, {"mlp.gate.weight"}));
  if (r == nullptr)
    return Error::NotFound("{}: no router tensor (looked for 'weight', 'gate.weight' or a name ending in "
                           "'mlp.gate.weight')",
                           path);
  TENZRO_TRY(g.router, StMatrix(*f, *r));
  g.n_expert_used = n_expert_used > 0 ? n_expert_used : static_cast<int>(std::min<int64_t>(8, g.router.rows));
  format::ExpertIdentity ident = id;
  ident.quant = std::string(QuantName(g.router.type, g.router.type, g.router.type));
  TENZRO_TRY(const format::SafetensorsTensor* sg, FindOne(*f, {}, {"shared_expert.gate_proj.weight"}));
  if (sg != nullptr) {
    TENZRO_TRY(format::ExpertTensors sh, StFfn(*f, /*shared=*/true));
    g.shared = sh;
    ident.quant = std::string(QuantName(sh.proj[0].type, sh.proj[1].type, sh.proj[2].type));
    TENZRO_TRY(const format::SafetensorsTensor* sgate, FindOne(*f, {}, {"shared_expert_gate.weight"}));
    if (sgate != nullptr) {
      TENZRO_TRY(Matrix m, StMatrix(*f, *sgate, /*one_row=*/true));
      g.shared_gate = m;
    }
  }
  if (g.n_expert_used < 1 || g.n_expert_used > g.router.rows)
    return Error::InvalidArgument("{}: top-k {} is not in [1, {}] (n_expert)", path, g.n_expert_used, g.router.rows);
  return format::EncodeGateGguf(ident, g);
}

}  // namespace tenzro::runtime
