// `tenzro node run` with its QUIC endpoint, as real processes on loopback:
// node.json and moe status name it, `tenzro blob get` fetches over QUIC
// (iroh-blobs) from a URI naming the provider, exec frames reach
// POST /v1/moe/exec over ALPN tenzro/moe-exec/1, a wrong node id is refused.
#include <gtest/gtest.h>

#include <csignal>

#include <nlohmann/json.hpp>

#include "dispatch/exec_frame.h"
#include "identity/identity.h"
#include "quic/quic_client.h"
#include "quic/rpc.h"
#include "testutil/node_process.h"

namespace tenzro::quic {
namespace {

using nlohmann::json;
using testing::RunningNode;

TEST(NodeQuic, NodeJsonBlobGetOverQuicExecAndStatus) {
  testing::TempDir tmp;
  std::string dir = tmp.Join("provider");
  RunningNode n = testing::StartNode(dir);
  ASSERT_TRUE(n.running());

  // node.json: node id (= the key in node.key), QUIC address, ALPNs.
  identity::Identity id = identity::LoadOrCreateIdentity(dir).value();
  ASSERT_TRUE(n.node_json.contains("quic")) << n.node_json.dump(2);
  EXPECT_EQ(n.node_json["node_id"], id.node_id());
  std::string addr = n.node_json["quic"]["address"];
  EXPECT_EQ(addr.rfind("127.0.0.1:", 0), 0u) << addr;
  EXPECT_EQ(n.node_json["quic"]["alpns"], json::array({"/iroh-bytes/4", "tenzro/moe-exec/1"}));

  // moe status --json shows the same.
  json st = n.CliJson({"moe", "status", "--json"});
  EXPECT_EQ(st["node_id"], id.node_id());
  EXPECT_EQ(st["quic"]["address"], addr);

  // A blob on the provider, fetched by another data dir over QUIC.
  Bytes data(300000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + 7);
  testing::WriteAll(tmp.Join("blob.bin"), data);
  json put = n.CliJson({"blob", "put", tmp.Join("blob.bin"), "--json"});
  std::string hash = put["hash"];
  std::string uri = "tenzro://blob/" + hash + "?node=" + id.node_id() + "&addr=" + addr;
  auto get = testing::RunTenzro({"--data-dir", tmp.Join("getter"), "blob", "get", uri, "--json", "-o", tmp.Join("out.bin")});
  ASSERT_EQ(get.exit_code, 0) << get.out << get.err;
  json gj = json::parse(get.out);
  EXPECT_EQ(gj["transport"], "quic");
  EXPECT_EQ(gj["size"], data.size());
  EXPECT_EQ(testing::ReadAll(tmp.Join("out.bin")), data);
  // The last chunk only (a size proof).
  auto last = testing::RunTenzro({"--data-dir", tmp.Join("getter2"), "blob", "get", uri, "--ranges", "last", "--json"});
  ASSERT_EQ(last.exit_code, 0) << last.out << last.err;
  EXPECT_EQ(json::parse(last.out)["size"], data.size());
  // Naming another node id at that address: refused in the handshake (exit 8).
  std::string wrong = "tenzro://blob/" + hash + "?node=" + identity::Identity::Generate().node_id() + "&addr=" + addr;
  auto refused = testing::RunTenzro({"--data-dir", tmp.Join("getter3"), "blob", "get", wrong});
  EXPECT_EQ(refused.exit_code, 8) << refused.out << refused.err;

  // Exec over QUIC reaches POST /v1/moe/exec: a malformed frame gets an
  // exec error frame back (not a transport error), and the node keeps serving.
  auto client = QuicClient::Start(identity::Identity::Generate()).value();
  PeerAddr peer{id.node_id(), net::ParseEndpoint(addr).value()};
  Bytes garbage = {'n', 'o', 't', ' ', 'a', ' ', 'f', 'r', 'a', 'm', 'e'};
  auto reply = CallRpc(*client, peer, kExecAlpn, garbage);
  ASSERT_TRUE(reply) << reply.error().ToString();
  auto frame = dispatch::DecodeExecResponse(*reply);
  ASSERT_TRUE(frame) << frame.error().ToString();
  ASSERT_TRUE(frame->error);
  EXPECT_EQ(frame->error->code(), ErrorCode::kCorruption) << frame->error->ToString();
  // An exec request for a model the node does not hold: an error frame too.
  dispatch::ExecRequest req;
  req.request_id = 9;
  req.model = "qwen3-30b-a3b";
  req.layer = 0;
  req.d_model = 4;
  req.experts.push_back({1, 1, {1, 2, 3, 4}});
  auto reply2 = CallRpc(*client, peer, kExecAlpn, dispatch::EncodeExecRequest(req));
  ASSERT_TRUE(reply2) << reply2.error().ToString();
  auto frame2 = dispatch::DecodeExecResponse(*reply2);
  ASSERT_TRUE(frame2) << frame2.error().ToString();
  EXPECT_EQ(frame2->request_id, 9u);
  EXPECT_TRUE(frame2->error || (!frame2->experts.empty() && frame2->experts[0].error));

  EXPECT_EQ(n.Stop(), 0);
}

// A holder killed (SIGKILL: no CONNECTION_CLOSE) under an open connection:
// the next call's datagram draws an ICMP port unreachable, which the
// endpoint reads from its socket's error queue and ends the connection with
// — the call fails as unavailable, long before its 20 s deadline would.
TEST(NodeQuic, AKilledPeerIsNoticedFromIcmpNotADeadline) {
  testing::TempDir tmp;
  RunningNode n = testing::StartNode(tmp.Join("holder"));
  ASSERT_TRUE(n.running());
  PeerAddr peer{n.node_json["node_id"].get<std::string>(),
                net::ParseEndpoint(n.node_json["quic"]["address"].get<std::string>()).value()};
  auto client = QuicClient::Start(identity::Identity::Generate()).value();
  Bytes garbage = {'h', 'i'};
  ASSERT_TRUE(CallRpc(*client, peer, kExecAlpn, garbage));  // the connection is up
  n.proc->Signal(SIGKILL);
  ASSERT_EQ(n.proc->Wait(std::chrono::seconds(10)), -1);
  CallOptions o;
  o.read_timeout = std::chrono::seconds(20);
  o.total_timeout = std::chrono::seconds(20);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = CallRpc(*client, peer, kExecAlpn, garbage, o);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable) << r.error().ToString();
  EXPECT_NE(r.error().message().find("unreachable"), std::string::npos) << r.error().ToString();
  EXPECT_LT(took, std::chrono::seconds(10));  // not the deadline (20 s) nor the idle timeout
  uint64_t unreachable = 0;
  client->RunOnLoop([&](Endpoint& ep) { unreachable = ep.stats().peers_unreachable; });
  EXPECT_GE(unreachable, 1u);
}

TEST(NodeQuic, QuicOffAndBadAddress) {
  testing::TempDir tmp;
  testing::NodeOptions o;
  o.run_args = {"--quic", "off"};
  RunningNode n = testing::StartNode(tmp.Join("off"), o);
  ASSERT_TRUE(n.running());
  EXPECT_FALSE(n.node_json.contains("quic")) << n.node_json.dump(2);
  EXPECT_EQ(n.Stop(), 0);
  auto bad = testing::RunTenzro({"--data-dir", tmp.Join("bad"), "node", "run", "--quic", "nonsense"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
}

}  // namespace
}  // namespace tenzro::quic
