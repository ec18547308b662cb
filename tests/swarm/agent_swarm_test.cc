// Sixteen agents in one process over the real OpenDHT on loopback (each its
// own identity, DHT node on its own 127.0.0.x address, bootstrapped off the
// first), each declaring its share of a 12-layer x 16-expert model at
// replication 2: every agent's snapshot converges to every holder, and the
// shard map built from it has every expert exactly twice. The short check of bench/scale_bench.cc, which
// measures the same at the Qwen3.5-397B shape and many more holders.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "swarm/agent.h"
#include "swarm/dht_transport.h"
#include "swarm/shard_map.h"

namespace tenzro::swarm {
namespace {

// Small declarations: the test checks convergence and the map, not the DHT's
// throughput under a loaded machine (the bench measures that).
constexpr int kHolders = 16, kLayers = 12, kExperts = 16;

catalog::ModelShape Shape() {
  catalog::ModelShape s;
  s.id = "scale-test";
  s.architecture = "qwen35moe";
  s.n_layer = kLayers;
  s.n_embd = 64;
  s.n_expert = kExperts;
  s.n_expert_used = 8;
  s.n_ff_exp = 64;
  for (int l = 0; l < kLayers; ++l) {
    catalog::LayerShape ls;
    ls.moe = true;
    ls.n_expert = kExperts;
    s.layers.push_back(ls);
  }
  return s;
}

TEST(AgentSwarmTest, SixteenAgentsOverOpenDhtConvergeToEveryExpertTwice) {
  const catalog::ModelShape shape = Shape();
  std::vector<std::shared_ptr<DhtTransport>> nodes;
  std::vector<std::unique_ptr<SwarmAgent>> agents;
  DhtOptions o;
  for (int k = 0; k < kHolders; ++k) {
    o.bind_host = fmt::format("127.0.0.{}", 10 + k);
    auto t = DhtTransport::Start(o);
    ASSERT_TRUE(t) << t.error().ToString();
    nodes.push_back(std::move(*t));
    if (k == 0) o.bootstrap = {fmt::format("{}:{}", o.bind_host, nodes[0]->port())};
  }
  std::vector<std::vector<HeldExpert>> shares(kHolders);
  for (int i = 0; i < kLayers * kExperts; ++i) {
    HeldExpert x{i / kExperts, i % kExperts, "q4_k", "q4_k", "q6_k", fmt::format("{:064x}", i)};
    shares[i % kHolders].push_back(x);
    shares[(i + kHolders / 2) % kHolders].push_back(x);
  }
  for (int k = 0; k < kHolders; ++k) {
    agents.push_back(std::make_unique<SwarmAgent>(
        nodes[k], identity::Identity::Generate(), std::vector<Endpoint>{{"quic", fmt::format("127.0.0.{}:1", 10 + k)}},
        AgentOptions{}, [share = shares[k], id = shape.id] {
          Declaration d;
          d.model = id;
          d.experts = share;
          return std::vector<Declaration>{d};
        }));
  }
  std::vector<std::thread> starts;
  for (auto& a : agents) starts.emplace_back([&a] { a->Start(); });
  for (auto& t : starts) t.join();

  const auto t0 = std::chrono::steady_clock::now();
  const size_t want = 2u * kLayers * kExperts;
  int complete = 0;
  while (complete < kHolders && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    complete = 0;
    for (auto& a : agents) {
      size_t entries = 0;
      std::set<std::string> holders;
      const auto snap = a->Snapshot(shape.id);  // held: a range-for over a temporary's member would dangle
      for (const auto& d : snap->live) {
        entries += d.experts.size();
        holders.insert(d.node_id);
      }
      complete += entries == want && holders.size() == kHolders;
    }
  }
  std::printf("[swarm] %d/%d agents complete after %.1f s\n", complete, kHolders,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  ASSERT_EQ(complete, kHolders);
  for (auto* a : {agents.front().get(), agents.back().get()}) {
    auto snap = a->Snapshot(shape.id);
    EXPECT_EQ(snap->live.size(), size_t{kHolders});
    auto m = BuildShardMap(shape, snap->live);
    ASSERT_TRUE(m) << m.error().ToString();
    EXPECT_EQ(m->covered_experts, m->total_experts);
    for (const auto& e : m->experts) ASSERT_EQ(e.replicas, 2) << "layer " << e.layer << " expert " << e.expert;
  }
  std::vector<std::thread> stops;  // each may wait out a read in flight
  for (auto& a : agents) stops.emplace_back([&a] { a->Stop(false); });
  for (auto& t : stops) t.join();
}

}  // namespace
}  // namespace tenzro::swarm
