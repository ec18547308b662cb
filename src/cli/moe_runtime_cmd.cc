// tenzro moe load-expert / load-gate / status / forward [--local]
// (docs/runtime.md; the distributed forward: docs/dispatch.md). Each command asks the running node (admin API) to do
// the work; files are named by absolute path, so relative --file arguments
// are made absolute here.
#include <fmt/core.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/node_client.h"
#include "core/bytes.h"
#include "core/file.h"
#include "node/runtime_service.h"

namespace tenzro::cli {
namespace {

using nlohmann::json;

struct LoadArgs {
  std::string model, file, from;
  int layer = 0, expert = 0;
  bool json_out = false;
};

struct StatusArgs {
  bool json_out = false;
};

struct ForwardArgs {
  std::string model, hidden, out;
  int64_t d_model = 0;
  int layer = -1;
  bool local = false, json_out = false, verbose = false;
  std::string on_missing = "fail", wire_dtype = "bf16";
  int timeout_ms = 0;
};

std::string Absolute(const std::string& file) {
  if (file.rfind("tenzro://", 0) == 0 || file.empty() || file[0] == '/') return file;
  std::error_code ec;
  auto p = std::filesystem::absolute(file, ec);
  return ec ? file : p.lexically_normal().string();
}

std::string S(const json& j, const char* key) {
  if (!j.contains(key)) return "";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

void PrintLoad(const json& r) {
  if (r.value("kind", "") == "gate")
    fmt::print("loaded gate of {} layer {}: {} experts, top-{}, {}, {} bytes [{}]{}\n", S(r, "model"), S(r, "layer"),
               S(r, "n_expert"), S(r, "n_expert_used"), S(r, "formats"), S(r, "bytes"), S(r, "tier"),
               r.value("shared_expert", false) ? " with shared expert" : "");
  else
    fmt::print("loaded expert {}/{}/{}: {} ({}), {} bytes [{}]\n", S(r, "model"), S(r, "layer"), S(r, "expert"),
               S(r, "formats"), S(r, "source"), S(r, "bytes"), S(r, "tier"));
  if (r.contains("fetched_from")) fmt::print("  fetched {} bytes from {}\n", S(r, "fetched_bytes"), S(r, "fetched_from"));
  fmt::print("  shape from: {}   stored at: {}\n", S(r, "shape_source"), S(r, "path"));
  if (r.contains("note")) fmt::print("  note: {}\n", S(r, "note"));
}

Result<void> RunLoad(Globals& g, const LoadArgs& a, bool gate) {
  json body = {{"model", a.model}, {"layer", a.layer}, {"file", Absolute(a.file)}};
  if (!gate) body["expert"] = a.expert;
  if (!a.from.empty()) body["from"] = a.from;
  TENZRO_TRY(NodeClient node, ConnectToNode(g));
  TENZRO_TRY(json r, node.Post(gate ? "/v1/moe/load-gate" : "/v1/moe/load-expert", body));
  if (a.json_out) fmt::print("{}\n", r.dump(2));
  else PrintLoad(r);
  return Ok();
}

void PrintStatus(const json& s) {
  const json& m = s["memory"];
  fmt::print("memory budget: {}   warm: {} ({} bytes, {} pinned)   cold tier: {} bytes   gates: {} bytes\n",
             S(m, "budget"), FormatBytes(m.value("warm_bytes", 0ull)), S(m, "warm_bytes"), S(m, "pinned_bytes"),
             S(m, "cold_bytes"), S(m, "gate_bytes"));
  const json& c = s["counters"];
  fmt::print("cache: {} hits, {} waited for a prefetch, {} misses, {} promotions, {} demotions, {} prefetches\n",
             S(c, "hits"), S(c, "prefetch_waits"), S(c, "misses"), S(c, "promotions"), S(c, "demotions"),
             S(c, "prefetches"));
  const json& cp = s["compute"];
  fmt::print("compute: {} ({}; cpu features: {}), {} threads\nGPU: {}\n", S(cp, "backend"), S(cp, "isa"),
             S(cp, "cpu_features"), S(cp, "threads"), S(cp, "gpu"));
  fmt::print("\n{:<24} {:>5} {:>6}  {:<5} {:>10}  {:<18} {:>6}\n", "MODEL", "LAYER", "EXPERT", "TIER", "BYTES",
             "FORMATS", "HITS");
  for (const json& gt : s["gates"])
    fmt::print("{:<24} {:>5} {:>6}  {:<5} {:>10}  {}\n", S(gt, "model"), S(gt, "layer"), "gate", S(gt, "tier"),
               S(gt, "bytes"), S(gt, "formats"));
  for (const json& e : s["experts"])
    fmt::print("{:<24} {:>5} {:>6}  {:<5} {:>10}  {:<18} {:>6}\n", S(e, "model"), S(e, "layer"), S(e, "expert"),
               S(e, "tier"), S(e, "bytes"), S(e, "formats"), S(e, "hits"));
  if (s["experts"].empty() && s["gates"].empty()) fmt::print("(no experts or gates loaded)\n");
}

Result<void> RunStatus(Globals& g, const StatusArgs& a) {
  TENZRO_TRY(NodeClient node, ConnectToNode(g));
  TENZRO_TRY(json s, node.Get("/v1/moe/status"));
  // Who and where the node is: its id and QUIC endpoint (ALPNs served).
  if (auto info = node.Get("/v1/node/info"); info && info->is_object())
    for (const char* k : {"node_id", "quic"})
      if (info->contains(k)) s[k] = (*info)[k];
  if (a.json_out) fmt::print("{}\n", s.dump(2));
  else PrintStatus(s);
  return Ok();
}

// The distributed forward's stages and holders (docs/dispatch.md).
void PrintStages(const json& r) {
  const json& st = r["stages"];
  fmt::print("stages: gate {:.3f} ms, shared {:.3f} ms, plan {:.3f} ms, exec {:.3f} ms, combine {:.3f} ms, total "
             "{:.3f} ms ({} round{})\n",
             st.value("gate_ms", 0.0), st.value("shared_ms", 0.0), st.value("plan_ms", 0.0), st.value("exec_ms", 0.0),
             st.value("combine_ms", 0.0), st.value("total_ms", 0.0), S(st, "rounds"),
             st.value("rounds", 1) == 1 ? "" : "s");
  for (const json& h : r["holders"]) {
    const std::string id = h.value("node_id", "");
    fmt::print("  {:<5} {:<13} {:<26} {:>3} experts {:>5} rows  rtt {:8.3f} ms  compute {:8.3f} ms  network "
               "{:8.3f} ms{}\n",
               S(h, "transport"), id.substr(0, 12), h.value("endpoint", ""), S(h, "experts"), S(h, "rows"),
               h.value("rtt_ms", 0.0), h.value("compute_ms", 0.0), h.value("network_ms", 0.0),
               h.contains("error") ? "  FAILED: " + h["error"].get<std::string>() : "");
  }
  for (const json& d : r["dropped"])
    fmt::print("dropped (renormalized): layer {} expert {} tokens {}: {}\n", S(d, "layer"), S(d, "expert"),
               d["token_indices"].dump(), S(d, "reason"));
  if (!r["tokens_without_experts"].empty())
    fmt::print("tokens left with no routed expert: {}\n", r["tokens_without_experts"].dump());
}

Result<void> RunForward(Globals& g, const ForwardArgs& a) {
  if (a.d_model <= 0) return Error::InvalidArgument("--d-model must be positive");
  TENZRO_TRY(Bytes hidden, ReadFile(a.hidden));
  const uint64_t row = static_cast<uint64_t>(a.d_model) * 4;
  if (hidden.empty() || hidden.size() % row != 0)
    return Error::InvalidArgument("{}: {} bytes is not a whole number of tokens of d_model {} float32 ({} bytes each)",
                                  a.hidden, hidden.size(), a.d_model, row);
  const int64_t n_tok = static_cast<int64_t>(hidden.size() / row);
  json body = {{"model", a.model},
               {"d_model", a.d_model},
               {"n_tokens", n_tok},
               {"hidden_f32_b64", node::Base64Encode(ByteSpan(hidden))}};
  if (a.layer >= 0) body["layer"] = a.layer;
  if (!a.local) {
    body["on_missing"] = a.on_missing;
    body["wire_dtype"] = a.wire_dtype;
    if (a.timeout_ms > 0) body["timeout_ms"] = a.timeout_ms;
  }
  TENZRO_TRY(NodeClient node, ConnectToNode(g));
  TENZRO_TRY(json r, node.Post(a.local ? "/v1/moe/forward" : "/v1/moe/forward-distributed", body));
  TENZRO_TRY(Bytes out, node::Base64Decode(r.value("output_f32_b64", "")));
  if (out.size() != hidden.size())
    return Error::Corruption("node answered {} output bytes for {} input bytes", out.size(), hidden.size());
  TENZRO_CHECK_OK(WriteFileAtomic(a.out, ByteSpan(out)));
  r.erase("output_f32_b64");
  r["out"] = a.out;
  if (a.json_out) {
    fmt::print("{}\n", r.dump(2));
    return Ok();
  }
  fmt::print("{} layer {}: {} tokens x {} -> {} ({}{:.2f} ms{})\n", S(r, "model"), S(r, "layer"), n_tok, a.d_model,
             a.out, a.local ? "" : "distributed, ", r.value("elapsed_ms", 0.0),
             r.value("shared_expert", false) ? ", with shared expert" : "");
  if (!a.local) {
    PrintStages(r);
    if (!a.verbose) return Ok();
  }
  for (const json& t : r["routing"]) {
    std::string ex;
    for (const json& e : t["experts"]) ex += fmt::format(" {}:{:.4f}", S(e, "expert"), e.value("weight", 0.0));
    fmt::print("  token {:>4}:{}\n", S(t, "token_index"), ex);
  }
  if (!r.contains("cache")) return Ok();
  const json& c = r["cache"];
  fmt::print("cache: {} hits, {} waited for a prefetch, {} misses, {} promotions, {} demotions\n", S(c, "hits"),
             S(c, "prefetch_waits"), S(c, "misses"), S(c, "promotions"), S(c, "demotions"));
  return Ok();
}

void RegisterRuntime(CLI::App& root, Globals& g) {
  CLI::App* moe = Group(root, "moe");

  for (bool gate : {false, true}) {
    auto a = std::make_shared<LoadArgs>();
    CLI::App* c = moe->add_subcommand(gate ? "load-gate" : "load-expert",
                                      gate ? "Load a layer's router (and shared expert) into the node's runtime"
                                           : "Load one expert's gate/up/down projections into the node's runtime");
    c->add_option("--model,--model-id", a->model, "Model id")->required();
    c->add_option("--layer", a->layer, "Layer index")->required()->check(CLI::NonNegativeNumber);
    if (!gate) c->add_option("--expert", a->expert, "Expert index")->required()->check(CLI::NonNegativeNumber);
    c->add_option("--file", a->file,
                  "A safetensors file, an expert mini-GGUF, or tenzro://blob/<hash> (from prepare-status)")
        ->required();
    c->add_option("--from", a->from, "Peer to fetch a blob from (http://host:port); default: the URI's http=, else the swarm's providers, fastest first");
    c->add_flag("--json", a->json_out, "Print the node's answer as JSON");
    c->footer(gate ? "Example: tenzro moe load-gate --model qwen3.5-397b-a17b --layer 0 --file ./l0-router.safetensors"
                   : "Example: tenzro moe load-expert --model qwen3.5-397b-a17b --layer 0 --expert 1 "
                     "--file ./l0-e1.safetensors");
    SetAction(c, g, [&g, a, gate] { return RunLoad(g, *a, gate); });
  }

  auto sa = std::make_shared<StatusArgs>();
  CLI::App* s = moe->add_subcommand("status", "Show resident experts and gates, tiers, memory budget, compute backend");
  s->add_flag("--json", sa->json_out, "Print as JSON (stable field names, docs/runtime.md)");
  s->footer("Example: tenzro moe status --json");
  SetAction(s, g, [&g, sa] { return RunStatus(g, *sa); });

  auto fa = std::make_shared<ForwardArgs>();
  CLI::App* f = moe->add_subcommand(
      "forward", "Run a MoE layer on a hidden state: gate here, experts on their holders (--local: all on this node)");
  f->add_option("--model,--model-id", fa->model, "Model id")->required();
  f->add_option("--hidden", fa->hidden, "Input: n_tokens x d_model little-endian float32")->required();
  f->add_option("--d-model", fa->d_model, "Hidden size (the model's n_embd)")->required();
  f->add_option("--out", fa->out, "Output file (same layout; written atomically)")->required();
  f->add_option("--layer", fa->layer, "Layer (default: the only layer with a gate loaded)")
      ->check(CLI::NonNegativeNumber);
  f->add_flag("--local", fa->local, "Compute on this node with its cached experts");
  f->add_option("--on-missing", fa->on_missing,
                "fail: an expert no holder computed fails the forward; renormalize: drop it and renormalise the "
                "token's gate weights over the experts that answered")
      ->check(CLI::IsMember({"fail", "renormalize"}));
  f->add_option("--wire-dtype", fa->wire_dtype,
                "Rows sent to remote holders as bf16 (default), f32 (exact), f16 or q8_0 (d_model a multiple of 32)")
      ->check(CLI::IsMember({"f32", "bf16", "f16", "q8_0"}));
  f->add_option("--timeout-ms", fa->timeout_ms, "Deadline per holder call (default 10000)")
      ->check(CLI::PositiveNumber);
  f->add_flag("--json", fa->json_out, "Print routing, stages and holders (or cache counters) as JSON");
  f->add_flag("--verbose,-v", fa->verbose, "Also print each token's routing");
  f->footer("Example: tenzro moe forward --model qwen3.5-397b-a17b --hidden ./hidden.f32 --d-model 4096 --layer 0 "
            "--out ./out.f32 [--local | --on-missing renormalize]");
  SetAction(f, g, [&g, fa] { return RunForward(g, *fa); });
}

}  // namespace

TENZRO_CLI_REGISTER(RegisterRuntime);

}  // namespace tenzro::cli
