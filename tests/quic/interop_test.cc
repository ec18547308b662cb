// Interop with real iroh nodes from npm: @number0/iroh@1.1.0 (iroh 1.0.x
// endpoints, both directions) and @number0/iroh@0.35.0 (iroh-blobs: its
// provider against our getter, its getter against our provider).
//
// Safety: those packages probe gateways and public relays, so everything
// that runs them happens inside a fresh network namespace with loopback only
// (`unshare -n`, then `ip link set lo up`). The outer test (normal network)
// installs the packages with npm into the build dir, then re-runs this test
// binary inside the namespace, where the IrohInNetns.* tests register
// themselves (TENZRO_QUIC_IN_NETNS=1) and print one INTEROP line per case.
// Without npm, the packages or unshare the test says so loudly and is
// skipped, never passed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "blob/blob_store.h"
#include "identity/identity.h"
#include "quic/iroh_blobs.h"
#include "quic/quic_client.h"
#include "quic/rpc.h"
#include "testutil/testutil.h"

namespace tenzro::quic {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<uint64_t> kBlobSizes = {0, 1, 1023, 1024, 16384, 16385, 100000, (1u << 20) + 1};

std::string Which(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
  std::string dir;
  while (std::getline(ss, dir, ':'))
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  for (const char* d : {"/usr/sbin", "/sbin"})
    if (::access((std::string(d) + "/" + name).c_str(), X_OK) == 0) return std::string(d) + "/" + name;
  return "";
}

std::string SelfExe() { return fs::read_symlink("/proc/self/exe").string(); }
std::string InteropDir() { return fs::path(SelfExe()).parent_path().string() + "/quic-interop"; }
std::string ScriptDir() { return tenzro::testing::ProjectSourceDir() + "/tests/quic/iroh"; }
std::string Modules(const std::string& which) { return InteropDir() + "/" + which + "/node_modules"; }

Bytes Pattern(uint64_t n) {  // the same bytes as blobs_peer.mjs
  Bytes b(n);
  for (uint64_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i * 7919) / 8);
  return b;
}

std::string Hex(ByteSpan b) { return ToHex(b); }
std::string Hex(const std::string& s) { return ToHex(ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size())); }

// The last JSON line of `text` that has `key`, or null.
json LastJsonWith(const std::string& text, const std::string& key) {
  std::stringstream ss(text);
  std::string line;
  json found;
  while (std::getline(ss, line)) {
    if (line.empty() || line[0] != '{') continue;
    auto j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.contains(key)) found = j;
  }
  return found;
}

void Report(const std::string& line) { std::cout << "INTEROP " << line << std::endl; }

// ---------- inside the namespace ----------

// A running node script that printed its {"ready":true,...} line.
struct NodePeer {
  std::unique_ptr<testing::ChildProcess> proc;
  json ready;
};

NodePeer StartPeer(const testing::TempDir& dir, const std::string& modules, std::vector<std::string> args) {
  NodePeer p;
  std::string log = dir.Join("peer-" + std::to_string(::getpid()) + "-" + args[1] + ".log");
  args.insert(args.begin(), Which("node"));
  p.proc = std::make_unique<testing::ChildProcess>(args, log, std::vector<std::string>{"IROH_NODE_MODULES=" + modules});
  testing::WaitFor([&] { return !LastJsonWith(p.proc->Log(), "ready").is_null() || !p.proc->running(); },
                   std::chrono::seconds(60));
  p.ready = LastJsonWith(p.proc->Log(), "ready");
  if (p.ready.is_null()) ADD_FAILURE() << "iroh peer did not start:\n" << p.proc->Log();
  return p;
}

json RunScript(const std::string& modules, std::vector<std::string> args) {
  args.insert(args.begin(), Which("node"));
  auto r = testing::Run(args, std::chrono::seconds(120), {"IROH_NODE_MODULES=" + modules});
  json j = LastJsonWith(r.out, "ok");
  if (j.is_null()) ADD_FAILURE() << "no result from " << args[1] << ": exit " << r.exit_code << "\n" << r.out << r.err;
  return j;
}

void EndpointBothDirections() {
  testing::TempDir dir;
  std::string modules = Modules("iroh1");
  std::string script = ScriptDir() + "/endpoint_peer.mjs";
  identity::Identity me = identity::Identity::Generate();
  auto ours = QuicClient::Start(me).value();
  ours->RunOnLoop([](Endpoint& ep) {
    ep.AddProtocol(kExecAlpn, MakeRpcProtocol(ep.io(), [](const std::string& peer, Bytes req, Reply reply) {
      std::string prefix = "tenzro-echo:" + peer.substr(0, 8) + ":";
      Bytes out(prefix.begin(), prefix.end());
      out.insert(out.end(), req.begin(), req.end());
      reply(out);
    }));
  });
  std::string addr = ours->endpoint().local_endpoint().HostPort();

  // 1. iroh dials us with our ALPN.
  json r = RunScript(modules, {script, "dial", me.node_id(), addr, kExecAlpn, Hex(std::string("hello from iroh"))});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_EQ(r["remote_id"], me.node_id());
  std::string reply_hex = r["reply_hex"];
  ASSERT_GE(reply_hex.size(), 2u);
  EXPECT_EQ(reply_hex.substr(0, 2), "00");  // status ok
  EXPECT_NE(reply_hex.find(Hex(std::string("hello from iroh"))), std::string::npos);
  Report("iroh@1.1.0 dials tenzro, ALPN tenzro/moe-exec/1: OK (handshake, node id, request/reply)");

  // 2. iroh dials us with an ALPN we do not serve: refused; we keep serving.
  json bad = RunScript(modules, {script, "dial", me.node_id(), addr, "not-served/1", "00"});
  EXPECT_FALSE(bad.value("ok", true)) << bad.dump();
  json again = RunScript(modules, {script, "dial", me.node_id(), addr, kExecAlpn, "01"});
  EXPECT_TRUE(again.value("ok", false)) << again.dump();
  Report(std::string("iroh@1.1.0 dials tenzro with a wrong ALPN: refused (") + bad.value("error", "?").substr(0, 80) +
         "), next dial OK");

  // 3. We dial iroh with its ALPN.
  NodePeer peer = StartPeer(dir, modules, {script, "serve", "iroh/echo/0"});
  ASSERT_FALSE(peer.ready.is_null());
  std::string their_id = peer.ready["node_id"];
  auto their_addr = net::ParseEndpoint(peer.ready["addr"].get<std::string>()).value();
  std::string msg = "hello from tenzro";
  auto echoed = ours->Request({their_id, their_addr}, "iroh/echo/0",
                              ByteSpan(reinterpret_cast<const uint8_t*>(msg.data()), msg.size()));
  ASSERT_TRUE(echoed) << echoed.error().ToString() << "\n" << peer.proc->Log();
  EXPECT_EQ(std::string(echoed->begin(), echoed->end()), "iroh-echo:" + msg);
  json acc = LastJsonWith(peer.proc->Log(), "accepted");
  EXPECT_EQ(acc.value("peer", ""), me.node_id());  // iroh saw our node id
  Report("tenzro dials iroh@1.1.0, ALPN iroh/echo/0: OK (iroh saw node " + me.node_id().substr(0, 12) + ")");

  // 4. We dial iroh expecting another node id: refused in the handshake.
  auto wrong = ours->Request({identity::Identity::Generate().node_id(), their_addr}, "iroh/echo/0",
                             ByteSpan(reinterpret_cast<const uint8_t*>(msg.data()), msg.size()));
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), ErrorCode::kPermissionDenied) << wrong.error().ToString();
  Report("tenzro dials iroh@1.1.0 with a wrong node id: refused (" + std::string(ErrorCodeName(wrong.error().code())) + ")");
}

void BlobsAgainstIroh035() {
  testing::TempDir dir;
  std::string modules = Modules("iroh035");
  std::string script = ScriptDir() + "/blobs_peer.mjs";
  identity::Identity me = identity::Identity::Generate();
  auto store = std::shared_ptr<blob::BlobStore>(blob::BlobStore::Open(dir.Join("store")).value());
  ThreadPool pool(2, "blobs");
  auto ours = QuicClient::Start(me).value();
  ours->RunOnLoop([&](Endpoint& ep) { ep.AddProtocol(kIrohBlobsAlpn, MakeBlobsProvider(ep.io(), store, &pool)); });
  std::string addr = ours->endpoint().local_endpoint().HostPort();

  std::vector<std::string> args = {script, "provide", me.node_id(), addr};
  for (uint64_t s : kBlobSizes) args.push_back(std::to_string(s));
  NodePeer peer = StartPeer(dir, modules, args);
  ASSERT_FALSE(peer.ready.is_null());
  PeerAddr provider{peer.ready["node_id"], net::ParseEndpoint(peer.ready["addr"].get<std::string>()).value()};
  ASSERT_EQ(peer.ready["blobs"].size(), kBlobSizes.size());
  auto getter_store = blob::BlobStore::Open(dir.Join("got")).value();
  int cases = 0;
  for (const json& b : peer.ready["blobs"]) {
    uint64_t size = b["size"];
    Bytes data = Pattern(size);
    blob::Blake3Hash hash = blob::Blake3Hash::FromHex(b["hash"].get<std::string>()).value();
    EXPECT_EQ(hash, blob::Blake3(data)) << "iroh and tenzro disagree on the hash of " << size << " bytes";
    // Whole blob into our store.
    auto whole = FetchBlobQuic(*ours, provider, *getter_store, hash);
    ASSERT_TRUE(whole) << size << ": " << whole.error().ToString() << "\n" << peer.proc->Log();
    EXPECT_EQ(whole->size, size);
    auto got = getter_store->Get(hash).value();
    EXPECT_TRUE(got.bytes().size() == size && std::equal(data.begin(), data.end(), got.bytes().begin()));
    std::string line = fmt::format("iroh-blobs@0.35 provider -> tenzro getter, {:>7} B: whole OK", size);
    ++cases;
    // A middle range and the last chunk.
    uint64_t chunks = blob::ChunkCount(size);
    std::vector<std::pair<std::string, blob::ChunkRanges>> more;
    if (chunks >= 3) more.emplace_back("middle", blob::ChunkRanges::Range(chunks / 2 - 1, chunks / 2 + 1));
    else more.emplace_back("middle", blob::ChunkRanges::Range(0, std::max<uint64_t>(chunks, 1)));
    more.emplace_back("last", blob::ChunkRanges::LastChunk());
    for (const auto& [name, ranges] : more) {
      uint64_t verified = 0;
      bool same = true;
      auto r = FetchRangesQuic(*ours, provider, hash, ranges, [&](uint64_t off, ByteSpan d) -> Result<void> {
        same = same && off + d.size() <= size && std::memcmp(d.data(), data.data() + off, d.size()) == 0;
        verified += d.size();
        return Ok();
      });
      ASSERT_TRUE(r) << size << " " << name << ": " << r.error().ToString();
      EXPECT_TRUE(same) << size << " " << name;
      if (name == "last") {
        ASSERT_TRUE(r->has_value());
        EXPECT_EQ(**r, size);
      }
      std::string what = name == "last" ? "last chunk" : name + " [" + ranges.ToString() + "]";
      line += fmt::format(", {} OK ({} B verified{})", what, verified,
                          r->has_value() ? fmt::format(", size {} proven", **r) : "");
      ++cases;
    }
    Report(line);
  }
  EXPECT_EQ(cases, 3 * static_cast<int>(kBlobSizes.size()));

  // The other direction: a real iroh-blobs getter downloads from our provider.
  for (uint64_t size : {uint64_t{0}, uint64_t{16385}, uint64_t{(1u << 20) + 1}}) {
    Bytes data = Pattern(size);
    blob::BlobInfo info = store->Put(data).value();
    json r = RunScript(modules, {script, "get", me.node_id(), addr, info.hash.ToHex()});
    ASSERT_TRUE(r.value("ok", false)) << size << ": " << r.dump();
    EXPECT_EQ(r["size"].get<uint64_t>(), size);
    EXPECT_EQ(r["head_hex"].get<std::string>(), Hex(ByteSpan(data.data(), std::min<size_t>(16, data.size()))));
    Report(fmt::format("tenzro provider -> iroh-blobs@0.35 getter, {:>7} B: OK", size));
  }
}

class InNetnsTest : public ::testing::Test {
 public:
  explicit InNetnsTest(void (*body)()) : body_(body) {}
  void TestBody() override { body_(); }

 private:
  void (*body_)();
};

// Registered only inside the namespace, so normal runs do not list them.
[[maybe_unused]] const bool kRegistered = [] {
  if (std::getenv("TENZRO_QUIC_IN_NETNS") == nullptr) return false;
  ::testing::RegisterTest("IrohInNetns", "EndpointBothDirections", nullptr, nullptr, __FILE__, __LINE__,
                          []() -> ::testing::Test* { return new InNetnsTest(EndpointBothDirections); });
  ::testing::RegisterTest("IrohInNetns", "BlobsAgainstIroh035", nullptr, nullptr, __FILE__, __LINE__,
                          []() -> ::testing::Test* { return new InNetnsTest(BlobsAgainstIroh035); });
  return true;
}();

// ---------- outside: install, then run the inner tests in a namespace ----------

// Installs `pkg` into InteropDir()/sub with npm unless already there.
// Returns "" or why it could not.
std::string EnsureInstalled(const std::string& sub, const std::string& pkg, const std::string& version) {
  std::string dir = InteropDir() + "/" + sub;
  std::string manifest = dir + "/node_modules/@number0/iroh/package.json";
  if (fs::exists(manifest)) {
    std::ifstream f(manifest);
    auto j = json::parse(f, nullptr, false);
    if (!j.is_discarded() && j.value("version", "") == version) return "";
  }
  std::string npm = Which("npm");
  if (npm.empty()) return "npm is not installed (scripts/setup installs nodejs and npm)";
  fs::create_directories(dir);
  std::ofstream(dir + "/package.json") << R"({"name":"tenzro-quic-interop","version":"0.0.0","private":true})";
  auto r = testing::Run({npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save",
                         "--loglevel=error", pkg + "@" + version},
                        std::chrono::seconds(300));
  if (r.exit_code != 0 || !fs::exists(manifest))
    return "npm install " + pkg + "@" + version + " failed (exit " + std::to_string(r.exit_code) + "): " +
           r.err.substr(0, 400);
  return "";
}

TEST(IrohInterop, RealIrohNodesInALoopbackOnlyNetworkNamespace) {
  if (std::getenv("TENZRO_QUIC_IN_NETNS")) GTEST_SKIP() << "already inside the namespace";
  std::string unshare = Which("unshare"), ip = Which("ip"), node = Which("node");
  std::vector<std::string> missing;
  if (unshare.empty()) missing.push_back("unshare (util-linux)");
  if (ip.empty()) missing.push_back("ip (iproute2)");
  if (node.empty()) missing.push_back("node (nodejs)");
  for (auto [sub, ver] : {std::pair{"iroh1", "1.1.0"}, std::pair{"iroh035", "0.35.0"}}) {
    if (!missing.empty()) break;
    std::string why = EnsureInstalled(sub, "@number0/iroh", ver);
    if (!why.empty()) missing.push_back(why);
  }
  if (!missing.empty()) {
    std::string msg = "\n*** IROH INTEROP NOT RUN: ";
    for (const auto& m : missing) msg += m + "; ";
    std::cout << msg << "counted as SKIPPED, not passed ***\n" << std::endl;
    GTEST_SKIP() << msg;
  }
  // Probe: can we make a namespace at all (root, or user namespaces)?
  auto probe = testing::Run({unshare, "-n", ip, "link", "set", "lo", "up"}, std::chrono::seconds(30));
  if (probe.exit_code != 0) {
    std::cout << "\n*** IROH INTEROP NOT RUN: unshare -n failed (" << probe.err
              << "); counted as SKIPPED, not passed ***\n" << std::endl;
    GTEST_SKIP() << "unshare -n failed: " << probe.err;
  }
  auto r = testing::Run({unshare, "-n", "/bin/sh", "-c", "\"$0\" link set lo up && exec \"$1\" \"$2\"", ip, SelfExe(),
                         "--gtest_filter=IrohInNetns.*"},
                        std::chrono::seconds(280),
                        {"TENZRO_QUIC_IN_NETNS=1", "IROH1_MODULES=" + Modules("iroh1")});
  std::cout << r.out << std::endl;
  if (!r.err.empty()) std::cerr << r.err.substr(0, 4000) << std::endl;
  EXPECT_EQ(r.exit_code, 0) << "the tests inside the namespace failed";
  EXPECT_NE(r.out.find("[  PASSED  ] 2 tests"), std::string::npos);
  size_t lines = 0;
  for (size_t p = r.out.find("INTEROP "); p != std::string::npos; p = r.out.find("INTEROP ", p + 1)) ++lines;
  EXPECT_EQ(lines, 4 + kBlobSizes.size() + 3) << "one INTEROP line per direction and blob case";
}

}  // namespace
}  // namespace tenzro::quic
