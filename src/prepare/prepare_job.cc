#include "prepare/prepare_job.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "blob/blob_uri.h"
#include "format/checkpoint.h"
#include "format/expert_gguf.h"
#include "prepare/slicer.h"

namespace tenzro::prepare {
namespace {

using nlohmann::json;

Result<int> ParseIndex(std::string_view s, std::string_view whole) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < 0)
    return Error::InvalidArgument("--experts '{}': '{}' is not an expert index", whole, s);
  return v;
}

json SourceJson(const SliceSource& s) {
  return {{"file", s.file},
          {"tensor", s.tensor},
          {"offset", s.offset},
          {"bytes", s.bytes},
          {"format", std::string(quant::TypeName(s.type))},
          {"byte_range_copy", s.copied}};
}

json MatrixJson(const SlicedMatrix& m) {
  return {{"format", std::string(quant::TypeName(m.matrix.type))},
          {"shape", {m.matrix.row_len, m.matrix.rows}},
          {"bytes", m.matrix.bytes.size()},
          {"source", SourceJson(m.source)}};
}

Result<json> Publish(blob::BlobStore& store, const Bytes& image) {
  TENZRO_TRY(blob::BlobInfo info, store.Put(image));
  return json{{"uri", blob::FormatBlobUri(info.hash)}, {"hash", info.hash.ToHex()}, {"bytes", info.size}};
}

Result<json> PrepareOneExpert(const format::Checkpoint& ckpt, const PrepareRequest& req, const QuantPlan& plan,
                              int n_layer, int expert, blob::BlobStore& store) {
  std::array<SlicedMatrix, 3> parts;
  format::ExpertTensors tensors;
  json projections = json::object();
  for (format::Projection p : format::kProjections) {
    int i = static_cast<int>(p);
    std::string what = fmt::format("layer {} expert {} {}", req.layer, expert, format::ProjectionName(p));
    TENZRO_TRY(format::ExpertSlab slab, ckpt.Expert(req.layer, expert, p));
    TENZRO_TRY(parts[i], ConvertSlab(slab, plan.TypeFor(p, req.layer, n_layer), req.threads, what));
    tensors.proj[i] = parts[i].matrix;
    projections[std::string(format::ProjectionName(p))] = MatrixJson(parts[i]);
  }
  format::ExpertIdentity id{ckpt.architecture(), req.model_id, req.layer, expert, plan.name()};
  TENZRO_TRY(Bytes image, format::EncodeExpertGguf(id, tensors));
  TENZRO_TRY(json out, Publish(store, image));
  out["expert"] = expert;
  out["projections"] = std::move(projections);
  return out;
}

Result<format::Matrix> TensorMatrix(const format::TensorRef& t, std::string_view what) {
  if (t.ne.empty() || t.ne.size() > 2) return Error::Unsupported("{} ({}): expected a 1-D or 2-D tensor", what, t.name);
  return format::Matrix{t.type, t.ne[0], t.ne.size() == 2 ? t.ne[1] : 1, t.bytes};
}

Result<json> PrepareGate(const format::Checkpoint& ckpt, const PrepareRequest& req, const QuantPlan& plan,
                         int n_layer, blob::BlobStore& store) {
  format::GateTensors g;
  json out = json::object();
  TENZRO_TRY(format::TensorRef router, ckpt.Router(req.layer));
  TENZRO_TRY(g.router, TensorMatrix(router, "router"));
  out["router"] = {{"tensor", router.name}, {"format", std::string(quant::TypeName(router.type))},
                   {"shape", router.ne}, {"file", router.file}, {"offset", router.file_offset}};
  std::string arch = ckpt.architecture();
  g.n_expert_used = static_cast<int>(ckpt.GetInt(arch + ".expert_used_count")
                                         .value_or(ckpt.GetInt("num_experts_per_tok").value_or(1)));
  if (const format::TensorRef* bias = ckpt.FindTensor(fmt::format("blk.{}.exp_probs_b.bias", req.layer))) {
    TENZRO_TRY(g.bias, TensorMatrix(*bias, "selection bias"));
  }
  std::array<SlicedMatrix, 3> parts;
  if (ckpt.SharedExpert(req.layer, format::Projection::kGate)) {
    format::ExpertTensors sh;
    json projections = json::object();
    for (format::Projection p : format::kProjections) {
      int i = static_cast<int>(p);
      std::string what = fmt::format("layer {} shared expert {}", req.layer, format::ProjectionName(p));
      TENZRO_TRY(format::ExpertSlab slab, ckpt.SharedExpert(req.layer, p));
      TENZRO_TRY(parts[i], ConvertSlab(slab, plan.TypeFor(p, req.layer, n_layer), req.threads, what));
      sh.proj[i] = parts[i].matrix;
      projections[std::string(format::ProjectionName(p))] = MatrixJson(parts[i]);
    }
    g.shared = sh;
    out["shared_expert"] = std::move(projections);
    if (auto sg = ckpt.SharedExpertGate(req.layer)) {
      TENZRO_TRY(g.shared_gate, TensorMatrix(*sg, "shared expert gate"));
      out["shared_expert_gate"] = {{"tensor", sg->name}, {"format", std::string(quant::TypeName(sg->type))}};
    }
  }
  format::ExpertIdentity id{arch, req.model_id, req.layer, 0, plan.name()};
  TENZRO_TRY(Bytes image, format::EncodeGateGguf(id, g));
  TENZRO_TRY(json pub, Publish(store, image));
  out.update(pub);
  return out;
}

}  // namespace

json PrepareRequest::ToJson() const {
  return {{"model_id", model_id}, {"checkpoint", checkpoint}, {"layer", layer},   {"experts", experts},
          {"gate", gate},         {"quant", quant},           {"quant_json", quant_json}, {"threads", threads}};
}

Result<PrepareRequest> PrepareRequest::FromJson(const json& j) {
  if (!j.is_object()) return Error::InvalidArgument("prepare request: expected a JSON object");
  PrepareRequest r;
  auto str = [&](const char* key, std::string* out, bool required) -> Result<void> {
    if (!j.contains(key)) {
      if (required) return Error::InvalidArgument("prepare request: missing field '{}'", key);
      return Ok();
    }
    if (!j[key].is_string()) return Error::InvalidArgument("prepare request: '{}' must be a string", key);
    *out = j[key].get<std::string>();
    return Ok();
  };
  TENZRO_CHECK_OK(str("model_id", &r.model_id, true));
  TENZRO_CHECK_OK(str("checkpoint", &r.checkpoint, false));
  TENZRO_CHECK_OK(str("experts", &r.experts, false));
  TENZRO_CHECK_OK(str("quant", &r.quant, false));
  TENZRO_CHECK_OK(str("quant_json", &r.quant_json, false));
  if (!j.contains("layer") || !j["layer"].is_number_integer() || j["layer"].get<int64_t>() < 0 ||
      j["layer"].get<int64_t>() > 100000)
    return Error::InvalidArgument("prepare request: 'layer' must be a non-negative integer");
  r.layer = j["layer"].get<int>();
  if (j.contains("gate")) {
    if (!j["gate"].is_boolean()) return Error::InvalidArgument("prepare request: 'gate' must be a boolean");
    r.gate = j["gate"].get<bool>();
  }
  if (j.contains("threads")) {
    if (!j["threads"].is_number_integer()) return Error::InvalidArgument("prepare request: 'threads' must be an integer");
    r.threads = std::clamp(j["threads"].get<int>(), 0, 256);
  }
  TENZRO_CHECK_OK(r.Plan());
  return r;
}

Result<QuantPlan> PrepareRequest::Plan() const {
  if (!quant.empty() && !quant_json.empty())
    return Error::InvalidArgument("give either --quant or --quant-json, not both");
  if (!quant.empty()) return QuantPlan::FromPreset(quant);
  if (!quant_json.empty()) return QuantPlan::FromJson(quant_json);
  return QuantPlan();
}

Result<std::vector<int>> ParseExpertList(std::string_view text, int n_expert) {
  std::set<int> out;
  if (text == "all") {
    for (int e = 0; e < n_expert; ++e) out.insert(e);
    return std::vector<int>(out.begin(), out.end());
  }
  if (text.empty()) return Error::InvalidArgument("--experts is empty (give e.g. 1,2,5 or 0-7 or all)");
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    size_t dash = item.find('-');
    int lo, hi;
    if (dash == std::string_view::npos) {
      TENZRO_TRY(lo, ParseIndex(item, text));
      hi = lo;
    } else {
      TENZRO_TRY(lo, ParseIndex(item.substr(0, dash), text));
      TENZRO_TRY(hi, ParseIndex(item.substr(dash + 1), text));
      if (hi < lo) return Error::InvalidArgument("--experts '{}': range {}-{} is backwards", text, lo, hi);
    }
    if (hi >= n_expert)
      return Error::InvalidArgument("--experts '{}': expert {} out of range (the layer has {} experts: 0-{})", text, hi,
                                    n_expert, n_expert - 1);
    for (int e = lo; e <= hi; ++e) out.insert(e);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return std::vector<int>(out.begin(), out.end());
}

Result<json> RunPrepare(const PrepareRequest& req, blob::BlobStore& store, const ProgressFn& progress) {
  TENZRO_TRY(QuantPlan plan, req.Plan());
  TENZRO_TRY(auto ckpt, format::Checkpoint::Open(req.checkpoint));
  const int n_layer = ModelLayerCount(*ckpt);
  if (req.layer < 0 || req.layer >= ckpt->n_layers())
    return Error::InvalidArgument("layer {} out of range: {} has {} layers (0-{})", req.layer, req.checkpoint,
                                  ckpt->n_layers(), ckpt->n_layers() - 1);
  const int n_expert = ckpt->n_experts(req.layer);
  if (n_expert == 0) return Error::NotFound("layer {} of {} has no expert tensors (dense layer)", req.layer, req.checkpoint);
  TENZRO_TRY(std::vector<int> experts, ParseExpertList(req.experts, n_expert));
  const int total = static_cast<int>(experts.size()) + (req.gate ? 1 : 0);
  json result = {{"model_id", req.model_id},
                 {"checkpoint", req.checkpoint},
                 {"architecture", ckpt->architecture()},
                 {"layer", req.layer},
                 {"n_layer", n_layer},
                 {"n_expert", n_expert},
                 {"quant", json::parse(plan.ToJson())},
                 {"experts", json::array()}};
  int done = 0;
  for (int e : experts) {
    TENZRO_TRY(json one, PrepareOneExpert(*ckpt, req, plan, n_layer, e, store));
    result["experts"].push_back(std::move(one));
    ++done;
    if (progress) progress(done, total, fmt::format("expert {} published", e));
  }
  if (req.gate) {
    TENZRO_TRY(json g, PrepareGate(*ckpt, req, plan, n_layer, store));
    result["gate"] = std::move(g);
    ++done;
    if (progress) progress(done, total, "gate published");
  }
  return result;
}

}  // namespace tenzro::prepare
