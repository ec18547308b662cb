// tenzro moe plan-dispatch (docs/dispatch.md): the per-holder batches the
// running node would dispatch for a set of routing decisions. The node
// plans (it knows the live declarations and the holder stats); this command
// reads the routings file and prints the answer. The distributed forward
// itself is `tenzro moe forward` without --local (moe_runtime_cmd.cc).
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/node_client.h"
#include "core/file.h"

namespace tenzro::cli {
namespace {

using nlohmann::json;

struct PlanArgs {
  std::string model, routings;
  bool json_out = false;
};

std::string Short(const std::string& id) { return id.size() > 12 ? id.substr(0, 12) + "…" : id; }

std::string Tokens(const json& t) {
  std::string s;
  for (size_t i = 0; i < t.size(); ++i) s += (i ? "," : "") + t[i].dump();
  return s;
}

void PrintPlan(const json& p) {
  fmt::print("plan for {}: {} tokens, {} batches, remote holders considered: {}, unheld experts: {}\n",
             p.value("model", ""), p.value("n_tokens", 0), p["batches"].size(), p.value("holders_considered", 0),
             p["unheld"].size());
  for (const json& b : p["batches"]) {
    const std::string transport = b.value("transport", "");
    const std::string id = b.value("node_id", "");
    if (transport == "local")
      fmt::print("\n{:<5}  {}  (this node)  {} rows\n", transport, Short(id), b.value("rows", 0));
    else
      fmt::print("\n{:<5}  {}  {}  {} rows, est {:.2f} ms\n", transport, Short(id), b.value("endpoint", ""),
                 b.value("rows", 0), b.value("estimated_ms", 0.0));
    for (const json& i : b["items"])
      fmt::print("    layer {} expert {:>4}: tokens {}\n", i.value("layer", 0), i.value("expert", 0),
                 Tokens(i["token_indices"]));
  }
  if (!p["unheld"].empty()) {
    fmt::print("\nunheld (no live holder):\n");
    for (const json& i : p["unheld"])
      fmt::print("    layer {} expert {:>4}: tokens {}{}\n", i.value("layer", 0), i.value("expert", 0),
                 Tokens(i["token_indices"]),
                 i.value("holders_banned", false) ? "  (its holders failed recently and are banned)" : "");
  }
}

Result<void> RunPlan(Globals& g, const PlanArgs& a) {
  TENZRO_TRY(std::string text, ReadTextFile(a.routings));
  json routings = json::parse(text, nullptr, false);
  if (routings.is_discarded()) return Error::InvalidArgument("{}: not valid JSON", a.routings);
  TENZRO_TRY(NodeClient node, ConnectToNode(g));
  auto r = node.Post("/v1/moe/plan-dispatch", {{"model", a.model}, {"routings", routings}});
  if (!r) return r.error().WithContext(a.routings);
  if (a.json_out) fmt::print("{}\n", r->dump(2));
  else PrintPlan(*r);
  return Ok();
}

void RegisterDispatch(CLI::App& root, Globals& g) {
  CLI::App* moe = Group(root, "moe");
  auto a = std::make_shared<PlanArgs>();
  CLI::App* c = moe->add_subcommand("plan-dispatch", "Show the per-holder batches a forward would dispatch");
  c->add_option("--model,--model-id", a->model, "Model id")->required();
  c->add_option("--routings", a->routings,
                "JSON file: [{\"token_index\": 0, \"experts\": [{\"layer\": 0, \"expert\": 5, \"weight\"?: 0.3}]}]")
      ->required();
  c->add_flag("--json", a->json_out, "Print the plan as JSON");
  c->footer("Example: tenzro moe plan-dispatch --model qwen3.5-397b-a17b --routings ./routings.json --json");
  SetAction(c, g, [&g, a] { return RunPlan(g, *a); });
}

}  // namespace

TENZRO_CLI_REGISTER(RegisterDispatch);

}  // namespace tenzro::cli
