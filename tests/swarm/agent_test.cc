// SwarmAgent over the in-memory transport with an injected clock: publish,
// read back, refresh/expiry, leaving, provider records, the served-tps EMA.
#include "swarm/agent.h"

#include <gtest/gtest.h>

#include <atomic>

#include "identity/envelope.h"

namespace tenzro::swarm {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

struct Fixture {
  std::shared_ptr<InMemoryTransport> net = std::make_shared<InMemoryTransport>();
  std::atomic<int64_t> now{kT0};
  Clock clock() {
    return [this] { return now.load(); };
  }
  std::unique_ptr<SwarmAgent> Agent(std::vector<Declaration> holdings, AgentOptions o = {}) {
    return std::make_unique<SwarmAgent>(net, identity::Identity::Generate(),
                                        std::vector<Endpoint>{{"http", "http://127.0.0.1:1"}}, o,
                                        [holdings] { return holdings; }, clock());
  }
};

Declaration Holds(const std::string& model, std::vector<std::pair<int, int>> experts) {
  Declaration d;
  d.model = model;
  for (auto [l, e] : experts) d.experts.push_back({l, e, "q4_K", "q4_K", "q6_K", std::string(64, 'a'), Tier::kWarm, 0});
  d.gates.push_back({0, std::string(64, 'b')});
  return d;
}

TEST(AgentTest, PublishReadBackExpireAndLeave) {
  Fixture f;
  AgentOptions o;
  o.ttl_s = 10;
  auto a = f.Agent({Holds("m", {{0, 1}, {0, 2}})}, o);
  auto b = f.Agent({Holds("m", {{0, 2}, {1, 3}})}, o);
  ASSERT_TRUE(a->Publish());
  ASSERT_TRUE(b->Publish());
  auto reader = f.Agent({}, o);
  auto live = reader->Live("m");
  ASSERT_TRUE(live) << live.error().ToString();
  ASSERT_EQ(live->size(), 2u);
  for (const auto& d : *live) {
    EXPECT_EQ(d.ttl_s, 10u);
    EXPECT_EQ(d.timestamp_ms, kT0);
    EXPECT_EQ(d.endpoints.size(), 1u);
    EXPECT_EQ(d.experts.size(), 2u);
  }
  EXPECT_EQ(reader->KnownModels(), std::vector<std::string>{"m"});

  // b stops refreshing; a re-publishes at t+6 s. At t+11 s only a is live.
  f.now = kT0 + 6000;
  ASSERT_TRUE(a->Publish());
  f.now = kT0 + 11000;
  live = reader->Live("m");
  ASSERT_TRUE(live);
  ASSERT_EQ(live->size(), 1u);
  EXPECT_EQ((*live)[0].node_id, a->node_id());

  // A clean stop announces leaving: gone at once, well before the TTL.
  a->Stop(true);
  f.now += 1000;
  live = reader->Live("m");
  ASSERT_TRUE(live);
  EXPECT_TRUE(live->empty());
  nlohmann::json st = reader->Stats();
  EXPECT_GE(st["ingest"].value("left", 0), 1);
}

TEST(AgentTest, SequenceIncreasesAndDroppedModelLeaves) {
  Fixture f;
  std::vector<Declaration> holdings = {Holds("m1", {{0, 0}}), Holds("m2", {{0, 1}})};
  auto a = std::make_unique<SwarmAgent>(f.net, identity::Identity::Generate(), std::vector<Endpoint>{}, AgentOptions{},
                                        [&holdings] { return holdings; }, f.clock());
  ASSERT_TRUE(a->Publish());
  uint64_t seq1 = a->Stats()["seq"];
  ASSERT_TRUE(a->Publish());  // same clock: still strictly increasing
  EXPECT_GT(a->Stats()["seq"].get<uint64_t>(), seq1);
  holdings.pop_back();  // m2 no longer held
  ASSERT_TRUE(a->Publish());
  auto reader = f.Agent({});
  EXPECT_EQ(reader->Live("m1")->size(), 1u);
  EXPECT_TRUE(reader->Live("m2")->empty());
}

TEST(AgentTest, LargeHoldingsAreSplitIntoParts) {
  Fixture f;
  std::vector<std::pair<int, int>> many;
  for (int l = 0; l < 48; ++l)
    for (int e = 0; e < 64; ++e) many.push_back({l, e});
  auto a = f.Agent({Holds("big", many)});
  ASSERT_TRUE(a->Publish());
  EXPECT_GT(a->Stats()["declared"]["big"]["parts"].get<int>(), 1);
  const std::vector<std::string> values = *f.net->Get(DeclarationKey("big"));
  for (const auto& v : values) EXPECT_LE(v.size(), kMaxRecordBytes);
  auto reader = f.Agent({});
  auto live = reader->Live("big");
  ASSERT_TRUE(live);
  size_t experts = 0;
  for (const auto& d : *live) experts += d.experts.size();
  EXPECT_EQ(experts, many.size());
}

TEST(AgentTest, ForgedAndReplayedRecordsAreIgnored) {
  Fixture f;
  auto a = f.Agent({Holds("m", {{0, 1}})});
  ASSERT_TRUE(a->Publish());
  const std::vector<std::string> old_records = *f.net->Get(DeclarationKey("m"));
  ASSERT_EQ(old_records.size(), 1u);
  f.now += 1000;
  ASSERT_TRUE(a->Publish());

  // A stranger signs a record claiming a's node id.
  identity::Identity mallory = identity::Identity::Generate();
  Declaration forged;
  forged.node_id = a->node_id();
  forged.model = "m";
  forged.seq = UINT64_MAX / 2;
  forged.timestamp_ms = f.now;
  forged.experts.push_back({0, 7, "f32", "f32", "f32", "", Tier::kWarm, 0});
  std::string body = DeclarationToJson(forged).dump();
  ASSERT_TRUE(f.net->Put(DeclarationKey("m"), 1001, identity::SealEnvelope(kDeclarationDomain, body, mallory)));
  auto reader = f.Agent({});
  ASSERT_TRUE(reader->Live("m"));
  // The old record again, replayed under another value id after the reader
  // has seen the newer one.
  ASSERT_TRUE(f.net->Put(DeclarationKey("m"), 1002, old_records[0]));
  f.now += 1000;  // past the reader's lookup cache
  auto live = reader->Live("m");
  ASSERT_TRUE(live);
  ASSERT_EQ(live->size(), 1u);
  EXPECT_EQ((*live)[0].experts.size(), 1u);
  EXPECT_EQ((*live)[0].experts[0].expert, 1);
  nlohmann::json st = reader->Stats();
  EXPECT_EQ(st["ingest"].value("bad_signature", 0), 2);  // seen at both reads
  EXPECT_EQ(st["ingest"].value("replay", 0), 1);
}

TEST(AgentTest, ProvidersAreFoundVerifiedAndExpire) {
  Fixture f;
  AgentOptions o;
  o.ttl_s = 5;
  auto a = f.Agent({}, o);
  auto b = f.Agent({}, o);
  const std::string hash(64, 'c');
  ASSERT_TRUE(a->AnnounceProvider(hash));
  // Forged provider record (signature of another key) is dropped.
  identity::Identity mallory = identity::Identity::Generate();
  ProviderRecord fake{a->node_id(), hash, {{"http", "http://127.0.0.9:1"}}, f.now, 5};
  auto good_for_mallory = EncodeProviderRecord(ProviderRecord{mallory.node_id(), hash, {}, f.now, 5}, mallory);
  ASSERT_TRUE(good_for_mallory);
  std::string tampered = *good_for_mallory;
  tampered.replace(tampered.find(mallory.node_id()), 64, a->node_id());
  ASSERT_TRUE(f.net->Put(ProviderKey(hash), 77, tampered));
  EXPECT_FALSE(EncodeProviderRecord(fake, mallory));  // cannot sign for another id

  auto found = b->FindProviders(hash);
  ASSERT_TRUE(found);
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].node_id, a->node_id());
  EXPECT_EQ((*found)[0].endpoints[0].address, "http://127.0.0.1:1");
  EXPECT_TRUE(a->FindProviders(hash)->empty());  // never itself

  f.now += 6000;
  EXPECT_TRUE(b->FindProviders(hash)->empty());
  ASSERT_TRUE(a->Publish());  // the refresh re-announces
  EXPECT_EQ(b->FindProviders(hash)->size(), 1u);
}

TEST(AgentTest, ServedTokensPerSecondIsAnEma) {
  Fixture f;
  AgentOptions o;
  o.tps_halflife_s = 10;
  auto a = f.Agent({Holds("m", {{0, 1}})}, o);
  EXPECT_EQ(a->ServedTps("m", 0, 1), 0);
  // 100 tokens/s for 60 s: the EMA approaches 100 from below.
  for (int s = 0; s < 60; ++s) {
    a->RecordServed("m", 0, 1, 100);
    f.now += 1000;
  }
  const double tps = a->ServedTps("m", 0, 1);
  EXPECT_GT(tps, 95);
  EXPECT_LE(tps, 100.0001);
  // Idle for 3 half-lives: about an eighth.
  f.now += 30000;
  EXPECT_NEAR(a->ServedTps("m", 0, 1), tps / 8, tps * 0.02);
  // It is published.
  ASSERT_TRUE(a->Publish());
  auto reader = f.Agent({});
  auto live = reader->Live("m");
  ASSERT_TRUE(live);
  EXPECT_NEAR((*live)[0].experts[0].served_tps, tps / 8, tps * 0.02);
}

TEST(AgentTest, PeriodicRefreshThreadStopsCleanly) {
  Fixture f;
  AgentOptions o;
  o.refresh = std::chrono::milliseconds(20);
  auto a = f.Agent({Holds("m", {{0, 1}})}, o);
  a->Start();
  for (int i = 0; i < 200 && a->Stats()["published"].get<int>() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(a->Stats()["published"].get<int>(), 3);
  a->Stop(true);
  a->Stop(true);  // idempotent
  auto reader = f.Agent({});
  EXPECT_TRUE(reader->Live("m")->empty());
}

}  // namespace
}  // namespace tenzro::swarm
