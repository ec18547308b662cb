// Nodes built by the composition root (node/compose.h) inside the test
// process: two complete nodes (blob store, runtime, QUIC, DHT swarm, exec,
// dispatch, ...) side by side, each with its own parts — exec and blob
// routes answered over real loopback sockets, and a blob fetched from one
// node into the other through the verified HTTP stream.
#include "node/compose.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "catalog/catalog.h"
#include "core/file.h"
#include "dispatch/exec_frame.h"
#include "format/safetensors_reader.h"
#include "net/client.h"
#include "transfer/http_blobs.h"
#include "testutil/testutil.h"

namespace tenzro::node {
namespace {

using tenzro::testing::DataPath;
using tenzro::testing::TempDir;

constexpr const char* kModel = "tiny-qwen35moe";
constexpr int64_t kEmbd = 256, kFf = 512;  // the tiny checkpoint's expert shape

// One expert (gate/up/down, f32) as a safetensors file.
std::string WriteExpert(const TempDir& tmp, const std::string& name, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> g(kFf * kEmbd), u(kFf * kEmbd), d(kEmbd * kFf);
  for (auto* v : {&g, &u, &d})
    for (float& x : *v) x = nd(rng);
  auto span = [](const std::vector<float>& v) {
    return ByteSpan(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float));
  };
  format::SafetensorsWriter w;
  EXPECT_TRUE(w.AddTensor("mlp.experts.0.gate_proj.weight", format::StDtype::kF32, {kFf, kEmbd}, span(g)));
  EXPECT_TRUE(w.AddTensor("mlp.experts.0.up_proj.weight", format::StDtype::kF32, {kFf, kEmbd}, span(u)));
  EXPECT_TRUE(w.AddTensor("mlp.experts.0.down_proj.weight", format::StDtype::kF32, {kEmbd, kFf}, span(d)));
  const std::string path = tmp.Join(name);
  EXPECT_TRUE(w.Write(path));
  return path;
}

// A composed node running its loop on a thread of this process.
struct InProcessNode {
  TempDir tmp;
  NodeParts parts;
  std::unique_ptr<Node> node;
  std::thread loop;

  InProcessNode() {
    NodeConfig cfg;
    cfg.data_dir = tmp.Join("data");
    cfg.threads = 2;
    cfg.swarm_refresh_ms = 60000;
    EXPECT_TRUE(MakeDirs(cfg.data_dir, 0700));
    auto cat = catalog::Catalog::Load(cfg.data_dir);
    EXPECT_TRUE(cat);
    EXPECT_TRUE(cat->AddCheckpoint(kModel, DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf")));
    auto n = CreateNode(cfg, &parts);
    EXPECT_TRUE(n) << n.error().ToString();
    if (!n) return;
    node = std::move(*n);
    loop = std::thread([this] { EXPECT_TRUE(node->Run()); });
  }
  ~InProcessNode() {
    if (!node) return;
    node->RequestStop();
    loop.join();
    parts = NodeParts{};  // the parts use the node's loop and pool: released first
    node.reset();
  }
  net::HttpClient Client() const { return net::HttpClient(node->http_endpoint()); }
};

TEST(NodeInProcessTest, TwoComposedNodesHaveTheirOwnParts) {
  InProcessNode a, b;
  ASSERT_TRUE(a.node && b.node);
  for (InProcessNode* n : {&a, &b}) {
    ASSERT_TRUE(n->parts.store && n->parts.runtime && n->parts.swarm && n->parts.runner && n->parts.dispatcher);
    ASSERT_TRUE(n->parts.quic) << "QUIC is on by default";
  }
  EXPECT_NE(a.parts.store, b.parts.store);
  EXPECT_NE(a.parts.runtime, b.parts.runtime);
  EXPECT_NE(a.parts.swarm->agent->node_id(), b.parts.swarm->agent->node_id());
  EXPECT_NE(a.parts.quic->advertised, b.parts.quic->advertised);
  // The swarm advertises this node's own QUIC endpoint.
  bool quic_advertised = false;
  for (const auto& e : a.parts.swarm->agent->endpoints())
    if (e.kind == "quic") quic_advertised = e.address == a.parts.quic->advertised;
  EXPECT_TRUE(quic_advertised);
}

TEST(NodeInProcessTest, ExecRouteRunsTheRuntimesExpert) {
  InProcessNode n;
  ASSERT_TRUE(n.node);
  auto loaded = n.parts.runtime->LoadExpert(kModel, 0, 3, {WriteExpert(n.tmp, "e3.safetensors", 7), ""});
  ASSERT_TRUE(loaded) << loaded.error().ToString();

  constexpr uint32_t kRows = 3;
  dispatch::ExecRequest req;
  req.request_id = 42;
  req.model = kModel;
  req.layer = 0;
  req.d_model = kEmbd;
  dispatch::ExecBatch batch;
  batch.expert = 3;
  batch.n_rows = kRows;
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (uint32_t i = 0; i < kRows * kEmbd; ++i) batch.rows.push_back(nd(rng));
  req.experts.push_back(batch);
  const Bytes frame = dispatch::EncodeExecRequest(req);

  auto http = n.Client().Send("POST", "/v1/moe/exec",
                              std::string_view(reinterpret_cast<const char*>(frame.data()), frame.size()),
                              "application/x-tenzro-exec");
  ASSERT_TRUE(http) << http.error().ToString();
  ASSERT_EQ(http->status, 200) << http->body;
  auto resp = dispatch::DecodeExecResponse(
      ByteSpan(reinterpret_cast<const uint8_t*>(http->body.data()), http->body.size()));
  ASSERT_TRUE(resp) << resp.error().ToString();
  EXPECT_EQ(resp->request_id, 42u);
  ASSERT_FALSE(resp->error) << resp->error->ToString();
  ASSERT_EQ(resp->experts.size(), 1u);
  ASSERT_FALSE(resp->experts[0].error) << resp->experts[0].error->ToString();
  ASSERT_EQ(resp->experts[0].rows.size(), kRows * kEmbd);

  // The same rows through the node's runner, without the route: same bits.
  std::vector<float> direct(kRows * kEmbd);
  ASSERT_TRUE(n.parts.runner->Run(kModel, 0, 3, batch.rows.data(), kRows, direct.data()));
  EXPECT_EQ(std::memcmp(direct.data(), resp->experts[0].rows.data(), direct.size() * sizeof(float)), 0);

  // An expert the node does not hold is an error frame, not a failure.
  req.experts[0].expert = 4;
  const Bytes missing = dispatch::EncodeExecRequest(req);
  auto http2 = n.Client().Send("POST", "/v1/moe/exec",
                               std::string_view(reinterpret_cast<const char*>(missing.data()), missing.size()),
                               "application/x-tenzro-exec");
  ASSERT_TRUE(http2);
  auto resp2 = dispatch::DecodeExecResponse(
      ByteSpan(reinterpret_cast<const uint8_t*>(http2->body.data()), http2->body.size()));
  ASSERT_TRUE(resp2) << resp2.error().ToString();
  const bool refused = resp2->error || (resp2->experts.size() == 1 && resp2->experts[0].error);
  EXPECT_TRUE(refused);
}

TEST(NodeInProcessTest, BlobRouteServesTheStoreVerified) {
  InProcessNode a, b;
  ASSERT_TRUE(a.node && b.node);
  Bytes data(300 * 1024 + 17);
  std::mt19937 rng(5);
  for (auto& x : data) x = static_cast<uint8_t>(rng());
  auto put = a.parts.store->Put(ByteSpan(data.data(), data.size()));
  ASSERT_TRUE(put) << put.error().ToString();
  EXPECT_FALSE(b.parts.store->Has(put->hash));

  auto got = transfer::FetchBlobHttp(*b.parts.store, put->hash, a.node->http_endpoint());
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(got->size, data.size());
  auto back = ReadFile(b.parts.store->DataPath(put->hash));
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), data.size());
  EXPECT_EQ(std::memcmp(back->data(), data.data(), data.size()), 0);

  // A blob a does not hold: 404 on the route, kNotFound from the fetch.
  Bytes other(100, 1);
  auto h = b.parts.store->Put(ByteSpan(other.data(), other.size()));
  ASSERT_TRUE(h);
  auto http = a.Client().Send("GET", "/blobs/" + h->hash.ToHex());
  ASSERT_TRUE(http);
  EXPECT_EQ(http->status, 404);
}

}  // namespace
}  // namespace tenzro::node
