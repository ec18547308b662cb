// tenzro demo — the main job (README: `make demo`): a local swarm of node
// processes on loopback with the bundled tiny Qwen3.5-MoE checkpoint.
//
//   1. starts N nodes (default 4) that join one DHT through the first;
//   2. node 0 prepares every expert of both layers at q4_k_m and the gates,
//      and loads the gates (it is the "inference engine" side);
//   3. nodes 1..N-1 load the experts by blob URI with replication 2, within a
//      small memory budget; the providers are found in the DHT, every fetch
//      is verified against the blob's BLAKE3 root;
//   4. prints the shard map once every node's declaration is seen;
//   5. runs the distributed forward of each layer on 9 tokens, checks it
//      against ggml's f64 reference and, bit for bit, against a single-node
//      forward on node 0 (which then loads every expert itself);
//   6. SIGKILLs one holder and shows the next forward failing over;
//   7. generates 16 tokens with the bundled chat model in-process and checks
//      them against the float64 reference (demo_generate.h);
//   8. node 0, started with --serve, serves that model with the OpenAI API,
//      its experts on the live holders: the official OpenAI client streams a
//      chat completion, checked against all-local generation; a holder is
//      SIGKILLed and a second stream completes (demo_serve.h);
//   9. reports the stage timings, bytes moved, coverage and replication.
// With --shape ID the same runs on random weights at a real model's shape
// (demo_model.h): --layers of its MoE layers with --experts routed experts
// each, Q4_K_M-typed, and random hidden states; the oracle check is then
// replaced by the bit-exact single-node comparison alone.
// Every child is killed and the temp directory ($TMPDIR or /tmp) removed on
// exit, also on Ctrl-C (SIGINT/SIGTERM).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "catalog/builtin_shapes.h"
#include "catalog/catalog.h"
#include "cli/command.h"
#include "cli/demo_generate.h"
#include "cli/demo_model.h"
#include "cli/demo_serve.h"
#include "cli/node_client.h"
#include "core/bytes.h"
#include "core/file.h"
#include "node/runtime_service.h"

extern char** environ;

namespace tenzro::cli {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr const char* kModel = "tiny-qwen35moe";
// The bundled model with its tokenizer, served by node 0 (tiny scenario).
constexpr const char* kChatModel = "tiny-qwen35moe-chat";

struct DemoArgs {
  int nodes = 4;
  std::string data;  // directory with the tiny checkpoint (tests/data/moe)
  bool keep = false;
  std::string shape;  // built-in model id: random weights at its shape
  int layers = 1;     // with --shape
  int experts = 32;   // with --shape
  int tokens = 16;    // with --shape
};

// Children and the work dir, reachable from the signal handler.
std::atomic<int> g_n_children{0};
pid_t g_children[64];
char g_workdir[4096];

void KillChildren(int sig) {
  for (int i = 0; i < g_n_children.load(); ++i)
    if (g_children[i] > 0) ::kill(g_children[i], sig);
}

void OnSignal(int sig) {
  KillChildren(SIGKILL);
  // Async-signal-safe cleanup of the work dir: fork + exec rm.
  if (g_workdir[0]) {
    pid_t p = ::fork();
    if (p == 0) {
      const char* argv[] = {"rm", "-rf", g_workdir, nullptr};
      ::execvp("rm", const_cast<char* const*>(argv));
      ::_exit(127);
    }
    if (p > 0) ::waitpid(p, nullptr, 0);
  }
  ::_exit(128 + sig);
}

double Ms(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

struct DemoNode {
  std::string dir;
  pid_t pid = -1;
  json info;  // node.json
  std::string node_id;
  std::optional<NodeClient> client;
};

class Demo {
 public:
  explicit Demo(DemoArgs a) : a_(std::move(a)) {}
  ~Demo() { Cleanup(); }
  Result<void> Run();

 private:
  Result<void> StartNode(size_t i, const std::vector<std::string>& extra);
  Result<json> Call(DemoNode& n, const std::string& method, const std::string& path, const json& body = {});
  Result<void> WaitForShardMap(int holders);
  Result<std::vector<float>> Forward(int layer, const std::vector<float>& hidden, json* answer, bool local);
  void Cleanup();
  static void Step(const std::string& s) { fmt::print("\n== {} ==\n", s); }

  Result<void> Setup();
  std::string ChatModelPath() const { return fs::absolute(fs::path(a_.data) / "../model/tiny-qwen35moe-tok-BF16.gguf").lexically_normal().string(); }
  // Records a model in node 0's catalog before node 0 starts (the shard map
  // takes its shape from there, never from the declarations).
  Result<void> CatalogModel(const std::string& id, const std::string& checkpoint);

  DemoArgs a_;
  std::string model_ = kModel;  // model id the swarm serves
  std::string ckpt_;            // Q4_K_M checkpoint node 0 prepares
  int layers_ = 2;
  int n_expert_ = 8;
  int64_t d_model_ = 256;
  uint64_t expert_bytes_ = 0;   // one expert at q4_k_m (--shape)
  // Tiny scenario: room for each holder's share of both models warm (the
  // chat model's bf16 experts are 768 KiB each; the q4_k_m ones ~220 KiB).
  std::string holder_budget_ = "24MiB";
  std::vector<float> hidden_;   // n_tok x d_model
  std::string work_;
  std::vector<DemoNode> nodes_;
  std::vector<std::string> log_;
};

Result<void> Demo::StartNode(size_t i, const std::vector<std::string>& extra) {
  DemoNode n;
  n.dir = fmt::format("{}/node{}", work_, i);
  std::error_code ec;
  fs::create_directories(n.dir, ec);
  std::vector<std::string> argv = {"/proc/self/exe", "--data-dir", n.dir, "--log-level", "warn", "node", "run",
                                   "--threads", "2", "--swarm-refresh-ms", "1000", "--swarm-ttl-s", "5"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::vector<char*> cargv;
  for (auto& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string log = n.dir + ".log";
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  char exe[4096];
  ssize_t len = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len <= 0) return Error::Io("cannot find this program (/proc/self/exe)");
  exe[len] = 0;
  int rc = posix_spawn(&n.pid, exe, &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Error::FromErrno(rc, "spawn a node");
  g_children[g_n_children.load()] = n.pid;
  g_n_children.fetch_add(1);
  // node.json appears once the node listens.
  const auto t0 = SteadyClock::now();
  while (true) {
    auto text = ReadTextFile(n.dir + "/node.json");
    if (text) {
      json j = json::parse(*text, nullptr, false);
      if (j.is_object() && j.value("pid", 0) == n.pid) {
        n.info = j;
        break;
      }
    }
    int st = 0;
    if (::waitpid(n.pid, &st, WNOHANG) == n.pid)
      return Error::Unavailable("node {} exited during start; its log: {}", i, log);
    if (Ms(t0) > 30000) return Error::DeadlineExceeded("node {} did not start in 30 s; its log: {}", i, log);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  n.node_id = n.info.value("node_id", "");
  TENZRO_TRY(net::Endpoint admin, net::ParseEndpoint(n.info.value("admin", "")));
  TENZRO_TRY(std::string token, ReadTextFile(n.dir + "/admin.token"));
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  net::ClientOptions o;
  o.timeout = std::chrono::milliseconds(120000);
  net::HttpClient http(admin, o);
  http.SetBearerToken(token);
  n.client.emplace(std::move(http), n.dir, true);
  nodes_.push_back(std::move(n));
  return Ok();
}

Result<json> Demo::Call(DemoNode& n, const std::string& method, const std::string& path, const json& body) {
  return method == "GET" ? n.client->Get(path) : n.client->Post(path, body);
}

Result<void> Demo::WaitForShardMap(int holders) {
  const auto t0 = SteadyClock::now();
  json m;
  while (Ms(t0) < 20000) {
    auto r = Call(nodes_[0], "GET", "/v1/swarm/shard-map?model=" + model_);
    if (r) {
      m = *r;
      int with_experts = 0;
      for (const json& h : m["holders"]) with_experts += h.value("experts", 0) > 0;
      if (with_experts == holders && m["under_replicated"].empty()) return Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Error::DeadlineExceeded("the shard map did not converge in 20 s: {}", m.dump());
}

Result<std::vector<float>> Demo::Forward(int layer, const std::vector<float>& hidden, json* answer, bool local) {
  const int64_t d_model = d_model_;
  json body = {{"model", model_},
               {"layer", layer},
               {"d_model", d_model},
               {"n_tokens", static_cast<int64_t>(hidden.size()) / d_model},
               {"hidden_f32_b64", node::Base64Encode(ByteSpan(reinterpret_cast<const uint8_t*>(hidden.data()),
                                                              hidden.size() * sizeof(float)))}};
  if (!local) body["wire_dtype"] = "f32";  // exact rows: the bit-for-bit check against the local forward
  TENZRO_TRY(*answer, Call(nodes_[0], "POST", local ? "/v1/moe/forward" : "/v1/moe/forward-distributed", body));
  TENZRO_TRY(Bytes raw, node::Base64Decode(answer->value("output_f32_b64", "")));
  if (raw.size() != hidden.size() * sizeof(float))
    return Error::Corruption("forward answered {} bytes, expected {}", raw.size(), hidden.size() * sizeof(float));
  std::vector<float> out(hidden.size());
  std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

Result<void> Done(const Result<json>& r) {
  if (!r) return r.error();
  return Ok();
}

double RelL2(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < ref.size(); ++i) {
    num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : 0;
}

Result<std::vector<float>> ReadF32(const std::string& path) {
  TENZRO_TRY(std::string text, ReadTextFile(path));
  if (text.size() % 4) return Error::Corruption("{}: {} bytes is not a float32 array", path, text.size());
  std::vector<float> v(text.size() / 4);
  std::memcpy(v.data(), text.data(), text.size());
  return v;
}

void PrintHolders(const json& fw) {
  const json& st = fw["stages"];
  fmt::print("  stages: gate {:.2f} ms, plan {:.2f} ms, exec {:.2f} ms (slowest holder compute {:.2f} ms), "
             "combine {:.2f} ms, total {:.2f} ms, {} round(s)\n",
             st.value("gate_ms", 0.0), st.value("plan_ms", 0.0), st.value("exec_ms", 0.0),
             st.value("max_holder_compute_ms", 0.0), st.value("combine_ms", 0.0), st.value("total_ms", 0.0),
             st.value("rounds", 0));
  for (const json& h : fw["holders"]) {
    fmt::print("    round {} {} via {:<5} experts {:>2} rows {:>3}: rtt {:6.2f} ms, compute {:6.2f} ms{}\n",
               h.value("round", 0), h.value("node_id", "").substr(0, 12), h.value("transport", ""),
               h["experts"].is_array() ? h["experts"].size() : h.value("experts", size_t{0}), h.value("rows", 0),
               h.value("rtt_ms", 0.0), h.value("compute_ms", 0.0),
               h.contains("error") ? "  FAILED: " + h["error"].get<std::string>() : std::string());
  }
}

Result<void> Demo::CatalogModel(const std::string& id, const std::string& checkpoint) {
  const std::string dir = work_ + "/node0";
  std::error_code ec;
  fs::create_directories(dir, ec);
  TENZRO_TRY(catalog::Catalog cat, catalog::Catalog::Load(dir));
  TENZRO_TRY(catalog::CatalogEntry e, cat.AddCheckpoint(id, checkpoint));
  return Ok();
}

// The work dir and the scenario: the bundled tiny checkpoint, or random
// weights at a built-in shape written into the work dir.
Result<void> Demo::Setup() {
  if (a_.nodes < 3 || a_.nodes > 16) return Error::InvalidArgument("--nodes {} must be in 3..16", a_.nodes);
  if (a_.shape.empty()) {
    ckpt_ = a_.data + "/tiny-qwen35moe-Q4_K_M.gguf";
    if (!fs::exists(ckpt_))
      return Error::NotFound("{} not found: run from the repository root or pass --data DIR (tests/data/moe)", ckpt_);
    TENZRO_TRY(hidden_, ReadF32(a_.data + "/tiny-qwen35moe.hidden.f32"));
  } else {
    TENZRO_TRY(catalog::ModelShape shape, catalog::BuiltinShape(a_.shape));
    if (a_.tokens < 1 || a_.tokens > 4096) return Error::InvalidArgument("--tokens {} must be in 1..4096", a_.tokens);
    model_ = shape.id + "-random";
    layers_ = a_.layers;
    n_expert_ = a_.experts;
    d_model_ = shape.n_embd;
  }
  const char* tmp_env = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp_env && *tmp_env ? tmp_env : "/tmp") + "/tenzro-demo-XXXXXX";
  if (!::mkdtemp(tmpl.data())) return Error::FromErrno(errno, "mkdtemp " + tmpl);
  work_ = tmpl;
  std::snprintf(g_workdir, sizeof(g_workdir), "%s", work_.c_str());
  ::signal(SIGINT, OnSignal);
  ::signal(SIGTERM, OnSignal);
  if (a_.shape.empty()) return Ok();

  TENZRO_TRY(catalog::ModelShape shape, catalog::BuiltinShape(a_.shape));
  Step(fmt::format("write a random-weight checkpoint at the shape of {}: {} layer(s) x {} experts (of {}), "
                   "n_embd {}, expert FFN {}, top-{}, Q4_K_M",
                   shape.id, layers_, n_expert_, shape.n_expert, shape.n_embd, shape.n_ff_exp, shape.n_expert_used));
  const auto t = SteadyClock::now();
  ckpt_ = work_ + "/" + model_ + "-Q4_K_M.gguf";
  TENZRO_TRY(RandomCheckpointInfo info, WriteRandomMoeCheckpoint(shape, layers_, n_expert_, ckpt_));
  expert_bytes_ = info.expert_bytes;
  // Each holder carries about 2 x experts / holders; its budget holds that
  // with room to spare, so the forwards run on warm experts.
  const int holders = a_.nodes - 1;
  const uint64_t share = (2ull * layers_ * n_expert_ + holders - 1) / holders;
  holder_budget_ = std::to_string((share * expert_bytes_ * 5 / 4 >> 20) + 1) + "MiB";
  std::mt19937 gen(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  hidden_.resize(static_cast<size_t>(a_.tokens) * d_model_);
  for (float& v : hidden_) v = nd(gen);
  fmt::print("  {} written in {:.0f} ms; one expert is {}; holder budget {}\n", FormatBytes(info.file_bytes), Ms(t),
             FormatBytes(expert_bytes_), holder_budget_);
  return Ok();
}

Result<void> Demo::Run() {
  const auto t_start = SteadyClock::now();
  TENZRO_CHECK_OK(Setup());
  const bool tiny = a_.shape.empty();
  const int n_tok = static_cast<int>(hidden_.size() / d_model_);

  Step(fmt::format("start {} nodes on loopback; node 0 is the DHT bootstrap, the preparer and the gate", a_.nodes));
  std::vector<std::string> node0_args;
  if (tiny) {  // node 0 also serves the chat model, its experts on the swarm
    TENZRO_CHECK_OK(CatalogModel(kChatModel, ChatModelPath()));
    node0_args = {"--serve", kChatModel, "--serve-threads", "2"};
  } else {  // the random model's shape (its layers and experts, not the built-in one's)
    TENZRO_CHECK_OK(CatalogModel(model_, fs::absolute(ckpt_).string()));
  }
  TENZRO_CHECK_OK(StartNode(0, node0_args));
  const std::string boot = fmt::format("127.0.0.1:{}", nodes_[0].info.value("dht_port", 0));
  for (int i = 1; i < a_.nodes; ++i)
    TENZRO_CHECK_OK(StartNode(i, {"--bootstrap", boot, "--memory-budget", holder_budget_}));
  for (size_t i = 0; i < nodes_.size(); ++i)
    fmt::print("  node {} {}  http {}  dht udp {}\n", i, nodes_[i].node_id.substr(0, 16),
               nodes_[i].info.value("http", ""), nodes_[i].info.value("dht_port", 0));

  Step(fmt::format("node 0: prepare every expert of {} layer(s) at q4_k_m, plus the gates (BLAKE3 blobs)", layers_));
  auto t = SteadyClock::now();
  std::vector<json> prepared;
  for (int layer = 0; layer < layers_; ++layer) {
    TENZRO_TRY(json job, Call(nodes_[0], "POST", "/v1/moe/prepare",
                              {{"model_id", model_}, {"checkpoint", fs::absolute(ckpt_).string()}, {"layer", layer},
                               {"experts", "all"}, {"quant", "q4_k_m"}, {"gate", true}}));
    TENZRO_TRY(json done, nodes_[0].client->WaitJob(job.value("job_id", ""), std::chrono::seconds(300)));
    prepared.push_back(done["result"]);
    fmt::print("  layer {}: {} experts + gate published\n", layer, done["result"]["experts"].size());
  }
  const double prepare_ms = Ms(t);

  Step("holders: load experts by blob URI (providers found in the DHT, fetches verified), replication 2");
  t = SteadyClock::now();
  const int holders = a_.nodes - 1;
  uint64_t bytes_moved = 0;
  int loads = 0;
  for (int layer = 0; layer < layers_; ++layer) {
    TENZRO_CHECK_OK(Done(Call(nodes_[0], "POST", "/v1/moe/load-gate",
                              {{"model", model_}, {"layer", layer}, {"file", prepared[layer]["gate"]["uri"]}})));
    for (const json& e : prepared[layer]["experts"]) {
      const int g = layer * n_expert_ + e["expert"].get<int>();
      for (int k : {g % holders, (g + 1) % holders}) {
        TENZRO_TRY(json r, Call(nodes_[1 + k], "POST", "/v1/moe/load-expert",
                                {{"model", model_}, {"layer", layer}, {"expert", e["expert"]}, {"file", e["uri"]}}));
        bytes_moved += r.value("fetched_bytes", uint64_t{0});
        ++loads;
      }
    }
  }
  const double load_ms = Ms(t);
  fmt::print("  {} loads, {} fetched over HTTP from providers, {:.0f} ms ({:.0f} MB/s)\n", loads,
             FormatBytes(bytes_moved), load_ms, bytes_moved / 1e3 / std::max(load_ms, 1.0));

  Step("shard map (as node 0 sees the swarm)");
  t = SteadyClock::now();
  TENZRO_CHECK_OK(WaitForShardMap(holders));
  const double converge_ms = Ms(t);
  TENZRO_TRY(json map, Call(nodes_[0], "GET", "/v1/swarm/shard-map?model=" + model_));
  for (const json& l : map["layers"])
    fmt::print("  layer {}: {}/{} experts covered\n", l.value("layer", 0), l.value("covered", 0),
               l.value("n_expert", 0));
  for (const json& h : map["holders"])
    if (h.value("experts", 0) > 0)
      fmt::print("  holder {}: {} experts, budget {}, free {}\n", h.value("node_id", "").substr(0, 16),
                 h.value("experts", 0), FormatBytes(h.value("memory_budget", uint64_t{0})),
                 FormatBytes(h.value("free_bytes", uint64_t{0})));
  int min_rep = 1 << 30, max_rep = 0;
  for (const json& e : map["experts"]) {
    min_rep = std::min(min_rep, e.value("replicas", 0));
    max_rep = std::max(max_rep, e.value("replicas", 0));
  }
  fmt::print("  replication: every expert on {}..{} holders; converged {:.0f} ms after the last load\n", min_rep,
             max_rep, converge_ms);

  Step(fmt::format("distributed forward: {} tokens through each MoE layer, gate on node 0, experts on their holders",
                   n_tok));
  json oracle;
  if (tiny) {
    TENZRO_TRY(std::string oracle_text, ReadTextFile(a_.data + "/tiny-qwen35moe.moe-oracle.json"));
    oracle = json::parse(oracle_text, nullptr, false);
  }
  std::vector<std::vector<float>> dist(layers_);
  std::vector<json> fw(layers_);
  bool ok = true;
  for (int layer = 0; layer < layers_; ++layer) {
    TENZRO_TRY(dist[layer], Forward(layer, hidden_, &fw[layer], false));
    if (tiny) {
      TENZRO_TRY(std::vector<float> ref,
                 ReadF32(fmt::format("{}/tiny-qwen35moe.Q4_K_M.layer{}.full.ref.f32", a_.data, layer)));
      double ggml = 0;
      for (const json& c : oracle["cases"])
        if (c.value("weights", "") == "Q4_K_M" && c.value("layer", -1) == layer)
          ggml = c.value("ggml_vs_ref_rel_l2", 0.0);
      const double err = RelL2(dist[layer], ref);
      ok &= err <= ggml;
      fmt::print("  layer {}: relative L2 error vs ggml's f64 reference {:.3e} (ggml's own {:.3e}) {}\n", layer, err,
                 ggml, err <= ggml ? "OK" : "WORSE THAN GGML");
    } else {
      fmt::print("  layer {}:\n", layer);
    }
    PrintHolders(fw[layer]);
  }
  // A second, warm forward of layer 0: steady-state timings.
  json warm;
  TENZRO_TRY(std::vector<float> again0, Forward(0, hidden_, &warm, false));
  ok &= std::memcmp(again0.data(), dist[0].data(), again0.size() * sizeof(float)) == 0;
  fmt::print("  layer 0 again (warm): {:.1f} ms\n", warm["stages"].value("total_ms", 0.0));

  Step("failover: SIGKILL one holder, forward again");
  DemoNode& victim = nodes_[1];
  ::kill(victim.pid, SIGKILL);
  ::waitpid(victim.pid, nullptr, 0);
  fmt::print("  killed node 1 ({})\n", victim.node_id.substr(0, 16));
  json again;
  t = SteadyClock::now();
  TENZRO_TRY(std::vector<float> out2, Forward(0, hidden_, &again, false));
  const bool same_after = std::memcmp(out2.data(), dist[0].data(), out2.size() * sizeof(float)) == 0;
  ok &= same_after;
  fmt::print("  forward completed in {:.1f} ms; output {} the fault-free one\n", Ms(t),
             same_after ? "bit-identical to" : "DIFFERS from");
  PrintHolders(again);

  Step("single-node check: node 0 loads every expert itself and runs the local forward");
  for (int layer = 0; layer < layers_; ++layer) {
    for (const json& e : prepared[layer]["experts"])
      TENZRO_CHECK_OK(Done(Call(nodes_[0], "POST", "/v1/moe/load-expert",
                                {{"model", model_}, {"layer", layer}, {"expert", e["expert"]}, {"file", e["uri"]}})));
    json local;
    TENZRO_TRY(std::vector<float> single, Forward(layer, hidden_, &local, true));
    const bool same = std::memcmp(single.data(), dist[layer].data(), single.size() * sizeof(float)) == 0;
    ok &= same;
    fmt::print("  layer {}: distributed output {} the single-node forward (local forward {:.1f} ms)\n", layer,
               same ? "is bit-identical to" : "DIFFERS from", local.value("elapsed_ms", 0.0));
  }

  if (tiny) {
    Step("generate: the whole model in-process (tokenizer, spine, experts, sampler), chat \"Hi\", greedy");
    TENZRO_TRY(bool gen_ok, RunDemoGeneration(a_.data + "/../model"));
    ok &= gen_ok;
  }

  if (tiny) {
    Step("serve: node 0 serves the chat model with the OpenAI API, its experts on the live holders");
    DemoServeSetup ss;
    ss.model_id = kChatModel;
    ss.checkpoint = ChatModelPath();
    ss.preparer = &*nodes_[0].client;
    TENZRO_TRY(ss.api, net::ParseEndpoint(nodes_[0].info.value("http", "")));
    for (size_t i = 2; i < nodes_.size(); ++i) {  // node 1 was killed above
      ss.holders.push_back(&*nodes_[i].client);
      ss.holder_pids.push_back(nodes_[i].pid);
    }
    ss.scripts_dir = (fs::path(a_.data) / "../../../scripts").lexically_normal().string();
    TENZRO_TRY(bool serve_ok, RunDemoServing(ss));
    ok &= serve_ok;
  }

  Step("report");
  fmt::print("  model {}  nodes {}  experts {} x replication 2  blobs moved {}  coverage {}/{}\n", model_, a_.nodes,
             layers_ * n_expert_, FormatBytes(bytes_moved), map.value("covered_experts", 0),
             map.value("total_experts", 0));
  std::string per_layer;
  for (int layer = 0; layer < layers_; ++layer)
    per_layer += fmt::format("{}{:.1f}", layer ? " / " : "", fw[layer]["stages"].value("total_ms", 0.0));
  fmt::print("  prepare {:.0f} ms, loads {:.0f} ms, shard map convergence {:.0f} ms, distributed forward {} ms "
             "(per layer, first), warm {:.1f} ms, after failover {:.1f} ms\n",
             prepare_ms, load_ms, converge_ms, per_layer, warm["stages"].value("total_ms", 0.0),
             again["stages"].value("total_ms", 0.0));
  fmt::print("  total {:.1f} s: {}\n", Ms(t_start) / 1000, ok ? "all checks passed" : "SOME CHECKS FAILED");
  if (!ok) return Error::Internal("demo checks failed (see above)");
  return Ok();
}

void Demo::Cleanup() {
  for (auto& n : nodes_) {
    if (n.pid > 0) ::kill(n.pid, SIGTERM);
  }
  for (auto& n : nodes_) {
    if (n.pid <= 0) continue;
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(n.pid, nullptr, WNOHANG) != 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(n.pid, SIGKILL);
    ::waitpid(n.pid, nullptr, WNOHANG);
  }
  nodes_.clear();
  g_n_children = 0;
  if (!work_.empty() && !a_.keep) {
    std::error_code ec;
    fs::remove_all(work_, ec);
  }
  g_workdir[0] = 0;
}

void RegisterDemo(CLI::App& root, Globals& g) {
  auto a = std::make_shared<DemoArgs>();
  a->data = "tests/data/moe";
  CLI::App* c = root.add_subcommand("demo", "Run a local swarm on loopback end to end: prepare, load with "
                                            "replication 2, shard map, distributed forward, failover");
  c->add_option("--nodes", a->nodes, "Node processes to start (3..16)")->check(CLI::Range(3, 16));
  c->add_option("--data", a->data, "Directory with the bundled tiny checkpoint (tests/data/moe)");
  c->add_flag("--keep", a->keep, "Keep the temp directory (node logs) after the run");
  c->add_option("--shape", a->shape,
                "Instead of the tiny checkpoint: random weights at this built-in model's shape "
                "(e.g. qwen3.5-122b-a10b; see `tenzro moe catalog-shape`)");
  c->add_option("--layers", a->layers, "With --shape: MoE layers to build (default 1)");
  c->add_option("--experts", a->experts, "With --shape: routed experts per layer (top-k..all; default 32)");
  c->add_option("--tokens", a->tokens, "With --shape: tokens per forward (default 16)");
  c->footer("Example: tenzro demo --nodes 4\n"
            "         tenzro demo --shape qwen3.5-122b-a10b --layers 1 --experts 32\n"
            "Exit code 0 when every check passed, 1 otherwise.");
  SetAction(c, g, [a] {
    Demo d(*a);
    return d.Run();
  });
}

}  // namespace

TENZRO_CLI_REGISTER(RegisterDemo);

}  // namespace tenzro::cli
