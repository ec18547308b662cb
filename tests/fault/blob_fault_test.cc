// Faults of blob transfer into a running node (docs/reliability.md):
//   * a provider that sends corrupted data (one byte flipped: in the size
//     header, in a parent hash pair, in a leaf) or truncated data (half the
//     stream, only part of the size header) on a real socket: the node's
//     load-expert refuses it naming the peer, no partial blob is visible, the
//     store verifies, the node keeps serving and a load from an honest peer
//     then works;
//   * the disk filling up during a blob write: the node's blob directory is
//     on a 1 MiB tmpfs the test mounts in a private mount namespace (needs
//     root), almost filled; fetching a 250 KiB expert fails with an explicit
//     out-of-space error, leaves nothing behind, the node keeps serving, and
//     the same fetch works once space is freed.
#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "blob/blob_uri.h"
#include "fault/fault_util.h"

namespace tenzro::fault {
namespace {

// unshare(1) by absolute path (children are spawned without a PATH search).
std::string UnshareBin() {
  for (const char* p : {"/usr/bin/unshare", "/bin/unshare", "/usr/sbin/unshare"})
    if (std::filesystem::exists(p)) return p;
  return "unshare";
}

// Everything the node keeps serving after a failed load: health, status.
void ExpectServing(const RunningNode& n) {
  EXPECT_TRUE(Healthy(n));
  Call s = AdminCall(n, "GET", "/v1/moe/status");
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(BlobFaultTest, CorruptOrTruncatedProviderIsRefused) {
  TempDir tmp;
  RunningNode r = StartNode(tmp.Join("r"));
  ASSERT_TRUE(r.running());
  json prepared = PrepareLayer(r, 0);
  ASSERT_FALSE(HasFailure());
  const json& e0 = prepared["experts"][0];
  const std::string uri = e0["uri"];
  const uint64_t size = e0["bytes"];
  auto hash = blob::ParseHashOrUri(uri);
  ASSERT_TRUE(hash);
  RunningNode x = StartNode(tmp.Join("x"));
  ASSERT_TRUE(x.running());

  // The bad provider relays R's stream for the blob, altered by `mangle`.
  std::function<void(std::string&)> mangle;
  std::atomic<int> served{0};
  const net::Endpoint r_http = r.http;
  TestServer bad;
  bad.router().Add("GET", "/blobs/", [&](const net::Request& req) {
    ++served;
    net::HttpClient up(r_http);
    auto got = up.Send("GET", req.target);
    std::string body = got ? got->body : std::string();
    mangle(body);
    net::Response resp = net::Response::Text(200, body);
    resp.content_type = "application/octet-stream";
    return resp;
  });
  ASSERT_TRUE(bad.Start());

  struct Case {
    std::string name;
    std::function<void(std::string&)> mangle;
  };
  auto flip = [](size_t at) { return [at](std::string& b) { if (at < b.size()) b[at] ^= 0x01; }; };
  const std::vector<Case> cases = {
      {"flipped size header", flip(3)},
      {"flipped parent hash", flip(8 + 10)},
      {"flipped leaf byte", flip(size / 2)},
      {"flipped last byte", [](std::string& b) { b.back() ^= 0x80; }},
      {"truncated to half", [](std::string& b) { b.resize(b.size() / 2); }},
      {"truncated size header", [](std::string& b) { b.resize(4); }},
      {"empty body", [](std::string& b) { b.clear(); }},
  };
  for (const Case& c : cases) {
    mangle = c.mangle;
    const int before = served.load();
    Call l = LoadExpert(x, 0, 0, uri, bad.url());
    EXPECT_EQ(served.load(), before + 1) << c.name;
    EXPECT_FALSE(l.ok()) << c.name << ": a bad stream was accepted";
    EXPECT_NE(l.message().find(bad.endpoint().HostPort()), std::string::npos)
        << c.name << ": the error must name the peer: " << l.message();
    std::printf("[fault] provider %s: %d %s\n", c.name.c_str(), l.status, l.message().c_str());
    auto store = blob::BlobStore::Open(x.dir + "/blobs");
    ASSERT_TRUE(store);
    EXPECT_FALSE((*store)->Has(*hash)) << c.name << ": a bad blob became visible";
    EXPECT_EQ(StoreProblems(x.dir + "/blobs"), "") << c.name;
    ExpectServing(x);
  }
  // The honest provider then works, and the blob verifies.
  Call ok = LoadExpert(x, 0, 0, uri, r.http_url());
  ASSERT_TRUE(ok.ok()) << ok.message();
  auto store = blob::BlobStore::Open(x.dir + "/blobs");
  ASSERT_TRUE(store);
  EXPECT_TRUE((*store)->Has(*hash));
  EXPECT_EQ(StoreProblems(x.dir + "/blobs"), "");
  bad.Stop();
  EXPECT_EQ(x.Stop(), 0);
  EXPECT_EQ(r.Stop(), 0);
}

TEST(BlobFaultTest, DiskFullDuringBlobWrite) {
  ASSERT_EQ(geteuid(), 0u) << "this test needs root: it mounts a 1 MiB tmpfs for the node's blob directory in a "
                              "private mount namespace (unshare -m); CI runs as root";
  TempDir tmp;
  RunningNode r = StartNode(tmp.Join("r"));
  ASSERT_TRUE(r.running());
  json prepared = PrepareLayer(r, 0);
  ASSERT_FALSE(HasFailure());
  const std::string uri = prepared["experts"][0]["uri"];
  const uint64_t size = prepared["experts"][0]["bytes"];
  ASSERT_GT(size, 200u * 1024);

  // X's blobs live on the tmpfs (DIR/vol, seen only by X): DIR/blobs is a
  // link to DIR/vol/blobs; 1 MiB, of which all but ~100 KiB is a filler file.
  const std::string dir = tmp.Join("x");
  ASSERT_TRUE(std::filesystem::create_directories(dir + "/vol"));
  std::filesystem::create_directory_symlink("vol/blobs", dir + "/blobs");
  const std::string script = "mount -t tmpfs -o size=1m tmpfs '" + dir + "/vol' && mkdir '" + dir +
                             "/vol/blobs' && head -c 940000 /dev/zero > '" + dir + "/vol/filler' && exec '" +
                             tenzro::testing::TenzroBin() + "' --data-dir '" + dir + "' node run --threads 2";
  RunningNode x = StartNodeArgv(dir, {UnshareBin(), "-m", "--propagation", "private", "/bin/sh", "-c", script});
  ASSERT_TRUE(x.running()) << x.proc->Log();
  // The node's view of its blob dir, through its own mount namespace.
  const std::string ns_vol = "/proc/" + std::to_string(x.proc->pid()) + "/root" + dir + "/vol";
  ASSERT_TRUE(std::filesystem::exists(ns_vol + "/filler")) << "tmpfs not visible through /proc/PID/root";

  Call full = LoadExpert(x, 0, 0, uri, r.http_url());
  std::printf("[fault] disk full: %d %s\n", full.status, full.message().c_str());
  EXPECT_FALSE(full.ok());
  const std::string msg = full.message();
  EXPECT_TRUE(msg.find("No space left") != std::string::npos || msg.find("ENOSPC") != std::string::npos ||
              msg.find("disk full") != std::string::npos)
      << "the error must say the disk is full: " << msg;
  EXPECT_EQ(StoreProblems(ns_vol + "/blobs"), "") << "a partial blob is left behind";
  ExpectServing(x);

  // Space freed: the same fetch now works and verifies.
  std::filesystem::remove(ns_vol + "/filler");
  Call ok = LoadExpert(x, 0, 0, uri, r.http_url());
  EXPECT_TRUE(ok.ok()) << ok.message();
  auto store = blob::BlobStore::Open(ns_vol + "/blobs");
  ASSERT_TRUE(store);
  EXPECT_TRUE((*store)->Has(*blob::ParseHashOrUri(uri)));
  EXPECT_EQ(StoreProblems(ns_vol + "/blobs"), "");
  ExpectServing(x);
  EXPECT_EQ(x.Stop(), 0) << x.proc->Log();
  EXPECT_EQ(r.Stop(), 0);
}

}  // namespace
}  // namespace tenzro::fault
