#include "swarm/declaration.h"

#include <gtest/gtest.h>

#include <set>

#include "swarm/declaration_table.h"

namespace tenzro::swarm {
namespace {

using nlohmann::json;

constexpr int64_t kNow = 1'700'000'000'000;

identity::Identity TestIdentity(uint8_t fill) {
  std::array<uint8_t, identity::kSeedBytes> seed;
  seed.fill(fill);
  return identity::Identity::FromSeed(seed);
}

Declaration Sample(const identity::Identity& id, uint64_t seq = 1) {
  Declaration d;
  d.node_id = id.node_id();
  d.model = "tiny-qwen35moe";
  d.endpoints = {{"http", "http://127.0.0.1:8080"}};
  d.experts = {{0, 1, "q4_k", "q4_k", "q6_k", std::string(64, 'a'), Tier::kWarm, 12.5},
               {1, 7, "q8_0", "q8_0", "q8_0", std::string(64, 'b'), Tier::kCold, 0}};
  d.gates = {{0, std::string(64, 'c')}};
  d.memory_budget = 1 << 30;
  d.free_bytes = 1 << 29;
  d.state = HolderState::kServing;
  d.seq = seq;
  d.timestamp_ms = kNow;
  d.ttl_s = 60;
  return d;
}

std::string Encode(const Declaration& d, const identity::Identity& id) {
  auto r = EncodeRecord(d, id);
  EXPECT_TRUE(r) << r.error().ToString();
  return r ? *r : std::string();
}

TEST(DeclarationTest, RoundTrip) {
  identity::Identity id = TestIdentity(1);
  Declaration d = Sample(id);
  std::string rec = Encode(d, id);
  auto back = DecodeRecord(rec);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(*back, d);
  json env = json::parse(rec);
  EXPECT_EQ(env["v"], 1);
  EXPECT_EQ(env["sig"].get<std::string>().size(), 128u);
  // Canonical body: sorted keys, compact.
  EXPECT_EQ(env["body"].get<std::string>(), DeclarationToJson(d).dump());
}

TEST(DeclarationTest, EncodeRefusesOtherIdentity) {
  identity::Identity a = TestIdentity(1), b = TestIdentity(2);
  auto r = EncodeRecord(Sample(a), b);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
}

TEST(DeclarationTest, ForgedBodyIsBadSignature) {
  identity::Identity id = TestIdentity(1);
  json env = json::parse(Encode(Sample(id), id));
  json body = json::parse(env["body"].get<std::string>());
  body["free_bytes"] = 1;  // tamper
  env["body"] = body.dump();
  auto r = DecodeRecord(env.dump());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kPermissionDenied);
}

TEST(DeclarationTest, MismatchedNodeIdIsBadSignature) {
  // Signed by `mallory` but claiming to be `alice`.
  identity::Identity alice = TestIdentity(1), mallory = TestIdentity(2);
  Declaration d = Sample(alice);
  std::string body = DeclarationToJson(d).dump();
  std::string msg(kDeclarationDomain);
  msg += body;
  identity::Signature sig = mallory.Sign(ByteSpan(reinterpret_cast<const uint8_t*>(msg.data()), msg.size()));
  json env{{"v", 1}, {"body", body}, {"sig", ToHex(sig)}};
  auto r = DecodeRecord(env.dump());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kPermissionDenied);
  DeclarationTable t;
  EXPECT_EQ(t.Ingest(env.dump(), kNow), IngestOutcome::kBadSignature);
  EXPECT_EQ(t.size(), 0u);
}

TEST(DeclarationTest, SignatureIsDomainSeparated) {
  identity::Identity id = TestIdentity(1);
  std::string body = DeclarationToJson(Sample(id)).dump();
  identity::Signature sig = id.Sign(ByteSpan(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
  json env{{"v", 1}, {"body", body}, {"sig", ToHex(sig)}};
  auto r = DecodeRecord(env.dump());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kPermissionDenied);
}

TEST(DeclarationTest, UnknownFieldsTolerated) {
  identity::Identity id = TestIdentity(1);
  Declaration d = Sample(id);
  json body = DeclarationToJson(d);
  body["future_field"] = {{"x", 1}};
  body["experts"][0]["future"] = "y";
  std::string text = body.dump();
  std::string msg(kDeclarationDomain);
  msg += text;
  identity::Signature sig = id.Sign(ByteSpan(reinterpret_cast<const uint8_t*>(msg.data()), msg.size()));
  json env{{"v", 1}, {"body", text}, {"sig", ToHex(sig)}, {"extra", true}};
  auto r = DecodeRecord(env.dump());
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, d);
}

TEST(DeclarationTest, MalformedRecordsRejected) {
  identity::Identity id = TestIdentity(1);
  std::string good = Encode(Sample(id), id);
  json env = json::parse(good);
  std::vector<std::string> bad = {"", "{", "[]", "null", "{\"v\":1}", good.substr(0, good.size() - 1)};
  json e = env;
  e["v"] = "1";
  bad.push_back(e.dump());
  e = env;
  e["sig"] = "zz";
  bad.push_back(e.dump());
  e = env;
  e["body"] = "not json";
  bad.push_back(e.dump());
  for (const auto& r : bad) {
    auto d = DecodeRecord(r);
    ASSERT_FALSE(d) << r;
    EXPECT_EQ(d.error().code(), ErrorCode::kCorruption) << r;
  }
  e = env;
  e["v"] = 2;
  auto d = DecodeRecord(e.dump());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code(), ErrorCode::kUnsupported);
}

TEST(DeclarationTest, BodyFieldValidation) {
  identity::Identity id = TestIdentity(1);
  json good = DeclarationToJson(Sample(id));
  auto expect_bad = [&](json body, std::string_view field) {
    auto d = DeclarationFromJson(body);
    ASSERT_FALSE(d) << body.dump();
    EXPECT_EQ(d.error().code(), ErrorCode::kCorruption);
    EXPECT_NE(d.error().message().find(field), std::string::npos) << d.error().message();
  };
  json b = good; b.erase("seq"); expect_bad(b, "seq");
  b = good; b["seq"] = -1; expect_bad(b, "seq");
  b = good; b["node_id"] = std::string(64, 'A'); expect_bad(b, "node_id");
  b = good; b["node_id"] = "abc"; expect_bad(b, "node_id");
  b = good; b["state"] = "sleeping"; expect_bad(b, "state");
  b = good; b["experts"][0]["tier"] = "hot"; expect_bad(b, "experts[0].tier");
  b = good; b["experts"][1]["layer"] = "0"; expect_bad(b, "experts[1].layer");
  b = good; b["experts"][0]["tps"] = -1.0; expect_bad(b, "experts[0].tps");
  b = good; b["gates"] = json::object(); expect_bad(b, "gates");
  b = good; b["part"] = 1; expect_bad(b, "part");
  b = good; b["ttl_s"] = 0; expect_bad(b, "ttl_s");
  b = good; b["model"] = ""; expect_bad(b, "model");
}

TEST(DeclarationTest, OversizedRecord) {
  identity::Identity id = TestIdentity(1);
  Declaration d = Sample(id);
  d.experts.assign(2000, d.experts[0]);
  auto r = EncodeRecord(d, id);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted);
  auto dec = DecodeRecord(std::string(kMaxRecordBytes + 1, ' '));
  ASSERT_FALSE(dec);
  EXPECT_EQ(dec.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(dec.error().message().find("limit"), std::string::npos);
}

TEST(DeclarationTest, SplitPartsRoundTrip) {
  identity::Identity id = TestIdentity(3);
  Declaration d = Sample(id, 9);
  d.experts.clear();
  for (int l = 0; l < 60; ++l) {
    for (int e = 0; e < 100; ++e) {
      d.experts.push_back({l, e, "q4_k", "q4_k", "q6_k", std::string(64, "0123456789abcdef"[e % 16]),
                           e % 3 ? Tier::kWarm : Tier::kCold, e * 0.25});
    }
    d.gates.push_back({l, std::string(64, 'f')});
  }
  auto parts = Split(d);
  ASSERT_TRUE(parts) << parts.error().ToString();
  ASSERT_GT(parts->size(), 1u);
  DeclarationTable t;
  std::vector<HeldExpert> experts;
  std::vector<HeldGate> gates;
  for (size_t i = 0; i < parts->size(); ++i) {
    const Declaration& p = (*parts)[i];
    EXPECT_EQ(p.part, i);
    EXPECT_EQ(p.parts, parts->size());
    std::string rec = Encode(p, id);
    EXPECT_LE(rec.size(), kMaxRecordBytes);
    EXPECT_EQ(t.Ingest(rec, kNow), IngestOutcome::kAccepted);
  }
  for (const auto& p : t.Live(d.model, kNow)) {
    EXPECT_EQ(p.seq, 9u);
    EXPECT_EQ(p.endpoints, d.endpoints);
    experts.insert(experts.end(), p.experts.begin(), p.experts.end());
    gates.insert(gates.end(), p.gates.begin(), p.gates.end());
  }
  EXPECT_EQ(experts, d.experts);
  EXPECT_EQ(gates, d.gates);

  // A small declaration stays one part.
  auto one = Split(Sample(id));
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0], Sample(id));

  // A tight limit still produces records within it.
  d.experts.resize(200);
  d.gates.resize(10);
  auto tight = Split(d, 4096);
  ASSERT_TRUE(tight);
  EXPECT_GT(tight->size(), 5u);
  size_t n = 0;
  for (const auto& p : *tight) {
    EXPECT_LE(Encode(p, id).size(), 4096u);
    n += p.experts.size();
  }
  EXPECT_EQ(n, 200u);
}

TEST(DeclarationTableTest, ReplayExpiryLeaving) {
  identity::Identity a = TestIdentity(1), b = TestIdentity(2);
  DeclarationTable t;
  std::string detail;
  EXPECT_EQ(t.Ingest(Encode(Sample(a, 5), a), kNow, &detail), IngestOutcome::kAccepted);
  EXPECT_EQ(t.Ingest(Encode(Sample(b, 1), b), kNow), IngestOutcome::kAccepted);
  EXPECT_EQ(t.Live("tiny-qwen35moe", kNow).size(), 2u);
  EXPECT_EQ(t.Models(kNow), std::vector<std::string>{"tiny-qwen35moe"});

  // Replays: equal and older sequence numbers.
  EXPECT_EQ(t.Ingest(Encode(Sample(a, 5), a), kNow), IngestOutcome::kDuplicate);
  Declaration older = Sample(a, 4);
  older.free_bytes = 7;
  EXPECT_EQ(t.Ingest(Encode(older, a), kNow, &detail), IngestOutcome::kReplay);
  EXPECT_NE(detail.find("replay"), std::string::npos);
  EXPECT_EQ(t.Live("tiny-qwen35moe", kNow)[0].free_bytes == 7 || t.Live("tiny-qwen35moe", kNow)[1].free_bytes == 7,
            false);

  // Newer replaces.
  Declaration newer = Sample(a, 6);
  newer.timestamp_ms = kNow + 10'000;
  newer.free_bytes = 42;
  EXPECT_EQ(t.Ingest(Encode(newer, a), kNow + 10'000), IngestOutcome::kAccepted);

  // Expired on arrival, and expiry of stored records without sleeping.
  Declaration stale = Sample(b, 2);
  stale.timestamp_ms = kNow - 61'000;
  EXPECT_EQ(t.Ingest(Encode(stale, b), kNow), IngestOutcome::kExpired);
  EXPECT_EQ(t.Live("tiny-qwen35moe", kNow + 59'999).size(), 2u);
  auto live = t.Live("tiny-qwen35moe", kNow + 60'000);  // b (ts kNow, ttl 60 s) is dead
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].node_id, a.node_id());
  EXPECT_EQ(live[0].free_bytes, 42u);
  t.Expire(kNow + 60'000);
  EXPECT_EQ(t.size(), 1u);
  // An expired holder may come back with a later record.
  EXPECT_EQ(t.Ingest(Encode(Sample(b, 1), b), kNow + 1000), IngestOutcome::kAccepted);

  // Stamped far in the future.
  Declaration future = Sample(b, 3);
  future.timestamp_ms = kNow + 3'600'000;
  EXPECT_EQ(t.Ingest(Encode(future, b), kNow), IngestOutcome::kFuture);

  // Leaving removes the holder; an older serving record cannot resurrect it.
  Declaration leave = Sample(a, 7);
  leave.state = HolderState::kLeaving;
  leave.experts.clear();
  leave.timestamp_ms = kNow + 10'000;
  EXPECT_EQ(t.Ingest(Encode(leave, a), kNow + 10'000), IngestOutcome::kLeft);
  live = t.Live("tiny-qwen35moe", kNow + 10'000);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].node_id, b.node_id());
  EXPECT_EQ(t.Ingest(Encode(newer, a), kNow + 10'000), IngestOutcome::kReplay);
  Declaration rejoin = Sample(a, 8);
  rejoin.timestamp_ms = kNow + 20'000;
  EXPECT_EQ(t.Ingest(Encode(rejoin, a), kNow + 20'000), IngestOutcome::kAccepted);
  EXPECT_EQ(t.Live("tiny-qwen35moe", kNow + 20'000).size(), 2u);
}

TEST(DeclarationTableTest, FewerPartsDropsStaleParts) {
  identity::Identity a = TestIdentity(1);
  DeclarationTable t;
  Declaration p0 = Sample(a, 1), p1 = Sample(a, 1);
  p0.parts = p1.parts = 2;
  p1.part = 1;
  EXPECT_EQ(t.Ingest(Encode(p0, a), kNow), IngestOutcome::kAccepted);
  EXPECT_EQ(t.Ingest(Encode(p1, a), kNow), IngestOutcome::kAccepted);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.Ingest(Encode(Sample(a, 2), a), kNow), IngestOutcome::kAccepted);  // now one part
  auto live = t.Live("tiny-qwen35moe", kNow);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].seq, 2u);
}

// A signer's ttl does not decide how long a record lives: it is cut to the
// table's max_ttl_s (a record signed "ttl 7 days" dies after 5 minutes).
TEST(DeclarationTableTest, ClaimedTtlIsClampedByTheReader) {
  identity::Identity a = TestIdentity(1);
  DeclarationTable t;  // max_ttl_s 300
  Declaration d = Sample(a, 1);
  d.ttl_s = 7 * 24 * 3600;
  EXPECT_EQ(t.Ingest(Encode(d, a), kNow), IngestOutcome::kAccepted);
  EXPECT_EQ(t.Live("tiny-qwen35moe", kNow + 299'999).size(), 1u);
  EXPECT_EQ(t.Live("tiny-qwen35moe", kNow + 300'000).size(), 0u);
  EXPECT_EQ(t.Live("tiny-qwen35moe", kNow)[0].ttl_s, 300u);
  Declaration old = Sample(a, 2);
  old.timestamp_ms = kNow - 3'600'000;  // an hour old, claiming a week
  old.ttl_s = 7 * 24 * 3600;
  EXPECT_EQ(t.Ingest(Encode(old, a), kNow), IngestOutcome::kExpired);
}

// A model holds at most max_parts_per_model records: strangers with fresh
// keys cannot grow the table without bound; known holders still refresh, and
// a slot freed by expiry is usable again.
TEST(DeclarationTableTest, RecordsPerModelAreCapped) {
  DeclarationTableLimits lim;
  lim.max_parts_per_model = 3;
  DeclarationTable t(lim);
  std::vector<identity::Identity> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(TestIdentity(10 + i));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t.Ingest(Encode(Sample(ids[i], 1), ids[i]), kNow), IngestOutcome::kAccepted);
  std::string detail;
  EXPECT_EQ(t.Ingest(Encode(Sample(ids[3], 1), ids[3]), kNow, &detail), IngestOutcome::kOverCapacity);
  EXPECT_NE(detail.find("over_capacity"), std::string::npos) << detail;
  EXPECT_EQ(t.size(), 3u);
  Declaration refresh = Sample(ids[0], 2);
  refresh.timestamp_ms = kNow + 30'000;
  EXPECT_EQ(t.Ingest(Encode(refresh, ids[0]), kNow + 30'000), IngestOutcome::kAccepted);
  // Another model has its own budget.
  Declaration other = Sample(ids[4], 1);
  other.model = "other-model";
  EXPECT_EQ(t.Ingest(Encode(other, ids[4]), kNow), IngestOutcome::kAccepted);
  // ids[1] and ids[2] (ts kNow, ttl 60 s) expire: their slots free up.
  t.Expire(kNow + 61'000);
  Declaration late = Sample(ids[3], 1);
  late.timestamp_ms = kNow + 61'000;
  EXPECT_EQ(t.Ingest(Encode(late, ids[3]), kNow + 61'000), IngestOutcome::kAccepted);
}

}  // namespace
}  // namespace tenzro::swarm
