#include "node/generate_service.h"

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "blob/blob_store.h"
#include "blob/blob_uri.h"
#include "catalog/catalog.h"
#include "format/checkpoint.h"
#include "model/arch.h"
#include "model/engine.h"
#include "model/generator.h"
#include "model/stop_matcher.h"
#include "net/json_http.h"
#include "prepare/spine.h"
#include "node/dispatch_service.h"
#include "node/node.h"
#include "node/runtime_service.h"
#include "node/swarm_moe_executor.h"
#include "tokenizer/load.h"
#include "tokenizer/stream_decoder.h"

namespace tenzro::node {
namespace {

using nlohmann::json;

// One model opened for generation. Member order: the engine (which owns the
// executor) goes before the spine it views.
struct ServedModel {
  std::string path;
  std::unique_ptr<format::Checkpoint> spine;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::unique_ptr<model::Engine> engine;
  SwarmMoeExecutor* executor = nullptr;  // owned by engine
};

struct GenerateRequest {
  std::string model;
  std::string spine;  // blob URI / hash of a spine in this node's store, or ""
  std::vector<int32_t> prompt;
  model::GenerateOptions options;
  std::vector<std::string> stop;
  int ctx = 0;
};

Result<GenerateRequest> ParseRequest(const json& b) {
  GenerateRequest r;
  if (!b.contains("model") || !b["model"].is_string())
    return Error::InvalidArgument("request: missing string field 'model'");
  TENZRO_TRY(r.model, catalog::NormalizeModelId(b["model"].get<std::string>()));
  if (b.contains("spine") && !b["spine"].is_null()) {
    if (!b["spine"].is_string()) return Error::InvalidArgument("request: 'spine' must be a blob URI");
    r.spine = b["spine"].get<std::string>();
  }
  if (!b.contains("prompt_ids") || !b["prompt_ids"].is_array() || b["prompt_ids"].empty())
    return Error::InvalidArgument("request: 'prompt_ids' must be a non-empty array of token ids");
  for (const json& v : b["prompt_ids"]) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      return Error::InvalidArgument("request: 'prompt_ids' holds {}, not a token id", v.dump());
    r.prompt.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  auto int_field = [&](const char* key, int64_t lo, int64_t hi, auto* out) -> Result<void> {
    if (!b.contains(key) || b[key].is_null()) return Ok();
    if (!b[key].is_number_integer() || b[key].get<int64_t>() < lo || b[key].get<int64_t>() > hi)
      return Error::InvalidArgument("request: '{}' must be an integer in [{}, {}]", key, lo, hi);
    *out = static_cast<std::remove_pointer_t<decltype(out)>>(b[key].get<int64_t>());
    return Ok();
  };
  auto float_field = [&](const char* key, float* out) -> Result<void> {
    if (!b.contains(key) || b[key].is_null()) return Ok();
    if (!b[key].is_number() || !std::isfinite(b[key].get<double>()))
      return Error::InvalidArgument("request: '{}' must be a finite number", key);
    *out = b[key].get<float>();
    return Ok();
  };
  auto bool_field = [&](const char* key, bool* out) -> Result<void> {
    if (!b.contains(key) || b[key].is_null()) return Ok();
    if (!b[key].is_boolean()) return Error::InvalidArgument("request: '{}' must be true or false", key);
    *out = b[key].get<bool>();
    return Ok();
  };
  model::GenerateOptions& o = r.options;
  model::SamplingParams& s = o.sampling;
  TENZRO_CHECK_OK(int_field("max_tokens", 0, 1 << 20, &o.max_tokens));
  TENZRO_CHECK_OK(int_field("ctx", 0, 1 << 20, &r.ctx));
  TENZRO_CHECK_OK(int_field("top_k", 0, INT32_MAX, &s.top_k));
  TENZRO_CHECK_OK(int_field("seed", 0, INT64_MAX, &s.seed));
  TENZRO_CHECK_OK(float_field("temperature", &s.temperature));
  TENZRO_CHECK_OK(float_field("top_p", &s.top_p));
  TENZRO_CHECK_OK(float_field("min_p", &s.min_p));
  TENZRO_CHECK_OK(float_field("repeat_penalty", &s.repetition_penalty));
  TENZRO_CHECK_OK(float_field("presence_penalty", &s.presence_penalty));
  TENZRO_CHECK_OK(float_field("frequency_penalty", &s.frequency_penalty));
  TENZRO_CHECK_OK(bool_field("ignore_eos", &o.ignore_eog));
  TENZRO_CHECK_OK(bool_field("logits", &o.collect_logits));
  TENZRO_CHECK_OK(s.Validate());
  if (b.contains("stop") && !b["stop"].is_null()) {
    if (!b["stop"].is_array()) return Error::InvalidArgument("request: 'stop' must be an array of strings");
    for (const json& v : b["stop"]) {
      if (!v.is_string()) return Error::InvalidArgument("request: 'stop' must be an array of strings");
      r.stop.push_back(v.get<std::string>());
    }
  }
  return r;
}

class GenerateService {
 public:
  GenerateService(Node& node, std::shared_ptr<blob::BlobStore> store, std::shared_ptr<dispatch::Dispatcher> dispatcher,
                  std::shared_ptr<manifest::TrustStore> trust)
      : node_(node), store_(std::move(store)), dispatcher_(std::move(dispatcher)), trust_(std::move(trust)) {}

  // Runs one request; the caller serialises calls (one generation at a time).
  Result<json> Generate(const json& body) {
    TENZRO_TRY(GenerateRequest req, ParseRequest(body));
    TENZRO_TRY(dispatch::ForwardOptions fo, ParseForwardOptions(body));
    fo.spot_check = NodeSpotCheckOptions(node_);
    TENZRO_TRY(ServedModel * m, Open(req.model, req.spine, fo));
    if (auto st = runtime::CheckWireRow(fo.dtype, m->engine->hparams().n_embd); !st)
      return Error::InvalidArgument("request: 'wire_dtype': {}", st.error().message());
    m->executor->set_options(fo);
    m->executor->ResetStats();
    for (int32_t id : req.prompt)
      if (!m->tok->IsValid(id))
        return Error::InvalidArgument("request: prompt id {} outside [0, {})", id, m->tok->vocab_size());
    req.options.eog = m->tok->end_of_generation();
    const int ctx = req.ctx > 0 ? req.ctx : static_cast<int>(req.prompt.size()) + req.options.max_tokens;
    TENZRO_TRY(auto session, m->engine->NewSession(ctx));
    TENZRO_TRY(model::StopMatcher stop, model::StopMatcher::Create(req.stop));
    tokenizer::StreamDecoder dec(*m->tok);
    std::string text;
    TENZRO_TRY(model::GenerateResult r,
               model::Generate(*m->engine, *session, req.prompt, req.options, [&](int32_t id) {
                 model::StopMatcher::Output out = stop.Feed(dec.Feed(id));
                 text += out.emit;
                 return !out.stopped;
               }));
    if (!stop.stopped()) {
      model::StopMatcher::Output out = stop.Feed(dec.Flush());
      text += out.emit;
      if (!out.stopped) text += stop.Flush();
    }
    const size_t n = r.tokens.size();
    const double tps = r.decode_ms > 0 && n > 1 ? (n - 1) * 1000.0 / r.decode_ms : 0.0;
    const int n_vocab = m->engine->hparams().n_vocab;
    json out = {{"model", req.model},
                {"tokens", r.tokens},
                {"text", text},
                {"finish_reason", model::FinishReasonName(r.finish)},
                {"prompt_tokens", r.prompt_tokens},
                {"generated_tokens", n},
                {"prefill_ms", r.prefill_ms},
                {"decode_ms", r.decode_ms},
                {"decode_tokens_per_s", tps},
                {"ms_per_token", n > 1 ? r.decode_ms / (n - 1) : 0.0},
                {"wire_dtype", std::string(dispatch::RowTypeName(fo.dtype))},
                {"n_vocab", n_vocab},
                {"layers", m->executor->StatsJson()}};
    if (req.options.collect_logits) {
      out["logits_rows"] = r.logits.size() / n_vocab;
      out["logits_f32_b64"] = Base64Encode(
          ByteSpan(reinterpret_cast<const uint8_t*>(r.logits.data()), r.logits.size() * sizeof(float)));
    }
    return out;
  }

 private:
  // The file the engine opens: the spine blob when given, else the
  // catalog's checkpoint.
  Result<std::string> PathOf(const std::string& id, const std::string& spine) {
    if (!spine.empty()) {
      TENZRO_TRY(blob::Blake3Hash hash, blob::ParseHashOrUri(spine));
      if (trust_) TENZRO_CHECK_OK(trust_->CheckSpine(id, hash.ToHex()));
      if (!store_->Has(hash))
        return Error::NotFound("spine {} is not in this node's blob store (tenzro blob get)", spine);
      return store_->DataPath(hash);
    }
    TENZRO_TRY(catalog::Catalog cat, catalog::Catalog::Load(node_.data_dir()));
    const catalog::CatalogEntry* e = cat.Lookup(id);
    if (!e)
      return Error::NotFound("model '{}' is not in this node's catalog (tenzro moe catalog-add --model {} "
                             "--checkpoint FILE) and no spine was given", id, id);
    return e->checkpoint;
  }

  Result<ServedModel*> Open(const std::string& id, const std::string& spine, const dispatch::ForwardOptions& fo) {
    TENZRO_TRY(std::string path, PathOf(id, spine));
    auto it = models_.find(id);
    if (it != models_.end() && it->second->path == path) return it->second.get();
    if (it != models_.end()) models_.erase(it);
    auto m = std::make_unique<ServedModel>();
    m->path = path;
    TENZRO_TRY(m->spine, format::Checkpoint::Open(m->path));
    if (auto named = m->spine->GetString(prepare::kSpineModelIdKey); named && *named != id)
      return Error::InvalidArgument("spine {} is the spine of model '{}', not '{}'", spine, *named, id);
    TENZRO_TRY(m->tok, tokenizer::LoadTokenizer(m->path));
    const model::ArchDef* arch = model::FindArch(m->spine->architecture());
    if (!arch)
      return Error::Unsupported("{}: architecture '{}' is not supported", m->path, m->spine->architecture());
    TENZRO_TRY(model::HParams hp, arch->read_hparams(*m->spine));
    TENZRO_TRY(std::unique_ptr<SwarmMoeExecutor> ex, SwarmMoeExecutor::Create(dispatcher_, &node_.pool(), id, hp, *m->spine, fo));
    m->executor = ex.get();
    model::EngineOptions eo;
    eo.threads = static_cast<int>(node_.pool().size());
    TENZRO_TRY(m->engine, model::Engine::Open(m->path, eo, std::move(ex)));
    if (m->engine->hparams().n_vocab < m->tok->vocab_size())
      return Error::InvalidArgument("{}: tokenizer has {} tokens but the model's embedding only {}", m->path,
                                    m->tok->vocab_size(), m->engine->hparams().n_vocab);
    ServedModel* p = m.get();
    models_[id] = std::move(m);
    return p;
  }

  Node& node_;
  std::shared_ptr<blob::BlobStore> store_;
  std::shared_ptr<dispatch::Dispatcher> dispatcher_;
  std::shared_ptr<manifest::TrustStore> trust_;  // spines must be in a trusted manifest (manifest mode)
  std::map<std::string, std::unique_ptr<ServedModel>> models_;
};

}  // namespace

Result<void> AddGenerateService(Node& node, std::shared_ptr<blob::BlobStore> store,
                                std::shared_ptr<dispatch::Dispatcher> dispatcher,
                                std::shared_ptr<manifest::TrustStore> trust) {
  // One generation at a time, on its own thread: it waits on remote holders
  // (whose exec requests run on the node pools) and must not hold a worker
  // of pool() while it does (see AddDispatchService).
  auto gen_pool = std::make_shared<ThreadPool>(1, "generate");
  node.OnStop([gen_pool] { gen_pool->Shutdown(); });
  auto svc = std::make_shared<GenerateService>(node, std::move(store), std::move(dispatcher), std::move(trust));
  node.admin_router().AddOnPool("POST", "/v1/model/generate", gen_pool.get(), [svc](const net::Request& http) {
    auto body = net::ParseJsonBody(http.body);
    if (!body) return net::ErrorResponse(body.error());
    auto r = svc->Generate(*body);
    if (!r) return net::ErrorResponse(r.error());
    return net::JsonResponse(*r);
  });
  return Ok();
}

}  // namespace tenzro::node
