#include "node/node_config.h"

#include <charconv>
#include <cstdlib>
#include <functional>

#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include "core/bytes.h"
#include "core/file.h"
#include "net/url.h"

namespace tenzro::node {

namespace {

Result<double> ParseFraction(std::string_view v, double max) {
  double x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || !(x >= 0) || !(x <= max))
    return Error::InvalidArgument("'{}' is not a number in 0..{}", v, max);
  return x;
}

template <typename T>
Result<T> ParseUint(std::string_view v, T max) {
  uint64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || x > max)
    return Error::InvalidArgument("'{}' is not an integer in 0..{}", v, max);
  return static_cast<T>(x);
}

Result<bool> ParseBool(std::string_view v) {
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  return Error::InvalidArgument("'{}' is not true or false", v);
}

// Calls `one` on each item of a value that may hold several, separated by
// commas or newlines (blanks around items ignored, empty items skipped).
Result<void> ForEachItem(std::string_view v, const std::function<Result<void>(std::string_view)>& one) {
  size_t start = 0;
  while (start <= v.size()) {
    size_t end = v.find_first_of(",\n", start);
    if (end == std::string_view::npos) end = v.size();
    std::string_view item = v.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) TENZRO_CHECK_OK(one(item));
    start = end + 1;
  }
  return Ok();
}

// 64 lower-case hex digits (a blob hash or a node id).
Result<std::string> Hex64(std::string_view v, std::string_view what) {
  bool ok = v.size() == 64;
  for (char ch : v) ok = ok && ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'));
  if (!ok) return Error::InvalidArgument("'{}' is not a {} (64 lower-case hex digits)", v.substr(0, 80), what);
  return std::string(v);
}

Result<void> SetEndpoint(std::string& field, std::string_view v) {
  TENZRO_TRY(auto ep, net::ParseEndpoint(v));
  (void)ep;
  field = std::string(v);
  return Ok();
}

const std::vector<NodeConfigKey> kKeys = {
    {"data_dir", "Data directory (node.json, admin.token, jobs/)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       if (v.empty()) return Error::InvalidArgument("must not be empty");
       c.data_dir = std::string(v);
       return Ok();
     }},
    {"http", "Public listener HOST:PORT (port 0 = pick one)",
     [](NodeConfig& c, std::string_view v) { return SetEndpoint(c.http, v); }},
    {"admin", "Admin API listener HOST:PORT, loopback only (port 0 = pick one)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(auto ep, net::ParseEndpoint(v));
       if (!net::IsLoopbackHost(ep.host))
         return Error::InvalidArgument("'{}' is not a loopback address; the admin API only listens on 127.0.0.1/::1", v);
       c.admin = std::string(v);
       return Ok();
     }},
    {"threads", "Request worker threads (0 = number of CPUs)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.threads, ParseUint<uint32_t>(v, 1024));
       return Ok();
     }},
    {"job_threads", "Background job threads",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(uint32_t n, ParseUint<uint32_t>(v, 1024));
       if (n == 0) return Error::InvalidArgument("must be at least 1");
       c.job_threads = n;
       return Ok();
     }},
    {"log_level", "trace|debug|info|warn|error|critical|off",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       for (const char* l : {"trace", "debug", "info", "warn", "error", "critical", "off"})
         if (v == l) {
           c.log_level = std::string(v);
           return Ok();
         }
       return Error::InvalidArgument("'{}' is not one of trace|debug|info|warn|error|critical|off", v);
     }},
    {"max_body_bytes", "Largest accepted request body (e.g. 64MiB); larger answers 413",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.max_body_bytes, ParseByteSize(v));
       return Ok();
     }},
    {"read_timeout_ms", "Per-connection read timeout in milliseconds",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(uint32_t ms, ParseUint<uint32_t>(v, 3'600'000));
       if (ms == 0) return Error::InvalidArgument("must be positive");
       c.read_timeout_ms = ms;
       return Ok();
     }},
    {"debug_routes", "Enable test-only routes (POST /v1/debug/jobs)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.debug_routes, ParseBool(v));
       return Ok();
     }},
    {"memory_budget", "Memory for warm experts, e.g. 2GiB (0 = unlimited); the rest stay cold on disk",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.memory_budget, ParseByteSize(v));
       return Ok();
     }},
    {"quic", "QUIC (iroh-compatible) endpoint HOST:PORT (port 0 = pick one; off = disabled)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       if (v == "off") {
         c.quic.clear();
         return Ok();
       }
       return SetEndpoint(c.quic, v);
     }},
    {"dashboard", "Where the dashboard (GET /, /v1/dashboard/state) is served: public (the public listener), "
                  "admin (the admin listener, behind its token: open http://ADMIN/#token=TOKEN) or off",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       if (v != "public" && v != "admin" && v != "off")
         return Error::InvalidArgument("'{}' is not one of public|admin|off", v);
       c.dashboard = std::string(v);
       return Ok();
     }},
    {"dht.host", "UDP address the swarm DHT binds (0.0.0.0 for a public holder)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       if (v.empty() || v.size() > 253) return Error::InvalidArgument("'{}' is not a host", v);
       c.dht_host = std::string(v);
       return Ok();
     }},
    {"dht.port", "UDP port of the swarm DHT (0 = pick one; node.json names it)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.dht_port, ParseUint<uint16_t>(v, 65535));
       return Ok();
     }},
    {"bootstrap", "DHT node HOST:PORT to join through (repeatable; none = a network of one)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       // Several may come in one value, separated by commas or newlines.
       return ForEachItem(v, [&c](std::string_view one) -> Result<void> {
         size_t colon = one.rfind(':');
         if (colon == std::string_view::npos || colon == 0)
           return Error::InvalidArgument("'{}' is not HOST:PORT", one);
         TENZRO_TRY(uint16_t port, ParseUint<uint16_t>(one.substr(colon + 1), 65535));
         if (port == 0) return Error::InvalidArgument("'{}': port 0 cannot be dialed", one);
         c.bootstrap.emplace_back(one);
         return Ok();
       });
     },
     /*repeatable=*/true},
    {"advertise", "Host peers reach this node at (default: the http listener's host)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       if (v.size() > 253) return Error::InvalidArgument("'{}' is not a host", v);
       c.advertise = std::string(v);
       return Ok();
     }},
    {"swarm.refresh_ms", "Re-publish this node's declarations every N ms",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(uint32_t ms, ParseUint<uint32_t>(v, 3'600'000));
       if (ms < 100) return Error::InvalidArgument("must be at least 100");
       c.swarm_refresh_ms = ms;
       return Ok();
     }},
    {"swarm.ttl_s", "Declarations expire N seconds after publication (keep above the refresh; at most 300: readers cut longer ones)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(uint32_t s, ParseUint<uint32_t>(v, 300));
       if (s == 0) return Error::InvalidArgument("must be positive");
       c.swarm_ttl_s = s;
       return Ok();
     }},
    {"trust_manifest",
     "Serve and use a model only under a trusted manifest: the hash of a manifest blob (tenzro moe publish-manifest) "
     "(repeatable)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       return ForEachItem(v, [&c](std::string_view one) -> Result<void> {
         TENZRO_TRY(std::string h, Hex64(one, "manifest hash"));
         c.trust_manifest.push_back(std::move(h));
         return Ok();
       });
     },
     /*repeatable=*/true},
    {"trust_publisher",
     "Trust every manifest signed by this node id (repeatable); like --trust-manifest, puts the node in manifest mode",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       return ForEachItem(v, [&c](std::string_view one) -> Result<void> {
         TENZRO_TRY(std::string h, Hex64(one, "node id"));
         c.trust_publisher.push_back(std::move(h));
         return Ok();
       });
     },
     /*repeatable=*/true},
    {"peer_rate", "Exec and blob requests per second one peer may make (token bucket; 0 = unlimited); over it: 429",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.peer_rate, ParseFraction(v, 1e9));
       return Ok();
     }},
    {"peer_burst", "Exec and blob requests one peer may make at once before --peer-rate applies",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(uint32_t n, ParseUint<uint32_t>(v, 1'000'000'000));
       if (n == 0) return Error::InvalidArgument("must be at least 1");
       c.peer_burst = n;
       return Ok();
     }},
    {"peer_prefix_multiple", "Exec and blob requests one IP prefix (IPv4 /24, IPv6 /56) may make, as a multiple of --peer-rate and --peer-burst (0 = no prefix limit)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.peer_prefix_multiple, ParseFraction(v, 1e6));
       if (c.peer_prefix_multiple > 0 && c.peer_prefix_multiple < 1)
         return Error::InvalidArgument("must be 0 (off) or at least 1");
       return Ok();
     }},
    {"max_connections", "Open connections per listener (HTTP, admin, QUIC), all peers together; past it: 503 with Retry-After (QUIC: the handshake is dropped)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(uint32_t n, ParseUint<uint32_t>(v, 1'000'000));
       if (n == 0) return Error::InvalidArgument("must be at least 1");
       c.max_connections = n;
       return Ok();
     }},
    {"max_connections_per_ip", "Open connections per listener (HTTP, admin, QUIC) from one IP address; past it: 503 with Retry-After (QUIC: the handshake is dropped)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(uint32_t n, ParseUint<uint32_t>(v, 1'000'000));
       if (n == 0) return Error::InvalidArgument("must be at least 1");
       c.max_connections_per_ip = n;
       return Ok();
     }},
    {"max_inflight_body_bytes", "Request body bytes a listener holds at once (e.g. 256MiB); past it: 503",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.max_inflight_body_bytes, ParseByteSize(v));
       if (c.max_inflight_body_bytes == 0) return Error::InvalidArgument("must be positive");
       return Ok();
     }},
    {"quic_max_inflight_bytes", "QUIC request bytes the node holds at once, all peers (e.g. 256MiB); past it: stream reset (busy)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.quic_inflight_bytes, ParseByteSize(v));
       if (c.quic_inflight_bytes == 0) return Error::InvalidArgument("must be positive");
       return Ok();
     }},
    {"quic_http_fallback", "Retry an exec call whose QUIC call failed over the holder's HTTP endpoint (true|false; "
                           "default false: it leaves the authenticated channel)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.quic_http_fallback, ParseBool(v));
       return Ok();
     }},
    {"quic_max_inflight_bytes_per_ip", "QUIC request bytes the node holds at once from one IP address (e.g. 64MiB)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.quic_inflight_bytes_per_ip, ParseByteSize(v));
       if (c.quic_inflight_bytes_per_ip == 0) return Error::InvalidArgument("must be positive");
       return Ok();
     }},
    {"public_body_bytes", "Body limit of the public routes other than exec (e.g. 4MiB; exec: sized from the models held, at least this, at most max_body_bytes)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.public_body_bytes, ParseByteSize(v));
       if (c.public_body_bytes == 0) return Error::InvalidArgument("must be positive");
       return Ok();
     }},
    {"spot_check_fraction", "Share of remote expert results re-run on another replica to catch wrong outputs (0..1)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.spot_check_fraction, ParseFraction(v, 1));
       return Ok();
     }},
    {"spot_check_tolerance", "Relative L2 distance above which a spot check disagrees (0 = by wire dtype)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.spot_check_tolerance, ParseFraction(v, 1));
       return Ok();
     }},
    {"spot_check_ban_s", "Seconds a holder caught returning wrong outputs is banned",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(uint32_t s, ParseUint<uint32_t>(v, 30 * 24 * 3600));
       if (s == 0) return Error::InvalidArgument("must be positive");
       c.spot_check_ban_s = s;
       return Ok();
     }},
    {"serve", "Serve this cataloged model id with the OpenAI-compatible API on the public listener (docs/serving.md)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       c.serve = std::string(v);
       return Ok();
     }},
    {"api_key", "With serve: require 'Authorization: Bearer KEY' on /v1/* of the API",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       c.api_key = std::string(v);
       return Ok();
     }},
    {"serve_max_active", "With serve: sequences in the running batch",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(uint32_t n, ParseUint<uint32_t>(v, 4096));
       if (n == 0) return Error::InvalidArgument("must be at least 1");
       c.serve_max_active = n;
       return Ok();
     }},
    {"serve_max_waiting", "With serve: requests queued beyond the batch; more answer 429",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.serve_max_waiting, ParseUint<uint32_t>(v, 1u << 20));
       return Ok();
     }},
    {"serve_step_tokens", "With serve: tokens fed per batched step (caps prompt chunks so decoders keep going)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(uint32_t n, ParseUint<uint32_t>(v, 1u << 20));
       if (n == 0) return Error::InvalidArgument("must be at least 1");
       c.serve_step_tokens = n;
       return Ok();
     }},
    {"serve_draft_max", "With serve: speculative decoding, prompt-lookup draft tokens verified per decode step (0 = off, at most 63)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.serve_draft_max, ParseUint<uint32_t>(v, 63));  // model::Session::kMaxRollbackTokens - 1
       return Ok();
     }},
    {"serve_ctx", "With serve: positions per request, prompt + max_tokens (capped by the model's context)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(uint32_t n, ParseUint<uint32_t>(v, 1u << 20));
       if (n < 2) return Error::InvalidArgument("must be at least 2");
       c.serve_ctx = n;
       return Ok();
     }},
    {"serve_session_budget", "With serve: bytes all live sessions (KV cache, recurrent state) may reserve, e.g. 4GiB",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.serve_session_budget, ParseByteSize(v));
       if (c.serve_session_budget == 0) return Error::InvalidArgument("must be more than 0");
       return Ok();
     }},
    {"serve_threads", "With serve: engine compute threads (0 = number of CPUs)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.serve_threads, ParseUint<uint32_t>(v, 1024));
       return Ok();
     }},
    {"serve_experts", "With serve: where the routed experts run, swarm (their holders, via the dispatcher) or local",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       if (v != "swarm" && v != "local") return Error::InvalidArgument("must be swarm or local, not {}", v);
       c.serve_experts = std::string(v);
       return Ok();
     }},
    {"serve_wire_dtype",
     "With serve: routed-expert rows as sent to holders, bf16 (default), f32, f16 or q8_0 (local rounds the same way)",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(c.serve_wire_dtype, runtime::ParseWireDtype(v));
       return Ok();
     }},
    {"test_corrupt_exec_outputs",
     "TEST ONLY (needs TENZRO_ALLOW_TEST_FAULTS=1): share of served expert outputs this holder falsifies",
     [](NodeConfig& c, std::string_view v) -> Result<void> {
       TENZRO_TRY(double f, ParseFraction(v, 1));
       const char* allow = std::getenv("TENZRO_ALLOW_TEST_FAULTS");
       if (f > 0 && (allow == nullptr || std::string_view(allow) != "1"))
         return Error::InvalidArgument("a test-only fault; refused unless the environment has TENZRO_ALLOW_TEST_FAULTS=1");
       c.test_corrupt_exec_outputs = f;
       return Ok();
     },
     /*repeatable=*/false, /*hidden=*/true},
};

// Renders a TOML scalar as the text a flag would carry.
Result<std::string> ScalarText(const toml::node& n) {
  if (auto s = n.as_string()) return std::string(s->get());
  if (auto i = n.as_integer()) {
    if (i->get() < 0) return Error::InvalidArgument("must not be negative");
    return std::to_string(i->get());
  }
  if (auto b = n.as_boolean()) return std::string(b->get() ? "true" : "false");
  if (auto f = n.as_floating_point()) {
    if (!(f->get() >= 0)) return Error::InvalidArgument("must not be negative");
    return fmt::format("{}", f->get());
  }
  return Error::InvalidArgument("must be a string, a number or a boolean");
}

Result<void> ApplyTable(const toml::table& t, const std::string& prefix, std::string_view origin, NodeConfig& cfg) {
  for (const auto& [k, node] : t) {
    std::string key = prefix + std::string(k.str());
    auto where = [&, &node = node] {  // clang < 16 cannot capture a structured binding
      return fmt::format("{}:{}: key '{}'", origin, node.source().begin.line, key);
    };
    if (const toml::table* sub = node.as_table()) {
      TENZRO_CHECK_OK(ApplyTable(*sub, key + ".", origin, cfg));
      continue;
    }
    if (const toml::array* arr = node.as_array()) {
      for (const toml::node& el : *arr) {
        auto text = ScalarText(el);
        if (!text) return text.error().WithContext(where());
        auto r = ApplyConfigValue(cfg, key, *text);
        if (!r) return Error(r.error().code(), fmt::format("{}:{}: {}", origin, el.source().begin.line, r.error().message()));
      }
      continue;
    }
    auto text = ScalarText(node);
    if (!text) return text.error().WithContext(where());
    auto r = ApplyConfigValue(cfg, key, *text);
    if (!r) return Error(r.error().code(), fmt::format("{}:{}: {}", origin, node.source().begin.line, r.error().message()));
  }
  return Ok();
}

}  // namespace

const std::vector<NodeConfigKey>& NodeConfigKeys() { return kKeys; }

std::string FlagNameForKey(std::string_view key) {
  std::string out(key);
  for (char& c : out)
    if (c == '_' || c == '.') c = '-';
  return out;
}

Result<void> ApplyConfigValue(NodeConfig& cfg, std::string_view key, std::string_view value) {
  for (const NodeConfigKey& k : kKeys) {
    if (key != k.name) continue;
    Result<void> r = k.set(cfg, value);
    if (!r) return Error(r.error().code(), fmt::format("config key '{}': {}", key, r.error().message()));
    return Ok();
  }
  std::string known;
  for (const NodeConfigKey& k : kKeys) known += (known.empty() ? "" : ", ") + std::string(k.name);
  return Error::InvalidArgument("unknown config key '{}' (known keys: {})", key, known);
}

Result<void> LoadConfigText(std::string_view text, std::string_view origin, NodeConfig& cfg) {
  toml::parse_result parsed = toml::parse(text, origin);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return Error::InvalidArgument("{}:{}:{}: {}", origin, e.source().begin.line, e.source().begin.column,
                                  e.description());
  }
  return ApplyTable(parsed.table(), "", origin, cfg);
}

Result<void> LoadConfigFile(const std::string& path, NodeConfig& cfg) {
  auto text = ReadTextFile(path, 1 << 20);
  if (!text) {
    if (text.error().code() == ErrorCode::kNotFound) return Error::NotFound("config file {} does not exist", path);
    return text.error().WithContext("config file " + path);
  }
  return LoadConfigText(*text, path, cfg);
}

}  // namespace tenzro::node
