#include "swarm/transport.h"

#include <gtest/gtest.h>

#include "catalog/builtin_shapes.h"
#include "swarm/declaration_table.h"
#include "swarm/shard_map.h"

namespace tenzro::swarm {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

// Three holders publish over the in-memory transport (one with a split
// declaration); a reader ingests whatever the key holds, including a forged
// value, and builds the shard map.
TEST(TransportTest, PublishIngestShardMap) {
  InMemoryTransport net;
  const std::string model = "tiny-qwen35moe";
  for (int n = 0; n < 3; ++n) {
    identity::Identity id = identity::Identity::Generate();
    Declaration d;
    d.node_id = id.node_id();
    d.model = model;
    d.seq = 1;
    d.timestamp_ms = kNow;
    for (int e = 0; e <= n * 3; ++e) d.experts.push_back({0, e, "q8_0", "q8_0", "q8_0", "", Tier::kWarm, 1.0});
    auto parts = Split(d, n == 2 ? 1024 : kMaxRecordBytes);
    ASSERT_TRUE(parts);
    for (const auto& p : *parts) {
      auto rec = EncodeRecord(p, id);
      ASSERT_TRUE(rec) << rec.error().ToString();
      // value id: (node index, part); a real node uses a hash of its id.
      ASSERT_TRUE(net.Put(DeclarationKey(model), (uint64_t(n) << 32) | p.part, *rec));
    }
  }
  ASSERT_TRUE(net.Put(DeclarationKey(model), 99, "{\"v\":1,\"body\":\"{}\",\"sig\":\"00\"}"));
  EXPECT_FALSE(net.Put(DeclarationKey(model), 100, std::string(kMaxRecordBytes + 1, 'x')));

  DeclarationTable table;
  auto values = net.Get(DeclarationKey(model));
  ASSERT_TRUE(values);
  int accepted = 0;
  for (const auto& v : *values) accepted += table.Ingest(v, kNow) == IngestOutcome::kAccepted;
  EXPECT_EQ(accepted, static_cast<int>(values->size()) - 1);
  EXPECT_TRUE(net.Get(DeclarationKey("nothing"))->empty());

  auto shape = catalog::BuiltinShape(model);
  ASSERT_TRUE(shape);
  auto live = table.Live(model, kNow);
  auto m = BuildShardMap(*shape, live);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->holders.size(), 3u);
  // Holder n holds L0 E0..3n: E0 x3, E1-3 x2, E4-6 x1.
  EXPECT_EQ(m->experts[m->Find(0, 0)].replicas, 3);
  EXPECT_EQ(m->experts[m->Find(0, 3)].replicas, 2);
  EXPECT_EQ(m->experts[m->Find(0, 6)].replicas, 1);
  EXPECT_EQ(m->layers[0].covered, 7);
  EXPECT_EQ(m->layers[1].covered, 0);
}

}  // namespace
}  // namespace tenzro::swarm
