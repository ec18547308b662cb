#include "holder/expert_runtime.h"

#include <filesystem>

#include "blob/blake3.h"
#include "blob/blob_uri.h"
#include "catalog/catalog.h"
#include "core/cpu.h"
#include "core/file.h"
#include "net/url.h"
#include "runtime/matmul.h"
#include "runtime/parallel.h"

namespace tenzro::holder {
namespace {

using nlohmann::json;
using runtime::ExpertKey;

constexpr const char* kGpuLine = "none (no GPU compute backend in this build)";

bool IsBlobRef(std::string_view s) { return s.substr(0, blob::kBlobUriPrefix.size()) == blob::kBlobUriPrefix; }

runtime::RoutingConfig RoutingFromShape(const catalog::ModelShape& s, std::string* name) {
  runtime::RoutingConfig rc;
  rc.top_k = s.n_expert_used;
  rc.norm_topk_prob = s.routing.norm_topk_prob;
  switch (s.routing.kind) {
    case catalog::RoutingKind::kSoftmaxTopkRenorm:
      rc.kind = runtime::RoutingKind::kSoftmaxTopK;
      rc.norm_topk_prob = true;
      break;
    case catalog::RoutingKind::kSoftmaxTopk:
      rc.kind = runtime::RoutingKind::kSoftmaxTopK;
      rc.norm_topk_prob = false;
      break;
    case catalog::RoutingKind::kTopkSoftmax:
      rc.kind = runtime::RoutingKind::kTopKSoftmax;
      break;
    case catalog::RoutingKind::kSigmoidGroupTopk:
      rc.kind = runtime::RoutingKind::kSigmoidGroupTopK;
      rc.n_group = s.routing.n_group;
      rc.topk_group = s.routing.topk_group;
      rc.routed_scaling_factor = static_cast<float>(s.routing.routed_scaling_factor);
      break;
  }
  *name = std::string(catalog::RoutingKindName(s.routing.kind));
  return rc;
}

json CacheCounters(const runtime::ExpertCacheStats& s) {
  return {{"hits", s.hits},
          {"prefetch_waits", s.prefetch_waits},
          {"misses", s.misses},
          {"promotions", s.promotions},
          {"demotions", s.demotions},
          {"prefetches", s.prefetches},
          {"prefetch_skipped", s.prefetch_skipped}};
}

// A readable image of a source file: mapped, or converted bytes.
struct Image {
  std::shared_ptr<const void> owner;
  ByteSpan bytes;
  std::string kind;  // "gguf" | "safetensors" | "blob"
  std::string path;  // source path (blob store data file for blobs)
};

}  // namespace

Result<std::unique_ptr<ExpertRuntime>> ExpertRuntime::Open(ExpertRuntimeOptions options) {
  if (!options.store) return Error::InvalidArgument("expert runtime: no blob store");
  std::unique_ptr<ExpertRuntime> rt(new ExpertRuntime(std::move(options)));
  runtime::ExpertCacheOptions co;
  co.dir = rt->options_.data_dir + "/experts";
  co.budget_bytes = rt->options_.memory_budget;
  co.pin_wait = rt->options_.pin_wait;
  TENZRO_TRY(rt->cache_, runtime::ExpertCache::Open(std::move(co)));
  TENZRO_TRY(int n, rt->cache_->ScanColdTier(&rt->notes_));
  (void)n;
  TENZRO_CHECK_OK(rt->ScanGates());
  return rt;
}

Result<ExpertRuntime::Shape> ExpertRuntime::ResolveModel(const std::string& id) const {
  auto r = catalog::ResolveShape(id, std::nullopt, options_.data_dir);
  if (r) return Shape{std::move(r->shape), std::string(catalog::ShapeSourceName(r->source))};
  if (r.error().code() == ErrorCode::kNotFound && options_.trust) {
    options_.trust->For(id);  // loads configured manifests not loaded yet
    if (auto s = options_.trust->Shape(id)) return Shape{std::move(*s), "manifest"};
  }
  if (r.error().code() == ErrorCode::kNotFound) return Shape{std::nullopt, "file"};
  return r.error();
}

Result<std::string> ExpertRuntime::AcquireBlob(const std::string& text, const std::string& from, json* out,
                                               std::optional<blob::Blake3Hash>* fetched) {
  TENZRO_TRY(blob::BlobUri uri, blob::ParseBlobUri(text));
  if (!options_.store->Has(uri.hash)) {
    std::vector<transfer::BlobSource> named;
    if (!from.empty()) named.push_back({"http", from, ""});
    else if (!uri.Param("http").empty()) named.push_back({"http", uri.Param("http"), ""});
    if (!options_.fetch_blob)
      return Error::NotFound("blob {} is not in this node's store and this runtime fetches nothing",
                             uri.hash.ToHex());
    TENZRO_TRY(transfer::SourcesFetch got, options_.fetch_blob(uri.hash, named));
    // Sources in order; each fetch is verified against the hash, so a bad
    // source costs a retry, never a wrong blob.
    auto name = [](const transfer::BlobSource& s) {
      if (s.kind == "http")
        if (auto ep = net::ParseEndpoint(s.address)) return ep->Url();
      return s.ToString();
    };
    if (got.from) {
      (*out)["fetched_from"] = name(*got.from);
      (*out)["fetched_bytes"] = got.info.size;
      *fetched = uri.hash;
    }
    if (!got.failed.empty()) {
      json attempts = json::array();
      for (const auto& f : got.failed) attempts.push_back({{"peer", name(f.source)}, {"error", f.error.ToString()}});
      (*out)["failed_providers"] = attempts;
    }
  }
  (*out)["uri"] = blob::FormatBlobUri(uri.hash);
  return options_.store->DataPath(uri.hash);
}

Result<json> ExpertRuntime::DropRefusedFetch(Result<json> r, const std::optional<blob::Blake3Hash>& fetched) {
  if (r || !fetched) return r;
  auto removed = options_.store->Remove(*fetched);
  return Error(r.error().code(),
               fmt::format("{} (blob {}, fetched for this, {})", r.error().message(), fetched->ToHex(),
                           removed ? "was deleted again" : "could not be deleted: " + removed.error().ToString()));
}

Result<json> ExpertRuntime::LoadExpert(std::string_view model, int layer, int expert, const LoadSource& src) {
  TENZRO_TRY(std::string id, catalog::NormalizeModelId(model));
  if (layer < 0 || expert < 0) return Error::InvalidArgument("layer {} / expert {} must not be negative", layer, expert);
  std::optional<blob::Blake3Hash> fetched;
  return DropRefusedFetch(LoadExpertFrom(id, layer, expert, src, &fetched), fetched);
}

Result<json> ExpertRuntime::LoadExpertFrom(const std::string& id, int layer, int expert, const LoadSource& src,
                                           std::optional<blob::Blake3Hash>* fetched) {
  TENZRO_TRY(Shape ms, ResolveModel(id));
  const ExpertKey key{id, layer, expert};
  json out = {{"model", id}, {"layer", layer}, {"expert", expert}, {"kind", "expert"}};

  // 1. The bytes, as a mini-GGUF image.
  Image img;
  if (IsBlobRef(src.file)) {
    // A blob the model's trusted manifest does not list is refused before
    // a byte of it is fetched.
    TENZRO_TRY(blob::BlobUri uri, blob::ParseBlobUri(src.file));
    if (options_.trust) TENZRO_CHECK_OK(options_.trust->CheckExpert(id, layer, expert, uri.hash.ToHex()));
    TENZRO_TRY(img.path, AcquireBlob(src.file, src.from, &out, fetched));
    img.kind = "blob";
  } else {
    if (src.file.empty() || src.file[0] != '/')
      return Error::InvalidArgument("file '{}' must be an absolute path or a tenzro://blob/ URI", src.file);
    img.path = src.file;
  }
  TENZRO_TRY(std::shared_ptr<MappedFile> map, MappedFile::Open(img.path));
  if (runtime::LooksLikeGguf(map->bytes())) {
    img.owner = map;
    img.bytes = map->bytes();
    if (img.kind.empty()) img.kind = "gguf";
  } else if (img.kind == "blob") {
    return Error::InvalidArgument("blob {} is not an expert mini-GGUF", src.file);
  } else {
    format::ExpertIdentity ident{ms.shape ? ms.shape->architecture : "", id, layer, expert, ""};
    TENZRO_TRY(Bytes conv, runtime::ExpertGgufFromSafetensors(img.path, ident));
    auto owned = std::make_shared<const Bytes>(std::move(conv));
    img.bytes = ByteSpan(*owned);
    img.owner = owned;
    img.kind = "safetensors";
  }
  out["source"] = img.kind;
  // A file (operator's path) is held to the manifest too: its mini-GGUF
  // must be byte for byte a blob the manifest lists.
  if (options_.trust && img.kind != "blob")
    TENZRO_CHECK_OK(options_.trust->CheckExpert(id, layer, expert, blob::Blake3(img.bytes).ToHex()));

  // 2. Checks: identity, formats, shape.
  TENZRO_TRY(format::DecodedExpertFile d, format::DecodeExpertGguf(img.bytes, img.owner, src.file));
  if (d.kind != format::kKindExpert)
    return Error::InvalidArgument("{} is a {} file, not an expert (use `tenzro moe load-gate`)", src.file, d.kind);
  if (d.id.model_id != id || d.id.layer != layer || d.id.expert != expert)
    return Error::InvalidArgument("{} holds model '{}' layer {} expert {}, not model '{}' layer {} expert {}",
                                  src.file, d.id.model_id, d.id.layer, d.id.expert, id, layer, expert);
  static constexpr const char* kProj[3] = {"gate", "up", "down"};
  for (int p = 0; p < 3; ++p)
    if (!runtime::IsComputeType(d.expert.proj[p].type))
      return Error::Unsupported("{}: {} projection format {} has no compute kernel in this build", src.file,
                                kProj[p], quant::TypeName(d.expert.proj[p].type));
  const int64_t n_embd = d.expert.n_embd(), n_ff = d.expert.n_ff();
  if (ms.shape) {
    const catalog::ModelShape& s = *ms.shape;
    if (layer >= s.n_layer) return Error::InvalidArgument("model '{}' has {} layers; layer {} does not exist", id, s.n_layer, layer);
    const catalog::LayerShape& ls = s.layers[layer];
    if (!ls.moe) return Error::InvalidArgument("layer {} of model '{}' is dense (no experts)", layer, id);
    if (expert >= ls.n_expert)
      return Error::InvalidArgument("layer {} of model '{}' has {} experts; expert {} does not exist", layer, id,
                                    ls.n_expert, expert);
    if (n_embd != s.n_embd || n_ff != s.n_ff_exp)
      return Error::InvalidArgument(
          "{}: expert shape mismatch for model '{}': expected n_embd {} and n_ff {} (gate/up [{}, {}], down "
          "[{}, {}] in PyTorch order), got n_embd {} and n_ff {}",
          src.file, id, s.n_embd, s.n_ff_exp, s.n_ff_exp, s.n_embd, s.n_embd, s.n_ff_exp, n_embd, n_ff);
  } else {
    // Unknown model: consistent with what is loaded for it already.
    for (const auto& e : cache_->List())
      if (e.key.model == id && (e.n_embd != n_embd || e.n_ff != n_ff))
        return Error::InvalidArgument(
            "{}: expert shape n_embd {} n_ff {} differs from expert {} already loaded for model '{}' (n_embd {} "
            "n_ff {})",
            src.file, n_embd, n_ff, e.key.ToString(), id, e.n_embd, e.n_ff);
    std::lock_guard<std::mutex> lock(gates_mu_);
    auto it = gates_.find({id, layer});
    if (it != gates_.end()) {
      const auto& gi = it->second.weights->info;
      if (gi.n_embd != n_embd || expert >= gi.n_expert)
        return Error::InvalidArgument("{}: expert {} with n_embd {} does not fit the loaded gate of layer {} ({} "
                                      "experts, n_embd {})",
                                      src.file, expert, n_embd, layer, gi.n_expert, gi.n_embd);
    }
    out["note"] = fmt::format(
        "model '{}' is not in the catalog or the built-in table: accepted the shape from the file (n_embd {}, "
        "n_ff {})",
        id, n_embd, n_ff);
  }
  out["shape_source"] = ms.source;

  // 3. Into the cache: blobs are linked (immutable), other sources copied.
  // Every expert held is also a blob of this node's store, so peers can
  // fetch it from this node (the swarm announces it as provided).
  runtime::ExpertEntryInfo info;
  std::string blob_hash;
  if (img.kind == "blob") {
    TENZRO_TRY(info, cache_->PutFile(key, img.path));
    blob_hash = blob::ParseBlobUri(src.file)->hash.ToHex();
  } else {
    TENZRO_TRY(blob::BlobInfo bi, options_.store->Put(img.bytes));
    TENZRO_TRY(info, cache_->PutFile(key, options_.store->DataPath(bi.hash)));
    blob_hash = bi.hash.ToHex();
  }
  {
    std::lock_guard<std::mutex> lock(gates_mu_);
    hashes_[key] = blob_hash;
  }
  out["blob"] = blob_hash;
  out["tier"] = std::string(runtime::TierName(info.tier));
  out["bytes"] = info.bytes;
  out["formats"] = info.formats;
  out["n_embd"] = n_embd;
  out["n_ff"] = n_ff;
  out["path"] = info.path;
  if (options_.on_change) options_.on_change();
  return out;
}

Result<ExpertRuntime::Gate> ExpertRuntime::MakeGate(const std::string& id,
                                                    std::shared_ptr<const runtime::GateWeights> g,
                                                    const Shape& s) const {
  Gate gate;
  if (s.shape) {
    gate.routing = RoutingFromShape(*s.shape, &gate.routing_name);
  } else {
    gate.routing.kind = runtime::RoutingKind::kSoftmaxTopK;
    gate.routing.top_k = g->info.n_expert_used;
    gate.routing.norm_topk_prob = true;
    gate.routing_name = std::string(catalog::RoutingKindName(catalog::RoutingKind::kSoftmaxTopkRenorm));
  }
  if (gate.routing.top_k < 1 || gate.routing.top_k > g->info.n_expert)
    return Error::InvalidArgument("model '{}': top-k {} does not fit {} experts", id, gate.routing.top_k,
                                  g->info.n_expert);
  gate.shape_source = s.source;
  gate.weights = std::move(g);
  return gate;
}

Result<json> ExpertRuntime::LoadGate(std::string_view model, int layer, const LoadSource& src) {
  TENZRO_TRY(std::string id, catalog::NormalizeModelId(model));
  if (layer < 0) return Error::InvalidArgument("layer {} must not be negative", layer);
  std::optional<blob::Blake3Hash> fetched;
  return DropRefusedFetch(LoadGateFrom(id, layer, src, &fetched), fetched);
}

Result<json> ExpertRuntime::LoadGateFrom(const std::string& id, int layer, const LoadSource& src,
                                         std::optional<blob::Blake3Hash>* fetched) {
  TENZRO_TRY(Shape ms, ResolveModel(id));
  json out = {{"model", id}, {"layer", layer}, {"kind", "gate"}};
  std::string path = src.file;
  std::string kind;
  if (IsBlobRef(src.file)) {
    TENZRO_TRY(blob::BlobUri uri, blob::ParseBlobUri(src.file));
    if (options_.trust) TENZRO_CHECK_OK(options_.trust->CheckGate(id, layer, uri.hash.ToHex()));
    TENZRO_TRY(path, AcquireBlob(src.file, src.from, &out, fetched));
    kind = "blob";
  } else if (src.file.empty() || src.file[0] != '/') {
    return Error::InvalidArgument("file '{}' must be an absolute path or a tenzro://blob/ URI", src.file);
  }
  TENZRO_TRY(Bytes raw, ReadFile(path, 4ull << 30));
  if (runtime::LooksLikeGguf(ByteSpan(raw))) {
    if (kind.empty()) kind = "gguf";
  } else if (kind == "blob") {
    return Error::InvalidArgument("blob {} is not a gate mini-GGUF", src.file);
  } else {
    format::ExpertIdentity ident{ms.shape ? ms.shape->architecture : "", id, layer, 0, ""};
    TENZRO_TRY(raw, runtime::GateGgufFromSafetensors(path, ident, ms.shape ? ms.shape->n_expert_used : 0));
    kind = "safetensors";
  }
  out["source"] = kind;
  if (options_.trust && kind != "blob")
    TENZRO_CHECK_OK(options_.trust->CheckGate(id, layer, blob::Blake3(ByteSpan(raw)).ToHex()));
  auto image = std::make_shared<const Bytes>(std::move(raw));
  TENZRO_TRY(std::shared_ptr<const runtime::GateWeights> g, runtime::DecodeGate(image, src.file));
  const runtime::GateFileInfo& gi = g->info;
  if (kind != "safetensors" && (gi.id.model_id != id || gi.id.layer != layer))
    return Error::InvalidArgument("{} holds the gate of model '{}' layer {}, not model '{}' layer {}", src.file,
                                  gi.id.model_id, gi.id.layer, id, layer);
  if (ms.shape) {
    const catalog::ModelShape& s = *ms.shape;
    if (layer >= s.n_layer) return Error::InvalidArgument("model '{}' has {} layers; layer {} does not exist", id, s.n_layer, layer);
    const catalog::LayerShape& ls = s.layers[layer];
    if (!ls.moe) return Error::InvalidArgument("layer {} of model '{}' is dense (no router)", layer, id);
    if (gi.n_expert != ls.n_expert || gi.n_embd != s.n_embd)
      return Error::InvalidArgument(
          "{}: router shape mismatch for model '{}' layer {}: expected [{}, {}] (n_expert, n_embd), got [{}, {}]",
          src.file, id, layer, ls.n_expert, s.n_embd, gi.n_expert, gi.n_embd);
    if (gi.n_ff_shexp > 0 && s.n_ff_shexp > 0 && gi.n_ff_shexp != s.n_ff_shexp)
      return Error::InvalidArgument("{}: shared expert n_ff is {}, model '{}' expects {}", src.file, gi.n_ff_shexp,
                                    id, s.n_ff_shexp);
  } else {
    for (const auto& e : cache_->List())
      if (e.key.model == id && e.key.layer == layer && (e.n_embd != gi.n_embd || e.key.expert >= gi.n_expert))
        return Error::InvalidArgument("{}: router [{}, {}] does not fit expert {} already loaded (n_embd {})",
                                      src.file, gi.n_expert, gi.n_embd, e.key.ToString(), e.n_embd);
    out["note"] = fmt::format(
        "model '{}' is not in the catalog or the built-in table: accepted the shape from the file ({} experts, "
        "top-{}, n_embd {}, routing softmax-topk-renorm)",
        id, gi.n_expert, gi.n_expert_used, gi.n_embd);
  }
  TENZRO_TRY(Gate gate, MakeGate(id, g, ms));
  // Cold copy for restarts, then publish.
  TENZRO_TRY(std::string epath, cache_->ColdPath(ExpertKey{id, layer, 0}));
  gate.path = epath.substr(0, epath.rfind('/')) + "/gate.gguf";
  TENZRO_CHECK_OK(MakeDirs(gate.path.substr(0, gate.path.rfind('/'))));
  TENZRO_CHECK_OK(WriteFileAtomic(gate.path, ByteSpan(*image)));
  TENZRO_TRY(blob::BlobInfo gate_blob, options_.store->Put(ByteSpan(*image)));
  gate.blob_hash = gate_blob.hash.ToHex();
  out["blob"] = gate.blob_hash;
  out["shape_source"] = ms.source;
  out["tier"] = "Warm";
  out["bytes"] = gi.bytes;
  out["formats"] = gi.formats();
  out["n_expert"] = gi.n_expert;
  out["n_expert_used"] = gate.routing.top_k;
  out["n_embd"] = gi.n_embd;
  out["routing"] = gate.routing_name;
  out["shared_expert"] = gi.n_ff_shexp > 0;
  out["shared_expert_gated"] = gi.shared_gated;
  out["path"] = gate.path;
  {
    std::lock_guard<std::mutex> lock(gates_mu_);
    gates_[{id, layer}] = std::move(gate);
  }
  if (options_.on_change) options_.on_change();
  return out;
}

std::vector<ExpertRuntime::Holding> ExpertRuntime::Holdings() {
  std::vector<Holding> out;
  for (const auto& e : cache_->List()) {
    if (e.loading) continue;
    Holding h{e.key.model, e.key.layer, e.key.expert, e.formats, e.tier == runtime::Tier::kWarm, {}};
    {
      std::lock_guard<std::mutex> lock(gates_mu_);
      auto it = hashes_.find(e.key);
      if (it != hashes_.end()) h.blob_hash = it->second;
    }
    if (h.blob_hash.empty() && !e.path.empty()) {
      // Registered on restart: hash the cold file once (it is the blob).
      if (auto bi = options_.store->PutFile(e.path); bi) {
        h.blob_hash = bi->hash.ToHex();
        std::lock_guard<std::mutex> lock(gates_mu_);
        hashes_[e.key] = h.blob_hash;
      }
    }
    out.push_back(std::move(h));
  }
  std::lock_guard<std::mutex> lock(gates_mu_);
  for (auto& [k, g] : gates_) {
    if (g.blob_hash.empty() && !g.path.empty()) {
      if (auto bi = options_.store->PutFile(g.path); bi) g.blob_hash = bi->hash.ToHex();
    }
    out.push_back(Holding{k.first, k.second, -1, g.weights->info.formats(), true, g.blob_hash});
  }
  return out;
}

Result<void> ExpertRuntime::ScanGates() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& md : fs::directory_iterator(cache_->dir(), ec)) {
    if (!md.is_directory(ec)) continue;
    const std::string model = md.path().filename().string();
    for (const auto& ld : fs::directory_iterator(md.path(), ec)) {
      const std::string gpath = ld.path().string() + "/gate.gguf";
      if (!ld.is_directory(ec) || !PathExists(gpath)) continue;
      auto g = runtime::LoadGate(gpath);
      auto layer_ok = catalog::NormalizeModelId(model);
      if (!g || !layer_ok) {
        notes_.push_back(g ? layer_ok.error().ToString() : g.error().ToString());
        continue;
      }
      const int layer = (*g)->info.id.layer;
      auto ms = ResolveModel(model);
      if (!ms) {
        notes_.push_back(ms.error().ToString());
        continue;
      }
      auto gate = MakeGate(model, *g, *ms);
      if (!gate) {
        notes_.push_back(gate.error().ToString());
        continue;
      }
      gate->path = gpath;
      std::lock_guard<std::mutex> lock(gates_mu_);
      gates_[{model, layer}] = std::move(*gate);
    }
  }
  return Ok();
}

json ExpertRuntime::Status() const {
  const runtime::ExpertCacheStats st = cache_->stats();
  json experts = json::array();
  for (const auto& e : cache_->List())
    experts.push_back({{"model", e.key.model},
                       {"layer", e.key.layer},
                       {"expert", e.key.expert},
                       {"tier", std::string(runtime::TierName(e.tier))},
                       {"loading", e.loading},
                       {"bytes", e.bytes},
                       {"formats", e.formats},
                       {"n_embd", e.n_embd},
                       {"n_ff", e.n_ff},
                       {"hits", e.hits},
                       {"pins", e.pins},
                       {"path", e.path}});
  json gates = json::array();
  uint64_t gate_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(gates_mu_);
    for (const auto& [k, g] : gates_) {
      const auto& gi = g.weights->info;
      gate_bytes += gi.bytes;
      gates.push_back({{"model", k.first},
                       {"layer", k.second},
                       {"tier", "Warm"},
                       {"bytes", gi.bytes},
                       {"formats", gi.formats()},
                       {"n_expert", gi.n_expert},
                       {"n_expert_used", g.routing.top_k},
                       {"n_embd", gi.n_embd},
                       {"routing", g.routing_name},
                       {"shared_expert", gi.n_ff_shexp > 0},
                       {"shape_source", g.shape_source},
                       {"path", g.path}});
    }
  }
  const runtime::KernelIsa isa = runtime::BestKernelIsa();
  return {{"memory",
           {{"budget_bytes", st.budget_bytes},
            {"budget", st.budget_bytes == 0 ? std::string("unlimited") : FormatBytes(st.budget_bytes)},
            {"warm_bytes", st.warm_bytes},
            {"pinned_bytes", st.pinned_bytes},
            {"max_warm_bytes", st.max_warm_bytes},
            {"cold_bytes", st.cold_bytes},
            {"gate_bytes", gate_bytes},
            {"experts", st.n_experts},
            {"warm_experts", st.n_warm}}},
          {"counters", CacheCounters(st)},
          {"experts", experts},
          {"gates", gates},
          {"compute",
           {{"backend", "cpu"},
            {"isa", runtime::KernelIsaName(isa)},
            {"cpu_features", GetCpuFeatures().ToString()},
            {"threads", runtime::ParallelWidth(options_.compute_pool)},
            {"gpu", kGpuLine}}},
          {"restart_notes", notes_}};
}

Result<ExpertRuntime::Gate> ExpertRuntime::FindGate(const std::string& id, std::optional<int>& layer) const {
  std::lock_guard<std::mutex> lock(gates_mu_);
  if (!layer) {
    std::vector<int> layers;
    for (const auto& [k, g] : gates_)
      if (k.first == id) layers.push_back(k.second);
    if (layers.empty())
      return Error::NotFound("no gate loaded for model '{}': load one with `tenzro moe load-gate`", id);
    if (layers.size() > 1)
      return Error::InvalidArgument("model '{}' has gates for layers {}: pass --layer", id, fmt::join(layers, ", "));
    layer = layers[0];
  }
  auto it = gates_.find({id, *layer});
  if (it == gates_.end())
    return Error::NotFound("no gate loaded for model '{}' layer {}: load one with `tenzro moe load-gate`", id, *layer);
  return it->second;
}

Result<ExpertRuntime::BlockGate> ExpertRuntime::FindBlockGate(std::string_view model, std::optional<int> layer,
                                                               int64_t d_model) const {
  BlockGate g;
  TENZRO_TRY(g.model, catalog::NormalizeModelId(model));
  TENZRO_TRY(Gate gate, FindGate(g.model, layer));
  const int64_t n_embd = gate.weights->router.n_embd();
  if (d_model != n_embd)
    return Error::InvalidArgument("d_model {} does not match model '{}' (n_embd {})", d_model, g.model, n_embd);
  g.layer = *layer;
  g.weights = std::move(gate.weights);
  g.routing = gate.routing;
  return g;
}

Result<void> ExpertRuntime::RunBlock(const BlockGate& gate, const float* x, int n_tok,
                                     runtime::RoutedExpertRunner& routed, float* out, runtime::MoeBlockRun& run) {
  return runtime::RunMoeBlock(gate.view(), x, n_tok, routed, out, run, options_.compute_pool);
}

Result<ForwardResult> ExpertRuntime::Forward(std::string_view model, std::optional<int> layer, int64_t d_model,
                                             const float* x, int n_tok, float* out) {
  TENZRO_TRY(BlockGate gate, FindBlockGate(model, layer, d_model));
  ForwardResult r;
  r.layer = gate.layer;
  r.shared_expert = gate.weights->shared.has_value();
  TENZRO_TRY(r.routing, runtime::ForwardMoeLayer(*cache_, gate.model, gate.layer, *gate.weights, gate.routing, x,
                                                 n_tok, out, options_.compute_pool));
  return r;
}

}  // namespace tenzro::holder
