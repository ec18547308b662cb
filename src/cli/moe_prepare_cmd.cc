// tenzro moe prepare-experts / prepare-dense / prepare-status (docs/cli.md).
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/node_client.h"
#include "cli/progress.h"
#include "core/file.h"
#include "net/json_http.h"

namespace tenzro::cli {
namespace {

using nlohmann::json;

struct PrepareArgs {
  std::string model_id, experts = "all", quant, quant_json, checkpoint;
  int layer = 0;
  bool gate = false, wait = false, json_out = false;
};

struct DenseArgs {
  std::string model_id, quant, checkpoint;
  bool wait = false, json_out = false;
};

struct StatusArgs {
  std::string job_id;
  bool wait = false, json_out = false;
};

std::string Field(const json& j, const char* key) {
  if (!j.contains(key)) return "";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

void PrintJobHuman(const json& job) {
  fmt::print("job {}  {}  state: {}", Field(job, "id"), Field(job, "kind"), Field(job, "state"));
  if (job.contains("progress"))
    fmt::print("  progress: {}/{}", Field(job["progress"], "done"), Field(job["progress"], "total"));
  fmt::print("\n");
  if (job.contains("error") && !job["error"].is_null())
    fmt::print("error: {}: {}\n", Field(job["error"], "code"), Field(job["error"], "message"));
  const json& r = job.value("result", json());
  if (!r.is_object()) return;
  if (Field(job, "kind") == "moe.prepare-dense") {
    fmt::print("model {}  spine of {}  quant {}\n", Field(r, "model_id"), Field(r, "checkpoint"), Field(r, "quant"));
    fmt::print("{}\n", Field(r, "uri"));
    fmt::print("  spine {} bytes ({} tensors; {} converted)  checkpoint {} bytes  routed experts {} bytes ({} tensors)\n",
               Field(r, "bytes"), Field(r, "tensors"), r.value("converted", json::array()).size(),
               Field(r, "checkpoint_bytes"), Field(r, "expert_bytes"), Field(r, "dropped_tensors"));
    if (r.contains("manifest")) fmt::print("manifest {}\n", Field(r["manifest"], "hash"));
    return;
  }
  fmt::print("model {}  layer {}/{}  checkpoint {}\n", Field(r, "model_id"), Field(r, "layer"), Field(r, "n_layer"),
             Field(r, "checkpoint"));
  for (const json& e : r.value("experts", json::array())) {
    fmt::print("  expert {:>4}  {}  {} bytes\n", Field(e, "expert"), Field(e, "uri"), Field(e, "bytes"));
    for (const char* p : {"gate", "up", "down"}) {
      const json& pj = e["projections"][p];
      const json& s = pj["source"];
      fmt::print("      {:<4} {:<5} {:>9} B  <- {} [{}+{}] {}{}\n", p, Field(pj, "format"), Field(pj, "bytes"),
                 Field(s, "tensor"), Field(s, "offset"), Field(s, "bytes"), Field(s, "format"),
                 s.value("byte_range_copy", false) ? " (byte-range copy)" : " (requantized)");
    }
  }
  if (r.contains("gate")) fmt::print("  gate         {}  {} bytes\n", Field(r["gate"], "uri"), Field(r["gate"], "bytes"));
  if (r.contains("manifest"))
    fmt::print("manifest {}  (every blob this node prepared of the model, signed; holders trust it with "
               "--trust-manifest)\n",
               Field(r["manifest"], "hash"));
}

// Waits until the job finished (done or failed) and returns its record.
Result<json> WaitWithBar(NodeClient& node, const std::string& id) {
  {
    ProgressBar bar("preparing");
    json last;
    auto waited = node.WaitJob(id, std::chrono::hours(24), [&](const json& job) {
      last = job;
      if (job.contains("progress"))
        bar.Update(job["progress"].value("done", 0ull), job["progress"].value("total", 0ull),
                   job["progress"].value("message", std::string()));
    });
    if (waited) return *waited;
    if (last.value("state", "") != "failed") {
      // Not the job's own failure (timeout, node gone): report that.
      auto again = node.Get("/v1/jobs/" + id);
      if (!again || again->value("state", "") != "failed") return waited.error();
    }
  }
  return node.Get("/v1/jobs/" + id);
}

// Prints the job; a failed job is an error with the job's own code.
Result<void> PrintJob(const json& job, bool json_out) {
  if (json_out) fmt::print("{}\n", job.dump(2));
  else PrintJobHuman(job);
  if (job.value("state", "") == "failed" && job.contains("error") && job["error"].is_object()) {
    const json& e = job["error"];
    ErrorCode code = net::ErrorCodeFromName(e.value("code", std::string())).value_or(ErrorCode::kInternal);
    return Error(code, "job " + job.value("id", std::string()) + " failed: " + e.value("message", std::string()));
  }
  return Ok();
}

Result<void> RunPrepare(Globals& g, const PrepareArgs& a) {
  json body = {{"model_id", a.model_id}, {"layer", a.layer}, {"experts", a.experts}, {"gate", a.gate}};
  if (!a.quant.empty()) body["quant"] = a.quant;
  if (!a.quant_json.empty()) {
    std::string text = a.quant_json;
    if (text.find('{') == std::string::npos) {
      auto file = ReadTextFile(a.quant_json, 1 << 20);
      if (!file) return file.error().WithContext("--quant-json");
      text = *file;
    }
    body["quant_json"] = text;
  }
  if (!a.checkpoint.empty()) body["checkpoint"] = a.checkpoint;
  TENZRO_TRY(NodeClient node, ConnectToNode(g));
  TENZRO_TRY(json started, node.Post("/v1/moe/prepare", body));
  if (!a.wait) {
    fmt::print("{}\n", started.dump(2));
    return Ok();
  }
  std::string id = started.value("job_id", "");
  fmt::print(stderr, "job {} started\n", id);
  TENZRO_TRY(json job, WaitWithBar(node, id));
  return PrintJob(job, a.json_out);
}

Result<void> RunDense(Globals& g, const DenseArgs& a) {
  json body = {{"model_id", a.model_id}};
  if (!a.quant.empty()) body["quant"] = a.quant;
  if (!a.checkpoint.empty()) body["checkpoint"] = a.checkpoint;
  TENZRO_TRY(NodeClient node, ConnectToNode(g));
  TENZRO_TRY(json started, node.Post("/v1/moe/prepare-dense", body));
  if (!a.wait) {
    fmt::print("{}\n", started.dump(2));
    return Ok();
  }
  std::string id = started.value("job_id", "");
  fmt::print(stderr, "job {} started\n", id);
  TENZRO_TRY(json job, WaitWithBar(node, id));
  return PrintJob(job, a.json_out);
}

struct ManifestArgs {
  std::string model_id;
  bool json_out = false;
};

Result<void> RunPublishManifest(Globals& g, const ManifestArgs& a) {
  TENZRO_TRY(NodeClient node, ConnectToNode(g));
  TENZRO_TRY(json m, node.Post("/v1/moe/publish-manifest", json{{"model", a.model_id}}));
  if (a.json_out) {
    fmt::print("{}\n", m.dump(2));
    return Ok();
  }
  fmt::print("manifest of {}: {}\n  {} experts, {} gates, {} spines{}; signed by {}\n", Field(m, "model"),
             Field(m, "hash"), Field(m, "experts"), Field(m, "gates"), Field(m, "spines"),
             m.value("shape", false) ? ", with the shape" : "", Field(m, "publisher"));
  fmt::print("holders: tenzro node run ... --trust-manifest {}\n", Field(m, "hash"));
  return Ok();
}

Result<void> RunManifestStatus(Globals& g, const ManifestArgs& a) {
  TENZRO_TRY(NodeClient node, ConnectToNode(g));
  TENZRO_TRY(json s, node.Get("/v1/moe/manifest"));
  if (a.json_out) {
    fmt::print("{}\n", s.dump(2));
    return Ok();
  }
  fmt::print("mode: {}\n", Field(s, "mode"));
  for (const json& m : s.value("manifests", json::array()))
    fmt::print("  {}  model {}  {} experts {} gates {} spines  publisher {}\n", Field(m, "hash"), Field(m, "model"),
               Field(m, "experts"), Field(m, "gates"), Field(m, "spines"), Field(m, "publisher"));
  for (const json& h : s.value("pending", json::array())) fmt::print("  {}  (not loaded yet)\n", h.get<std::string>());
  for (const json& p : s.value("publishers", json::array())) fmt::print("  publisher {}\n", p.get<std::string>());
  if (s.contains("last_error")) fmt::print("last error: {}\n", Field(s, "last_error"));
  return Ok();
}

Result<void> RunStatus(Globals& g, const StatusArgs& a) {
  TENZRO_TRY(NodeClient node, ConnectToNode(g));
  json job;
  if (a.wait) {
    TENZRO_TRY(job, WaitWithBar(node, a.job_id));
  } else {
    TENZRO_TRY(job, node.Get("/v1/jobs/" + a.job_id));
  }
  return PrintJob(job, a.json_out);
}

void RegisterPrepare(CLI::App& root, Globals& g) {
  CLI::App* moe = Group(root, "moe");
  auto pa = std::make_shared<PrepareArgs>();
  CLI::App* p = moe->add_subcommand("prepare-experts",
                                    "Slice a layer's experts out of the catalog checkpoint, quantize, publish as blobs");
  p->add_option("--model-id,--model", pa->model_id, "Model id (catalog entry)")->required();
  p->add_option("--layer", pa->layer, "Layer index")->required()->check(CLI::NonNegativeNumber);
  p->add_option("--experts", pa->experts, "Experts: 1,2,5 or 0-7 or all (default all)");
  p->add_option("--quant", pa->quant, "Preset for all projections: q4_k_m, q8_0, q4_k, q5_k, q6_k, f16, bf16, f32");
  p->add_option("--quant-json", pa->quant_json,
                "Per-projection formats: a file (or inline JSON) {\"gate\":\"q4_k\",\"up\":\"q4_k\",\"down\":\"q6_k\"}");
  p->add_option("--checkpoint", pa->checkpoint, "Checkpoint path (default: the catalog entry)");
  p->add_flag("--gate", pa->gate, "Also publish the layer's router and shared expert as a gate blob");
  p->add_flag("--wait", pa->wait, "Wait for the job, showing progress");
  p->add_flag("--json", pa->json_out, "With --wait: print the finished job as JSON");
  p->footer("Example: tenzro moe prepare-experts --model-id qwen3.5-397b-a17b --layer 0 --experts 1,2,5 --quant q4_k_m");
  SetAction(p, g, [&g, pa] { return RunPrepare(g, *pa); });

  auto da = std::make_shared<DenseArgs>();
  CLI::App* d = moe->add_subcommand(
      "prepare-dense", "Publish the model's spine (every tensor but the routed experts, all metadata) as one GGUF blob");
  d->add_option("--model-id,--model", da->model_id, "Model id (catalog entry)")->required();
  d->add_option("--quant", da->quant,
                "2-D weight matrices as: none (stored types, default), f32, f16, bf16, q8_0, q4_k, q5_k, q6_k");
  d->add_option("--checkpoint", da->checkpoint, "GGUF checkpoint path (default: the catalog entry)");
  d->add_flag("--wait", da->wait, "Wait for the job, showing progress, then print the blob URI and sizes");
  d->add_flag("--json", da->json_out, "With --wait: print the finished job as JSON");
  d->footer("Example: tenzro moe prepare-dense --model-id qwen3.5-397b-a17b --wait");
  SetAction(d, g, [&g, da] { return RunDense(g, *da); });

  auto sa = std::make_shared<StatusArgs>();
  CLI::App* s = moe->add_subcommand("prepare-status", "Show a preparation job: state, progress, published blobs");
  s->add_option("--job-id", sa->job_id, "Job id printed by prepare-experts or prepare-dense")->required();
  s->add_flag("--wait", sa->wait, "Wait until the job finishes, showing progress");
  s->add_flag("--json", sa->json_out, "Print the job as JSON");
  s->footer("Example: tenzro moe prepare-status --job-id 3f2a9c0d41e7b655 --wait");
  SetAction(s, g, [&g, sa] { return RunStatus(g, *sa); });

  auto ma = std::make_shared<ManifestArgs>();
  CLI::App* pm = moe->add_subcommand(
      "publish-manifest",
      "Sign and publish the model's manifest: every expert, gate and spine blob this node prepared, by hash");
  pm->add_option("--model-id,--model", ma->model_id, "Model id")->required();
  pm->add_flag("--json", ma->json_out, "Print the answer as JSON");
  pm->footer("Example: tenzro moe publish-manifest --model qwen3.5-397b-a17b   (then holders run with --trust-manifest HASH)");
  SetAction(pm, g, [&g, ma] { return RunPublishManifest(g, *ma); });
  CLI::App* ms = moe->add_subcommand("manifest-status", "Show the manifests this node trusts (manifest mode) or open mode");
  ms->add_flag("--json", ma->json_out, "Print the status as JSON");
  SetAction(ms, g, [&g, ma] { return RunManifestStatus(g, *ma); });
}

}  // namespace

TENZRO_CLI_REGISTER(RegisterPrepare);

}  // namespace tenzro::cli
