#include "prepare/spine.h"

#include <unistd.h>

#include <filesystem>
#include <random>

#include "blob/blob_uri.h"
#include "format/gguf_format.h"
#include "prepare/quant_plan.h"
#include "prepare/slicer.h"

namespace tenzro::prepare {
namespace {

using nlohmann::json;

bool Contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// The single target type of a spine preset; nullopt for "none".
Result<std::optional<quant::GgmlType>> SpineTarget(std::string_view quant) {
  if (quant.empty() || quant == "none") return std::optional<quant::GgmlType>();
  std::string lower(quant);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "q4_k_m")
    return Error::InvalidArgument(
        "--quant q4_k_m is a rule for expert FFNs; for the spine give one type: none, f32, f16, bf16, q8_0, q4_k, "
        "q5_k, q6_k");
  auto plan = QuantPlan::FromPreset(lower);
  if (!plan) return Error::InvalidArgument("--quant '{}': expected none, f32, f16, bf16, q8_0, q4_k, q5_k, q6_k", quant);
  return std::optional<quant::GgmlType>(plan->TypeFor(format::Projection::kGate, 0, 1));
}

bool IsSplitKey(std::string_view key) { return key.starts_with("split."); }

// Adds `t` to the spine, converted to `target` when it applies and fits.
Result<void> AddTensor(const format::TensorRef& t, std::optional<quant::GgmlType> target, int threads, Spine* s) {
  s->kept_source_bytes += t.bytes.size();
  if (target && *target != t.type && IsRequantizable(t) && quant::RowBytes(*target, t.ne[0]) &&
      quant::FindTraits(t.type) != nullptr && quant::FindTraits(t.type)->to_float != nullptr) {
    format::ExpertSlab slab{t.name, t.file, t.type, t.ne[0], t.ne[1], t.file_offset, t.bytes};
    TENZRO_TRY(SlicedMatrix m, ConvertSlab(slab, *target, threads, "spine tensor"));
    s->owned.push_back(std::move(m.owned));
    s->converted.push_back(t.name);
    return s->writer.AddTensor(t.name, *target, t.ne, s->owned.back());
  }
  return s->writer.AddTensor(t.name, t.type, t.ne, t.bytes);
}

uint64_t FileBytes(const std::vector<std::string>& files) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& f : files) total += std::filesystem::file_size(f, ec);
  return total;
}

}  // namespace

bool IsRoutedExpertTensor(std::string_view name) {
  if (!name.starts_with("blk.")) return false;
  size_t dot = name.find('.', 4);
  if (dot == std::string_view::npos || dot == 4) return false;
  for (size_t i = 4; i < dot; ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  std::string_view rest = name.substr(dot + 1);
  std::string_view base = rest.substr(0, rest.find('.'));
  return Contains(base, "_exps");
}

bool IsRequantizable(const format::TensorRef& t) {
  const std::string_view n = t.name;
  if (t.ne.size() != 2 || !n.ends_with(".weight")) return false;
  for (std::string_view keep : {"norm", "ffn_gate_inp", "ssm_conv1d", "ssm_dt", "ssm_x."})
    if (Contains(n, keep)) return false;
  return true;
}

Result<Spine> BuildSpine(const format::Checkpoint& ckpt, const format::GgufFile& gguf, const SpineOptions& options) {
  if (ckpt.format() != format::CheckpointFormat::kGguf)
    return Error::Unsupported(
        "{}: the spine blob is a GGUF and needs GGUF tensor names; convert this safetensors checkpoint with "
        "llama.cpp's convert_hf_to_gguf.py first",
        ckpt.files().empty() ? std::string("checkpoint") : ckpt.files().front());
  if (options.model_id.empty()) return Error::InvalidArgument("spine: model id is empty");
  TENZRO_TRY(std::optional<quant::GgmlType> target, SpineTarget(options.quant));

  Spine s{format::GgufWriter(gguf.alignment()), {}, 0, 0, 0, 0, {}};
  for (const auto& [key, value] : gguf.kv()) {
    if (IsSplitKey(key)) continue;  // general.alignment is copied too: it equals the writer's
    s.writer.Set(key, value);
  }
  s.writer.Set(kSpineKey, format::GgufValue::Bool(true));
  s.writer.Set(kSpineModelIdKey, format::GgufValue::Str(options.model_id));
  s.writer.Set(kSpineQuantKey, format::GgufValue::Str(target ? std::string(quant::TypeName(*target)) : "none"));

  s.owned.reserve(ckpt.tensors().size());  // spans into owned stay valid: no reallocation
  for (const format::TensorRef& t : ckpt.tensors()) {
    if (IsRoutedExpertTensor(t.name)) {
      ++s.dropped_tensors;
      s.dropped_bytes += t.bytes.size();
      continue;
    }
    TENZRO_CHECK_OK(AddTensor(t, target, options.threads, &s));
    ++s.kept_tensors;
  }
  if (s.dropped_tensors == 0)
    return Error::NotFound("{}: no routed-expert tensors (blk.N.ffn_*_exps): not an MoE checkpoint, no spine to cut",
                           ckpt.files().front());
  return s;
}

json SpineRequest::ToJson() const {
  return {{"model_id", model_id}, {"checkpoint", checkpoint}, {"quant", quant}, {"threads", threads}};
}

Result<SpineRequest> SpineRequest::FromJson(const json& j) {
  if (!j.is_object()) return Error::InvalidArgument("prepare-dense request: expected a JSON object");
  SpineRequest r;
  for (auto [key, out] : {std::pair{"model_id", &r.model_id}, {"checkpoint", &r.checkpoint}, {"quant", &r.quant}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_string()) return Error::InvalidArgument("prepare-dense request: '{}' must be a string", key);
    *out = j[key].get<std::string>();
  }
  if (r.model_id.empty()) return Error::InvalidArgument("prepare-dense request: missing field 'model_id'");
  if (j.contains("threads")) {
    if (!j["threads"].is_number_integer())
      return Error::InvalidArgument("prepare-dense request: 'threads' must be an integer");
    r.threads = std::clamp(j["threads"].get<int>(), 0, 256);
  }
  TENZRO_CHECK_OK(SpineTarget(r.quant));
  return r;
}

Result<json> RunPrepareDense(const SpineRequest& req, blob::BlobStore& store, const ProgressFn& progress) {
  auto step = [&](int done, const std::string& msg) {
    if (progress) progress(done, 3, msg);
  };
  TENZRO_TRY(auto ckpt, format::Checkpoint::Open(req.checkpoint));
  if (ckpt->format() != format::CheckpointFormat::kGguf)
    return Error::Unsupported("{}: prepare-dense needs a GGUF checkpoint (safetensors names are not converted)",
                              req.checkpoint);
  // The key/values live in the single file, or in a split set's part 1.
  TENZRO_TRY(auto gguf, format::GgufFile::Open(ckpt->files().front()));
  step(0, "checkpoint opened");
  TENZRO_TRY(Spine spine, BuildSpine(*ckpt, *gguf, {req.model_id, req.quant, req.threads}));
  step(1, fmt::format("spine built: {} tensors kept, {} expert tensors dropped", spine.kept_tensors,
                      spine.dropped_tensors));
  std::random_device rd;
  const std::string staging = fmt::format("{}/staging-spine-{}-{:08x}.gguf", store.dir(), getpid(), rd());
  TENZRO_CHECK_OK(spine.writer.Write(staging));
  step(2, "spine written");
  auto info = store.PutFile(staging);
  std::error_code ec;
  std::filesystem::remove(staging, ec);
  if (!info) return info.error();
  step(3, "spine published");
  const std::string quant_name = (req.quant.empty() || req.quant == "none") ? "none" : req.quant;
  return json{{"model_id", req.model_id},
              {"checkpoint", req.checkpoint},
              {"architecture", ckpt->architecture()},
              {"uri", blob::FormatBlobUri(info->hash)},
              {"hash", info->hash.ToHex()},
              {"bytes", info->size},
              {"checkpoint_bytes", FileBytes(ckpt->files())},
              {"expert_bytes", spine.dropped_bytes},
              {"tensors", spine.kept_tensors},
              {"dropped_tensors", spine.dropped_tensors},
              {"quant", quant_name},
              {"converted", spine.converted}};
}

}  // namespace tenzro::prepare
