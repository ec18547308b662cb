#include "node/runtime_service.h"

#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "net/json_http.h"
#include "node/node.h"

namespace tenzro::node {
namespace {

using nlohmann::json;

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Reads field `key` of `body` as T; kInvalidArgument naming it.
template <typename T>
Result<T> Field(const json& body, const char* key) {
  if (!body.contains(key)) return Error::InvalidArgument("request: missing field '{}'", key);
  const json& v = body[key];
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return Error::InvalidArgument("request: '{}' must be a string", key);
    return v.get<std::string>();
  } else {
    if (!v.is_number_integer()) return Error::InvalidArgument("request: '{}' must be an integer", key);
    const int64_t x = v.get<int64_t>();
    if (x < 0 || x > (int64_t{1} << 40)) return Error::InvalidArgument("request: '{}' = {} is out of range", key, x);
    return static_cast<T>(x);
  }
}

Result<holder::LoadSource> SourceOf(const json& body) {
  holder::LoadSource s;
  TENZRO_TRY(s.file, Field<std::string>(body, "file"));
  if (body.contains("from") && !body["from"].is_null()) {
    TENZRO_TRY(s.from, Field<std::string>(body, "from"));
  }
  return s;
}

Result<json> HandleForward(holder::ExpertRuntime& rt, const json& body) {
  TENZRO_TRY(ForwardRequest fr, ParseForwardRequest(body));
  const std::string& model = fr.model;
  const int64_t d_model = fr.d_model, n_tok = fr.n_tokens;
  std::vector<float>& x = fr.x;
  std::vector<float> out(x.size());
  const auto t0 = std::chrono::steady_clock::now();
  TENZRO_TRY(holder::ForwardResult r, rt.Forward(model, fr.layer, d_model, x.data(), static_cast<int>(n_tok), out.data()));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto st = rt.cache().stats();
  return json{{"model", model},
              {"layer", r.layer},
              {"n_tokens", n_tok},
              {"d_model", d_model},
              {"output_f32_b64",
               Base64Encode(ByteSpan(reinterpret_cast<const uint8_t*>(out.data()), out.size() * sizeof(float)))},
              {"routing", ForwardRoutingJson(r.routing, r.layer)},
              {"shared_expert", r.shared_expert},
              {"elapsed_ms", ms},
              {"cache",
               {{"hits", st.hits},
                {"prefetch_waits", st.prefetch_waits},
                {"misses", st.misses},
                {"promotions", st.promotions},
                {"demotions", st.demotions},
                {"warm_bytes", st.warm_bytes},
                {"budget_bytes", st.budget_bytes}}}};
}

// Wraps a JSON handler: parse the body, run, answer JSON or the error.
net::Response Answer(const net::Request& http, const std::function<Result<json>(const json&)>& fn) {
  auto body = net::ParseJsonBody(http.body);
  if (!body) return net::ErrorResponse(body.error());
  auto r = fn(*body);
  if (!r) return net::ErrorResponse(r.error());
  return net::JsonResponse(*r);
}

}  // namespace

Result<ForwardRequest> ParseForwardRequest(const json& body) {
  ForwardRequest fr;
  TENZRO_TRY(fr.model, Field<std::string>(body, "model"));
  if (body.contains("layer") && !body["layer"].is_null()) {
    TENZRO_TRY(int l, Field<int>(body, "layer"));
    fr.layer = l;
  }
  TENZRO_TRY(fr.d_model, Field<int64_t>(body, "d_model"));
  TENZRO_TRY(fr.n_tokens, Field<int64_t>(body, "n_tokens"));
  TENZRO_TRY(std::string b64, Field<std::string>(body, "hidden_f32_b64"));
  TENZRO_TRY(Bytes raw, Base64Decode(b64));
  if (fr.d_model <= 0) return Error::InvalidArgument("d_model must be positive");
  uint64_t want = 0;
  if (MulOverflow(static_cast<uint64_t>(fr.n_tokens), static_cast<uint64_t>(fr.d_model) * 4, &want) ||
      raw.size() != want)
    return Error::InvalidArgument("hidden state is {} bytes; {} tokens x d_model {} x 4 bytes = {}", raw.size(),
                                  fr.n_tokens, fr.d_model, want);
  fr.x.resize(static_cast<size_t>(fr.n_tokens * fr.d_model));
  if (!raw.empty()) std::memcpy(fr.x.data(), raw.data(), raw.size());
  return fr;
}

json ForwardRoutingJson(const std::vector<runtime::TokenRouting>& routing, int layer) {
  json out = json::array();
  for (size_t t = 0; t < routing.size(); ++t) {
    json ex = json::array();
    for (const auto& c : routing[t].experts) ex.push_back({{"layer", layer}, {"expert", c.expert}, {"weight", c.weight}});
    out.push_back({{"token_index", t}, {"experts", ex}});
  }
  return out;
}

std::string Base64Encode(ByteSpan data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8) | data[i + 2];
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  if (i < data.size()) {
    uint32_t v = uint32_t{data[i]} << 16;
    if (i + 1 < data.size()) v |= uint32_t{data[i + 1]} << 8;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < data.size() ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<Bytes> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return Error::InvalidArgument("base64: length {} is not a multiple of 4", text.size());
  int8_t rev[256];
  std::memset(rev, -1, sizeof(rev));
  for (int i = 0; i < 64; ++i) rev[static_cast<uint8_t>(kB64[i])] = static_cast<int8_t>(i);
  Bytes out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = text[i + j];
      if (c == '=' && i + 4 == text.size() && j >= 2 && (j == 3 || text[i + 3] == '=')) {
        ++pad;
        v <<= 6;
        continue;
      }
      const int8_t d = rev[static_cast<uint8_t>(c)];
      if (d < 0 || pad > 0) return Error::InvalidArgument("base64: bad character at offset {}", i + j);
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<uint8_t>(v >> 16));
    if (pad < 2) out.push_back(static_cast<uint8_t>((v >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<uint8_t>(v & 0xFF));
  }
  return out;
}

Result<std::shared_ptr<holder::ExpertRuntime>> OpenNodeExpertRuntime(
    Node& node, std::shared_ptr<blob::BlobStore> store,
    decltype(holder::ExpertRuntimeOptions::fetch_blob) fetch_blob, std::function<void()> on_change,
    std::shared_ptr<manifest::TrustStore> trust) {
  holder::ExpertRuntimeOptions o;
  o.data_dir = node.data_dir();
  o.memory_budget = node.config().memory_budget;
  o.store = std::move(store);
  o.compute_pool = &node.pool();
  o.fetch_blob = std::move(fetch_blob);
  o.on_change = std::move(on_change);
  o.trust = std::move(trust);
  TENZRO_TRY(auto rt, holder::ExpertRuntime::Open(std::move(o)));
  std::shared_ptr<holder::ExpertRuntime> shared(std::move(rt));
  for (const auto& n : shared->restart_notes()) spdlog::warn("expert runtime: skipped on restart: {}", n);
  const auto st = shared->cache().stats();
  spdlog::info("expert runtime: {} experts registered (cold), budget {}", st.n_experts,
               st.budget_bytes == 0 ? std::string("unlimited") : FormatBytes(st.budget_bytes));
  return shared;
}

Result<void> AddRuntimeService(Node& node, std::shared_ptr<holder::ExpertRuntime> rt) {
  node.AddMetrics([rt](std::string& out) {
    const auto st = rt->cache().stats();
    auto counter = [&](const char* name, const char* help, uint64_t v) {
      out += fmt::format("# HELP tenzro_cache_{0} {1}\n# TYPE tenzro_cache_{0} counter\ntenzro_cache_{0} {2}\n", name,
                         help, v);
    };
    auto gauge = [&](const char* name, const char* help, uint64_t v) {
      out += fmt::format("# HELP tenzro_{0} {1}\n# TYPE tenzro_{0} gauge\ntenzro_{0} {2}\n", name, help, v);
    };
    counter("hits_total", "Expert pins served warm.", st.hits);
    counter("prefetch_waits_total", "Pins that waited for a prefetch in flight.", st.prefetch_waits);
    counter("misses_total", "Pins that loaded a cold expert.", st.misses);
    counter("promotions_total", "Cold to warm promotions.", st.promotions);
    counter("demotions_total", "Warm to cold demotions (budget pressure).", st.demotions);
    gauge("warm_bytes", "Bytes of warm (and loading) experts.", st.warm_bytes);
    gauge("budget_bytes", "Memory budget for warm experts (0 = unlimited).", st.budget_bytes);
    gauge("experts", "Experts registered (warm or cold).", st.n_experts);
    gauge("warm_experts", "Experts warm.", st.n_warm);
  });
  net::Router& r = node.admin_router();
  ThreadPool* pool = &node.pool();
  r.AddOnPool("POST", "/v1/moe/load-expert", pool, [rt](const net::Request& http) {
    return Answer(http, [&](const json& b) -> Result<json> {
      TENZRO_TRY(std::string model, Field<std::string>(b, "model"));
      TENZRO_TRY(int layer, Field<int>(b, "layer"));
      TENZRO_TRY(int expert, Field<int>(b, "expert"));
      TENZRO_TRY(holder::LoadSource src, SourceOf(b));
      return rt->LoadExpert(model, layer, expert, src);
    });
  });
  r.AddOnPool("POST", "/v1/moe/load-gate", pool, [rt](const net::Request& http) {
    return Answer(http, [&](const json& b) -> Result<json> {
      TENZRO_TRY(std::string model, Field<std::string>(b, "model"));
      TENZRO_TRY(int layer, Field<int>(b, "layer"));
      TENZRO_TRY(holder::LoadSource src, SourceOf(b));
      return rt->LoadGate(model, layer, src);
    });
  });
  r.Add("GET", "/v1/moe/status", [rt](const net::Request&) { return net::JsonResponse(rt->Status()); });
  r.AddOnPool("POST", "/v1/moe/forward", pool, [rt](const net::Request& http) {
    return Answer(http, [&](const json& b) { return HandleForward(*rt, b); });
  });
  return Ok();
}

}  // namespace tenzro::node
