// tenzro node: configuration (`tenzro node run` flags and the TOML file).
//
// Every setting is a key in one table (kNodeConfigKeys in node_config.cc):
// the TOML file uses the key ("http = \"127.0.0.1:0\""; a dotted key such as
// "dht.port" is written as `[dht]` + `port = 4222`), and `tenzro node run`
// offers the same key as a flag ("--http", "--dht-port"). Flags override the
// file. To add a setting: add a field here, one entry in the table, done.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "runtime/wire_rows.h"

namespace tenzro::node {

struct NodeConfig {
  std::string data_dir;                 // required; holds node.json, admin.token, jobs/
  std::string http = "127.0.0.1:0";     // public listener (blobs, exec to peers)
  std::string admin = "127.0.0.1:0";    // admin API; must be loopback
  uint32_t threads = 0;                 // request worker pool; 0 = hardware threads (min 2)
  uint32_t job_threads = 2;             // background jobs (prepare, ...)
  std::string log_level = "info";       // trace|debug|info|warn|error|critical|off
  uint64_t max_body_bytes = 64ull << 20;
  uint32_t read_timeout_ms = 30000;
  bool debug_routes = false;            // POST /v1/debug/jobs (tests only)
  uint64_t memory_budget = 0;           // warm expert bytes (runtime/expert_cache.h); 0 = unlimited
  std::string quic = "127.0.0.1:0";     // QUIC endpoint (node/quic_service.h); "" = off
  std::string dashboard = "public";     // where the dashboard is served: public | admin | off
  // Swarm (node/swarm_service.h).
  std::string dht_host = "127.0.0.1";   // UDP address the DHT binds
  uint16_t dht_port = 0;                // 0 = pick one (DATA_DIR/node.json names it)
  std::vector<std::string> bootstrap;   // DHT nodes "HOST:PORT"; none = a network of one
  std::string advertise;                // host peers reach this node at; "" = the http listener's host
  // Model manifests (manifest/manifest_trust.h): anything here puts the node
  // in manifest mode (models only under a trusted manifest).
  std::vector<std::string> trust_manifest;   // manifest blob hashes (64 hex)
  std::vector<std::string> trust_publisher;  // node ids whose manifests are trusted
  uint32_t swarm_refresh_ms = 20000;    // declarations re-published this often
  uint32_t swarm_ttl_s = 60;            // and expire this long after publication
  // Security (docs/security.md).
  double peer_rate = 1000;              // exec/blob requests per second per peer; 0 = unlimited
  uint32_t peer_burst = 5000;           // requests a peer may send at once
  uint32_t max_connections = 1024;      // per listener (HTTP, admin, QUIC), all peers (over: 503 / dropped)
  uint32_t max_connections_per_ip = 64; // per listener, one IP address (over: 503 / QUIC Initial dropped)
  uint64_t max_inflight_body_bytes = 256ull << 20;  // request bodies held at once, per listener (over: 503)
  uint64_t quic_inflight_bytes = 256ull << 20;         // QUIC request bytes held at once (over: stream reset)
  uint64_t quic_inflight_bytes_per_ip = 64ull << 20;   // of those, from one IP address
  bool quic_http_fallback = false;  // retry a failed QUIC exec call over the holder's HTTP endpoint
  double peer_prefix_multiple = 4;      // one IP prefix (IPv4 /24, IPv6 /56) may use this many peers' rate; 0 = off
  uint64_t public_body_bytes = 4ull << 20;  // body limit of public routes other than exec (max_body_bytes)
  double spot_check_fraction = 0.05;    // of remote expert results re-run elsewhere (dispatch/spot_check.h)
  double spot_check_tolerance = 0;      // relative L2; 0 = by wire dtype (1e-3 f32, 2e-2 bf16, 5e-3 f16)
  uint32_t spot_check_ban_s = 600;      // a holder caught lying sits out this long
  // Serving (serve/, docs/serving.md): "" = off.
  std::string serve;                    // cataloged model id served on the public listener
  std::string api_key;                  // "" = no key on /v1/*
  uint32_t serve_max_active = 8;        // sequences in the running batch
  uint32_t serve_max_waiting = 32;      // queued beyond them (then 429)
  uint32_t serve_step_tokens = 256;     // tokens per batched step
  uint32_t serve_draft_max = 0;         // prompt-lookup draft tokens per decode step (0: off)
  uint32_t serve_ctx = 4096;            // positions per request
  uint64_t serve_session_budget = 4ull << 30;  // bytes of all live sessions
  uint32_t serve_threads = 0;           // engine compute threads; 0 = hardware
  std::string serve_experts = "swarm";  // where the routed experts run: "swarm" (holders) | "local"
  // Routed-expert rows as sent to holders (swarm) or rounded in-process (local):
  // the same bits either way (runtime/wire_rows.h).
  runtime::WireDtype serve_wire_dtype = runtime::kDefaultWireDtype;
  // TEST ONLY: this holder perturbs this share of the expert outputs it
  // serves to peers. Refused unless TENZRO_ALLOW_TEST_FAULTS=1.
  double test_corrupt_exec_outputs = 0;
};

// One configurable key.
struct NodeConfigKey {
  const char* name;  // TOML key, dotted for tables ("dht.port")
  const char* help;
  // Parses `value` (the TOML value rendered as text, or the flag's argument)
  // into `cfg`; the error message describes the expected form.
  Result<void> (*set)(NodeConfig& cfg, std::string_view value);
  // The flag may be given several times (each value is applied in turn);
  // the TOML key takes an array of strings.
  bool repeatable = false;
  // Left out of --help (test-only settings).
  bool hidden = false;
};

// The table of keys, in documentation order.
const std::vector<NodeConfigKey>& NodeConfigKeys();

// "dht.port" -> "dht-port"; "max_body_bytes" -> "max-body-bytes".
std::string FlagNameForKey(std::string_view key);

// Applies one key (from a flag or a file). kInvalidArgument naming the key
// for an unknown key or a bad value.
Result<void> ApplyConfigValue(NodeConfig& cfg, std::string_view key, std::string_view value);

// Reads a TOML file into `cfg` (keys absent from the file keep their value).
// kNotFound when missing; kInvalidArgument naming the file, line and key for a
// syntax error, an unknown key or a bad value.
Result<void> LoadConfigFile(const std::string& path, NodeConfig& cfg);
// Same, from text (`origin` names it in errors).
Result<void> LoadConfigText(std::string_view text, std::string_view origin, NodeConfig& cfg);

}  // namespace tenzro::node
