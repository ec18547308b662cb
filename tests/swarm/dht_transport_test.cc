// The OpenDHT transport on loopback, in process: three runners on tenzro's
// network id find each other through a bootstrap node; a value put on one is
// read from another; a bad bootstrap entry is refused; the traffic counts
// (DhtStats) of two nodes mirror each other and carry the value put.
#include "swarm/dht_transport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "swarm/declaration.h"
#include "swarm/provider.h"
#include "swarm/transport.h"
#include "swarm/value_id.h"

namespace tenzro::swarm {
namespace {

const std::string kBlob(64, 'a');

std::string Record(const identity::Identity& id, int64_t ts, const std::string& addr) {
  return *EncodeProviderRecord(ProviderRecord{id.node_id(), kBlob, {{"http", addr}}, ts, 60}, id);
}

// The one value id storing nodes accept for `id`'s provider record of kBlob.
uint64_t IdOf(const identity::Identity& id) { return RecordValueId(id.node_id(), "provider", kBlob, 0); }

TEST(DhtTransportTest, PutOnOneGetFromAnother) {
  DhtOptions o;
  o.op_timeout = std::chrono::milliseconds(2000);
  auto boot = DhtTransport::Start(o);
  ASSERT_TRUE(boot) << boot.error().ToString();
  ASSERT_GT((*boot)->port(), 0);
  o.bootstrap = {"127.0.0.1:" + std::to_string((*boot)->port())};
  auto a = DhtTransport::Start(o);
  auto b = DhtTransport::Start(o);
  ASSERT_TRUE(a && b);

  identity::Identity alice = identity::Identity::Generate(), mallory = identity::Identity::Generate();
  // A network of one answers its own values.
  const std::string mine = Record(alice, 1, "http://127.0.0.1:1");
  ASSERT_TRUE((*boot)->Put("tenzro/test/self", IdOf(alice), mine));
  EXPECT_EQ(*(*boot)->Get("tenzro/test/self"), std::vector<std::string>{mine});

  const auto t0 = std::chrono::steady_clock::now();
  const std::string v2 = Record(alice, 2, "http://127.0.0.1:2");
  ASSERT_TRUE((*a)->Put("tenzro/test/k", IdOf(alice), Record(alice, 1, "http://127.0.0.1:1")));
  ASSERT_TRUE((*a)->Put("tenzro/test/k", IdOf(alice), v2));  // same signer, same id: replaces
  std::vector<std::string> got;
  for (int i = 0; i < 50; ++i) {
    got = *(*b)->Get("tenzro/test/k");
    if (got.size() == 1 && got[0] == v2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[dht] put on A -> visible on B after %.0f ms\n", ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], v2);
  EXPECT_GE((*b)->stats().good_nodes + (*b)->stats().dubious_nodes, 1u);

  // Another signer cannot make alice's value disappear by reusing her value
  // id, nor place its own valid record at any id but its own: honest storing
  // nodes accept a record only at RecordValueId(signer, kind, name, part),
  // and readers drop a valid record found elsewhere (mallory's own node B
  // keeps what it put, whatever the id).
  ASSERT_TRUE((*b)->Put("tenzro/test/k", IdOf(alice), Record(mallory, 3, "http://127.0.0.1:3")));
  ASSERT_TRUE((*b)->Put("tenzro/test/k", IdOf(alice) ^ 1, Record(mallory, 4, "http://127.0.0.1:4")));
  ASSERT_TRUE((*b)->Put("tenzro/test/k", 43, "not a record"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  got = *(*a)->Get("tenzro/test/k");
  EXPECT_NE(std::find(got.begin(), got.end(), v2), got.end());
  int valid_alice = 0;
  for (const auto& g : got) {
    auto r = DecodeProviderRecord(g);
    valid_alice += r && r->node_id == alice.node_id();
    EXPECT_FALSE(r && r->node_id == mallory.node_id()) << "mallory's record stored at a foreign id";
  }
  EXPECT_EQ(valid_alice, 1);
  // Alice's older record replayed at her own id does not push the current
  // one out of honest storage (a value is replaced only by a newer version).
  ASSERT_TRUE((*b)->Put("tenzro/test/k", IdOf(alice), Record(alice, 1, "http://127.0.0.1:1")));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  got = *(*a)->Get("tenzro/test/k");
  EXPECT_NE(std::find(got.begin(), got.end(), v2), got.end());
  // At its own id, mallory's record is accepted like anyone's.
  const std::string honest_m = Record(mallory, 5, "http://127.0.0.1:5");
  ASSERT_TRUE((*b)->Put("tenzro/test/k", IdOf(mallory), honest_m));
  bool seen = false;
  for (int i = 0; i < 50 && !seen; ++i) {
    got = *(*a)->Get("tenzro/test/k");
    seen = std::find(got.begin(), got.end(), honest_m) != got.end();
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(seen);

  EXPECT_FALSE((*a)->Put("tenzro/test/big", 1, std::string(64 * 1024, 'x')));
}

// What one node's socket sent, the other's received (loopback loses
// nothing), and a put of a 20 KB declaration shows as at least 20 KB out of
// the putter and a put request in OpenDHT's counts of both ends.
TEST(DhtTransportTest, StatsCountRequestsDatagramsAndBytesBothWays) {
  DhtOptions o;
  o.op_timeout = std::chrono::milliseconds(2000);
  auto boot = DhtTransport::Start(o);
  ASSERT_TRUE(boot) << boot.error().ToString();
  const DhtStats fresh = (*boot)->stats();
  EXPECT_EQ(fresh.bytes_in + fresh.bytes_out + fresh.datagrams_in + fresh.datagrams_out, 0u);
  o.bootstrap = {"127.0.0.1:" + std::to_string((*boot)->port())};
  auto a = DhtTransport::Start(o);
  ASSERT_TRUE(a) << a.error().ToString();

  identity::Identity alice = identity::Identity::Generate();
  Declaration d;
  d.node_id = alice.node_id();
  d.model = "stats-test";
  d.timestamp_ms = 1;
  for (int e = 0; e < 160; ++e) d.experts.push_back({e / 64, e % 64, "q4_k", "q4_k", "q6_k", std::string(64, 'b')});
  const std::string rec = *EncodeRecord(d, alice);
  ASSERT_GT(rec.size(), 20000u);
  ASSERT_TRUE((*a)->Put(DeclarationKey(d.model), RecordValueId(alice.node_id(), "decl", d.model, 0), rec));
  ASSERT_EQ((*boot)->Get(DeclarationKey(d.model))->size(), 1u);

  DhtStats sa, sb;
  for (int i = 0; i < 50; ++i) {  // let datagrams in flight land
    sa = (*a)->stats();
    sb = (*boot)->stats();
    if (sa.bytes_out == sb.bytes_in && sb.bytes_out == sa.bytes_in) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(sa.bytes_out, sb.bytes_in);
  EXPECT_EQ(sb.bytes_out, sa.bytes_in);
  EXPECT_EQ(sa.datagrams_out, sb.datagrams_in);
  EXPECT_EQ(sb.datagrams_out, sa.datagrams_in);
  EXPECT_GE(sa.bytes_out, rec.size());
  EXPECT_GT(sa.datagrams_out, rec.size() / 1280);  // value parts of at most one MTU each
  EXPECT_GE(sa.requests_out[DhtStats::kPut], 1u);
  EXPECT_GE(sb.requests_in[DhtStats::kPut], 1u);
  EXPECT_GE(sa.requests_out[DhtStats::kPing] + sa.requests_out[DhtStats::kFind], 1u);
  // Totals only grow: a second read does not lose what OpenDHT reset.
  const DhtStats again = (*a)->stats();
  EXPECT_GE(again.requests_out[DhtStats::kPut], sa.requests_out[DhtStats::kPut]);
  EXPECT_GE(again.bytes_out, sa.bytes_out);
}

TEST(DhtTransportTest, BadOptionsAreRefused) {
  DhtOptions o;
  o.bootstrap = {"nohostport"};
  auto r = DhtTransport::Start(o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  o.bootstrap = {"127.0.0.1:99999"};
  EXPECT_FALSE(DhtTransport::Start(o));
}

}  // namespace
}  // namespace tenzro::swarm
