// SwarmAgent's tables keyed by values others choose stay bounded, and its
// snapshots (agent.h, "Snapshots") answer without a transport read: watched
// models are capped (LRU, own declared models kept), Live() read times and
// served-tps keys are capped, records stored under another model's key are
// dropped, and the snapshot thread refreshes what it watches.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "swarm/agent.h"
#include "swarm/value_id.h"
#include "testutil/testutil.h"

namespace tenzro::swarm {
namespace {

using tenzro::testing::WaitFor;

struct Fixture {
  std::shared_ptr<InMemoryTransport> net = std::make_shared<InMemoryTransport>();
  std::unique_ptr<SwarmAgent> Agent(std::vector<Declaration> holdings, AgentOptions o = {}) {
    return std::make_unique<SwarmAgent>(net, identity::Identity::Generate(),
                                        std::vector<Endpoint>{{"http", "http://127.0.0.1:1"}}, o,
                                        [holdings] { return holdings; });
  }
};

Declaration Holds(const std::string& model, int layer, int expert) {
  Declaration d;
  d.model = model;
  d.experts.push_back({layer, expert, "q4_K", "q4_K", "q6_K", std::string(64, 'a'), Tier::kWarm, 0});
  return d;
}

uint64_t Reads(SwarmAgent& a, const char* by) { return a.Stats()["declaration_reads"].value(by, uint64_t{0}); }

TEST(AgentBoundsTest, SnapshotsOfWatchedModelsAreRefreshedOnTheAgentsThreadAndCapped) {
  Fixture f;
  auto writer = f.Agent({Holds("m", 0, 1)});
  ASSERT_TRUE(writer->Publish());
  AgentOptions o;
  o.snapshot_refresh = std::chrono::milliseconds(20);
  o.max_watched = 3;
  auto reader = f.Agent({}, o);
  EXPECT_EQ(reader->Snapshot("m"), nullptr);  // not watched: nothing, and no read
  reader->Watch("m");
  ASSERT_NE(reader->Snapshot("m"), nullptr);
  EXPECT_EQ(reader->Snapshot("m")->read_ms, 0);  // watched, not read yet
  reader->Start();
  ASSERT_TRUE(WaitFor([&] { return reader->Snapshot("m")->live.size() == 1; }, std::chrono::seconds(5)));
  const auto first = reader->Snapshot("m");
  EXPECT_GT(first->read_ms, 0);
  EXPECT_EQ(first->live[0].node_id, writer->node_id());
  ASSERT_TRUE(WaitFor([&] { return reader->Snapshot("m")->generation > first->generation; }, std::chrono::seconds(5)));
  EXPECT_EQ(Reads(*reader, "request"), 0u);
  EXPECT_GE(Reads(*reader, "snapshot"), 2u);

  // Past max_watched the least recently asked model goes.
  for (const char* m : {"a", "b", "c", "d"}) reader->Watch(m);
  EXPECT_EQ(reader->WatchedModels(), (std::vector<std::string>{"b", "c", "d"}));
  EXPECT_EQ(reader->Snapshot("m"), nullptr);
  EXPECT_EQ(reader->Stats()["watched"], 3);
  reader->Stop(false);
}

TEST(AgentBoundsTest, OwnDeclaredModelsStayWatched) {
  Fixture f;
  AgentOptions o;
  o.max_watched = 1;
  auto a = f.Agent({Holds("own", 0, 0)}, o);
  ASSERT_TRUE(a->Publish());
  a->Watch("x");
  a->Watch("y");
  EXPECT_EQ(a->WatchedModels(), std::vector<std::string>{"own"});
}

TEST(AgentBoundsTest, ReadTimesAndServedKeysAreCapped) {
  Fixture f;
  AgentOptions o;
  o.max_read_cache = 16;
  o.max_served = 8;
  auto a = f.Agent({}, o);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(a->Live("id-" + std::to_string(i)));
  nlohmann::json st = a->Stats();
  EXPECT_EQ(st["read_cache"], 16);
  EXPECT_EQ(st["declaration_reads"]["request"], 1000);
  EXPECT_EQ(st["watched"], 0);  // Live() alone watches nothing
  EXPECT_TRUE(a->KnownModels().empty());
  for (int e = 0; e < 100; ++e) a->RecordServed("m", 0, e, 10);
  EXPECT_EQ(a->Stats()["served_keys"], 8);
}

TEST(AgentBoundsTest, RecordsUnderAnotherModelsKeyAreDropped) {
  Fixture f;
  identity::Identity mallory = identity::Identity::Generate();
  Declaration d = Holds("other", 1 << 20, 1 << 20);
  d.node_id = mallory.node_id();
  d.seq = 1;
  d.timestamp_ms = UnixMillis();
  d.ttl_s = 60;
  auto rec = EncodeRecord(d, mallory);
  ASSERT_TRUE(rec) << rec.error().ToString();
  ASSERT_TRUE(f.net->Put(DeclarationKey("m"), RecordValueId(mallory.node_id(), "decl", "m", 0), *rec));
  auto a = f.Agent({});
  auto live = a->Live("m");
  ASSERT_TRUE(live);
  EXPECT_TRUE(live->empty());
  EXPECT_TRUE(a->KnownModels().empty());
  EXPECT_EQ(a->Stats()["ingest"].value("wrong_model", 0), 1);
  // Under its own key it is a valid (if absurd) declaration.
  ASSERT_TRUE(f.net->Put(DeclarationKey("other"), RecordValueId(mallory.node_id(), "decl", "other", 0), *rec));
  live = a->Live("other");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->size(), 1u);
}

}  // namespace
}  // namespace tenzro::swarm
