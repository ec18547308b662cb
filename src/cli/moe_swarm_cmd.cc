// tenzro moe shard-map / rebalance, tenzro node peers: the swarm as this node
// sees it (docs/formats/declaration.md, docs/cli.md). Each asks the running
// node's admin API (node/swarm_service.h).
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/node_client.h"
#include "core/bytes.h"
#include "core/file.h"
#include "net/json_http.h"

#include <unistd.h>

namespace tenzro::cli {
namespace {

using nlohmann::json;

struct ShardMapArgs {
  std::string model, svg;
  bool json_out = false;
  int min_providers = 2;
  double hot_tps = 10;
};

struct RebalanceArgs {
  std::string model;
  bool apply = false, json_out = false;
  int min_providers = 2;
  double hot_tps = 10;
  int max = -1;
};

std::string Short(const std::string& id) { return id.size() > 12 ? id.substr(0, 12) : id; }

std::string UrlEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string ShardMapPath(const ShardMapArgs& a, bool svg) {
  return fmt::format("/v1/swarm/shard-map?model={}&min_providers={}&hot_tps={}{}", UrlEscape(a.model),
                     a.min_providers, a.hot_tps, svg ? "&format=svg" : "");
}

void PrintShardMap(const json& m) {
  fmt::print("model {}  coverage {}/{} experts  policy: >= {} providers, hot above {} tok/s\n",
             m.value("model", ""), m.value("covered_experts", 0), m.value("total_experts", 0),
             m.value("min_providers", 2), m.value("hot_tps", 10.0));
  for (const json& l : m["layers"]) {
    const double cov = l.value("n_expert", 0) ? 100.0 * l.value("covered", 0) / l.value("n_expert", 1) : 0;
    fmt::print("  layer {:>3}: {:>4}/{:<4} covered ({:5.1f}%)\n", l.value("layer", 0), l.value("covered", 0),
               l.value("n_expert", 0), cov);
  }
  fmt::print("holders ({}):\n", m["holders"].size());
  for (const json& h : m["holders"]) {
    std::string eps;
    for (const json& e : h["endpoints"]) eps += fmt::format(" {}={}", e.value("kind", ""), e.value("addr", ""));
    const uint64_t budget = h.value("memory_budget", uint64_t{0});
    fmt::print("  {}  {:<8} experts {:>4} gates {:>2} budget {} free {} load {:.1f} tok/s{}\n",
               Short(h.value("node_id", "")), h.value("state", ""), h.value("experts", 0), h.value("gates", 0),
               budget ? FormatBytes(budget) : std::string("unlimited"),
               budget ? FormatBytes(h.value("free_bytes", uint64_t{0})) : std::string("-"), h.value("tps", 0.0), eps);
  }
  auto list = [&](const char* key, const char* title) {
    const json& a = m[key];
    fmt::print("{} ({}):", title, a.size());
    size_t shown = 0;
    for (const json& e : a) {
      if (shown++ == 24) {
        fmt::print(" ...");
        break;
      }
      fmt::print(" L{}/E{}[{}]", e.value("layer", 0), e.value("expert", 0), e.value("replicas", 0));
    }
    fmt::print("\n");
  };
  list("under_replicated", "under-replicated");
  list("hot", "hot");
}

Result<void> RunShardMap(Globals& g, const ShardMapArgs& a) {
  TENZRO_TRY(NodeClient node, ConnectToNode(g));
  TENZRO_TRY(json m, node.Get(ShardMapPath(a, false)));
  if (!a.svg.empty()) {
    TENZRO_TRY(net::ClientResponse svg, node.http().Send("GET", ShardMapPath(a, true)));
    if (!svg.ok()) return net::ErrorFromHttp(svg.status, svg.body);
    TENZRO_CHECK_OK(WriteFileAtomic(a.svg, std::string_view(svg.body), 0644));
  }
  if (a.json_out) {
    fmt::print("{}\n", m.dump(2));
  } else {
    PrintShardMap(m);
    if (!a.svg.empty()) fmt::print("heatmap written to {}\n", a.svg);
  }
  return Ok();
}

Result<void> RunRebalance(Globals& g, const RebalanceArgs& a) {
  TENZRO_TRY(NodeClient node, ConnectToNode(g));
  json body = {{"model", a.model}, {"apply", a.apply}, {"min_providers", a.min_providers}, {"hot_tps", a.hot_tps}};
  if (a.max >= 0) body["max"] = a.max;
  if (a.apply && ::isatty(2)) fmt::print(stderr, "rebalancing {}: fetching and loading adopted experts...\n", a.model);
  TENZRO_TRY(json r, node.Post("/v1/moe/rebalance", body));
  if (a.json_out) {
    fmt::print("{}\n", r.dump(2));
    return Ok();
  }
  fmt::print("node {} model {}: {} to adopt, {} over budget, {} uncovered with no source\n",
             Short(r.value("node_id", "")), r.value("model", ""), r["adopt"].size(), r["skipped_budget"].size(),
             r["unavailable"].size());
  for (const json& x : r["adopt"])
    fmt::print("  adopt L{}/E{}  {:<16} replicas {}  {:.1f} tok/s  blob {}\n", x.value("layer", 0),
               x.value("expert", 0), x.value("reason", ""), x.value("replicas", 0), x.value("tps", 0.0),
               x.value("blob", "").substr(0, 16));
  if (r.contains("results")) {
    for (const json& x : r["results"]) {
      if (x.value("ok", false))
        fmt::print("  loaded L{}/E{} from {} [{}]\n", x.value("layer", 0), x.value("expert", 0),
                   x.value("fetched_from", "local store"), x.value("tier", ""));
      else
        fmt::print("  FAILED L{}/E{}: {}\n", x.value("layer", 0), x.value("expert", 0), x.value("error", ""));
    }
    fmt::print("{} loaded\n", r.value("loaded", 0));
  } else if (!r["adopt"].empty()) {
    fmt::print("(proposal only: run again with --apply to fetch and load)\n");
  }
  return Ok();
}

void RegisterSwarm(CLI::App& root, Globals& g) {
  CLI::App* moe = Group(root, "moe");

  auto sa = std::make_shared<ShardMapArgs>();
  CLI::App* s = moe->add_subcommand("shard-map", "Network-wide view of a model: coverage, replication, hot and "
                                                 "under-replicated experts, holders");
  s->add_option("--model,--model-id", sa->model, "Model id")->required();
  s->add_flag("--json", sa->json_out, "Print as JSON (stable field names, docs/formats/declaration.md)");
  s->add_option("--svg", sa->svg, "Also write the layers x experts replication heatmap to this SVG file");
  s->add_option("--min-providers", sa->min_providers, "Policy: distinct holders every expert should have")
      ->check(CLI::Range(1, 1000));
  s->add_option("--hot-tps", sa->hot_tps, "An expert is hot above this many served tokens/s (summed)")
      ->check(CLI::NonNegativeNumber);
  s->footer("Example: tenzro moe shard-map --model qwen3.5-122b-a10b --svg map.svg --min-providers 2");
  SetAction(s, g, [&g, sa] { return RunShardMap(g, *sa); });

  auto ra = std::make_shared<RebalanceArgs>();
  CLI::App* r = moe->add_subcommand("rebalance", "Propose (--apply: fetch and load) the experts this node should "
                                                 "adopt: uncovered, then under-replicated, then hot");
  r->add_option("--model,--model-id", ra->model, "Model id")->required();
  r->add_flag("--apply", ra->apply, "Fetch the proposed experts from their providers and load them");
  r->add_flag("--json", ra->json_out, "Print as JSON");
  r->add_option("--min-providers", ra->min_providers, "Replication policy")->check(CLI::Range(1, 1000));
  r->add_option("--hot-tps", ra->hot_tps, "Hot threshold in served tokens/s")->check(CLI::NonNegativeNumber);
  r->add_option("--max", ra->max, "Adopt at most this many experts")->check(CLI::NonNegativeNumber);
  r->footer("Example: tenzro moe rebalance --model qwen3.5-122b-a10b --apply");
  SetAction(r, g, [&g, ra] { return RunRebalance(g, *ra); });
}

}  // namespace

TENZRO_CLI_REGISTER(RegisterSwarm);

}  // namespace tenzro::cli
