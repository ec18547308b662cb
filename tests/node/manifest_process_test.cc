// The poisoned-expert attack of issue 18, run by real node processes on
// loopback, against a node in manifest mode.
//
// P prepares layer 0 of the tiny model; its prepare job publishes the
// model's signed manifest (hash H). C, a stranger, holds and declares a
// poisoned copy of expert 0/3 (the genuine mini-GGUF with its last bytes
// XORed: it decodes and loads as expert 0/3). B runs with --trust-manifest H
// and no catalog entry for the model. Asserted:
//   - an open-mode node (D) sees C's declaration: the attack is real;
//   - B's shard map never lists C (declarations outside the manifest are
//     ignored), and `rebalance --apply` on B adopts the genuine expert 0/3;
//   - B refuses to load C's blob by URI (before fetching a byte) and from a
//     file, with an error naming the manifest; B's store never holds it;
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "blob/blake3.h"
#include "core/file.h"
#include "testutil/node_process.h"

namespace tenzro::testing {
namespace {

using nlohmann::json;

// The tiny checkpoint under an id no built-in table knows: B, which has no
// catalog entry for it, learns its shape from the manifest alone.
constexpr const char* kModel = "tiny-custom-moe";

json AdminGet(const RunningNode& n, const std::string& path) {
  net::HttpClient c = n.Admin();
  auto r = c.Send("GET", path);
  if (!r || !r->ok()) return json();
  return json::parse(r->body, nullptr, false);
}

// Holders of (layer, expert) in n's shard map, with the blob each declared.
std::map<std::string, std::string> HoldersOf(const RunningNode& n, int layer, int expert) {
  std::map<std::string, std::string> out;
  json decls = AdminGet(n, std::string("/v1/swarm/declarations?model=") + kModel);
  if (!decls.is_object() || !decls.contains("declarations")) return out;
  for (const json& d : decls["declarations"])
    for (const json& e : d.value("experts", json::array()))
      if (e.value("layer", -1) == layer && e.value("expert", -1) == expert)
        out[d.value("node_id", "")] = e.value("blob", "");
  return out;
}

TEST(ManifestProcessTest, APoisonedExpertIsNeverAdoptedUsedOrListedByANodeInManifestMode) {
  TempDir tmp;
  const std::vector<std::string> swarm = {"--swarm-refresh-ms", "500", "--swarm-ttl-s", "5"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = swarm;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  NodeOptions po;
  po.run_args = with({});
  RunningNode p = StartNode(tmp.Join("p"), po);
  ASSERT_TRUE(p.running());
  const std::string boot = "127.0.0.1:" + std::to_string(p.node_json["dht_port"].get<int>());
  const json result = PrepareTinyLayer(p, kModel, 0);
  ASSERT_TRUE(result.is_object());
  ASSERT_TRUE(result.contains("manifest")) << result.dump();
  const std::string manifest = result["manifest"]["hash"].get<std::string>();
  // Publishing again gives the same manifest (same blobs, same key).
  json again = p.CliJson({"moe", "publish-manifest", "--model", kModel, "--json"});
  EXPECT_EQ(again["hash"], manifest) << again.dump();
  EXPECT_EQ(again["experts"], 8);
  EXPECT_EQ(again["gates"], 1);
  EXPECT_EQ(again["shape"], true);
  std::string genuine3, gate_uri;
  for (const json& e : result["experts"])
    if (e["expert"] == 3) genuine3 = e["hash"].get<std::string>();
  gate_uri = result["gate"]["uri"].get<std::string>();
  ASSERT_EQ(genuine3.size(), 64u);

  // C: a poisoned copy of expert 0/3, loaded from a file and declared.
  auto genuine_bytes = ReadFile(tmp.Join("p") + "/blobs/" + genuine3 + ".data", 64 << 20);
  ASSERT_TRUE(genuine_bytes) << genuine_bytes.error().ToString();
  std::string poisoned(genuine_bytes->begin(), genuine_bytes->end());
  for (size_t i = poisoned.size() - 512; i < poisoned.size(); ++i) poisoned[i] ^= 0x24;
  const std::string poisoned_path = tmp.Join("poisoned.gguf");
  { std::ofstream(poisoned_path, std::ios::binary) << poisoned; }
  const std::string poisoned_hash =
      blob::Blake3(ByteSpan(reinterpret_cast<const uint8_t*>(poisoned.data()), poisoned.size())).ToHex();
  NodeOptions co;
  co.run_args = with({"--bootstrap", boot});
  RunningNode c = StartNode(tmp.Join("c"), co);
  ASSERT_TRUE(c.running());
  json lc = c.CliJson({"moe", "load-expert", "--model", kModel, "--layer", "0", "--expert", "3", "--file",
                       poisoned_path, "--json"});
  ASSERT_EQ(lc.value("blob", ""), poisoned_hash) << lc.dump();
  const std::string c_id = c.node_json["node_id"].get<std::string>();

  // D (open mode) sees the poisoned declaration: the attack reaches a node
  // that trusts no manifest.
  RunningNode d = StartNode(tmp.Join("d"), co);
  ASSERT_TRUE(d.running());
  ASSERT_TRUE(WaitFor([&] { return HoldersOf(d, 0, 3)[c_id] == poisoned_hash; }, std::chrono::seconds(20)));

  // B trusts the manifest; it finds it through the swarm (P provides it).
  NodeOptions bo;
  bo.run_args = with({"--bootstrap", boot, "--trust-manifest", manifest});
  RunningNode b = StartNode(tmp.Join("b"), bo);
  ASSERT_TRUE(b.running());
  json status;
  ASSERT_TRUE(WaitFor([&] {
    status = b.CliJson({"moe", "manifest-status", "--json"});
    return status.is_object() && status["manifests"].size() == 1;
  }, std::chrono::seconds(30))) << status.dump();
  EXPECT_EQ(status["mode"], "manifest");
  EXPECT_EQ(status["manifests"][0]["hash"], manifest);
  EXPECT_EQ(status["manifests"][0]["publisher"], p.node_json["node_id"]);

  // Loading C's blob by URI is refused before anything is fetched.
  RunResult by_uri = b.Cli({"moe", "load-expert", "--model", kModel, "--layer", "0", "--expert", "3", "--file",
                            "tenzro://blob/" + poisoned_hash, "--from", c.http_url()});
  EXPECT_NE(by_uri.exit_code, 0);
  EXPECT_NE(by_uri.err.find("is not in the trusted manifest of model 'tiny-custom-moe'"), std::string::npos)
      << by_uri.err;
  // ... and so is the same expert from a file (by its content).
  RunResult by_file =
      b.Cli({"moe", "load-expert", "--model", kModel, "--layer", "0", "--expert", "3", "--file", poisoned_path});
  EXPECT_NE(by_file.exit_code, 0);
  EXPECT_NE(by_file.err.find("not in the trusted manifest"), std::string::npos) << by_file.err;
  // A blob of the manifest in the wrong place is refused too (expert 3's blob as expert 4).
  RunResult misplaced = b.Cli({"moe", "load-expert", "--model", kModel, "--layer", "0", "--expert", "4", "--file",
                               "tenzro://blob/" + genuine3});
  EXPECT_NE(misplaced.exit_code, 0);
  json blobs = AdminGet(b, "/v1/blobs");
  for (const json& bl : blobs["blobs"]) EXPECT_NE(bl["hash"], poisoned_hash);

  // The gate by URI (in the manifest) loads, with the manifest's shape.
  json lg = b.CliJson({"moe", "load-gate", "--model", kModel, "--layer", "0", "--file", gate_uri, "--json"});
  EXPECT_EQ(lg.value("blob", ""), result["gate"]["hash"]) << lg.dump();
  EXPECT_EQ(lg.value("shape_source", ""), "manifest") << lg.dump();

  // B's view of the swarm never lists C, whatever C keeps declaring; the
  // rebalance adopts the genuine expert 0/3 (offered by P).
  std::this_thread::sleep_for(std::chrono::seconds(1));  // C has re-published at least once
  EXPECT_EQ(HoldersOf(b, 0, 3).count(c_id), 0u);
  json plan = b.CliJson({"moe", "rebalance", "--model", kModel, "--apply", "--json"});
  ASSERT_TRUE(plan.is_object()) << plan.dump();
  const std::string b_id = b.node_json["node_id"].get<std::string>();
  std::map<std::string, std::string> holders;
  EXPECT_TRUE(WaitFor([&] {
    holders = HoldersOf(b, 0, 3);
    return holders.count(b_id) == 1;
  }, std::chrono::seconds(10))) << plan.dump();
  EXPECT_EQ(holders[b_id], genuine3) << plan.dump();
  EXPECT_EQ(holders.count(c_id), 0u);
  // B's shard map: the manifest's shape, C nowhere.
  json map = AdminGet(b, std::string("/v1/swarm/shard-map?model=") + kModel);
  EXPECT_EQ(map.value("shape_source", ""), "manifest") << map.dump();
  for (const json& e : map["experts"])
    for (const json& h : e["holders"]) EXPECT_NE(h, c_id) << map.dump();
  for (const json& h : map["holders"])
    if (h["node_id"] == c_id) {
      EXPECT_EQ(h["experts"], 0) << map.dump();  // declared, nothing accepted
    }
}

}  // namespace
}  // namespace tenzro::testing
