// Admission through a real node process on loopback (docs/security.md): a
// flood of large request bodies, as a stranger who follows HTTP but not good
// manners would send them, costs the node a bounded amount of memory.
//   * 8 connections announce 60 MB exec frames at once and hold them open
//     one byte short of the end: with --max-inflight-body-bytes 128MiB
//     exactly two are admitted (2 x 60 MB fit, a third does not); the others
//     get 503 + Retry-After as soon as their head arrives, body unread;
//   * 4 connections announce 60 MB to other public routes: 413 from the
//     head (--public-body-bytes, 4 MiB by default);
//   * the node's peak RSS grows by less than the in-flight cap plus slack
//     (before admission existed: +730 MB for 12 x 60 MB), and it still
//     answers honest requests afterwards.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <thread>

#include "core/file.h"
#include "testutil/node_process.h"
#include "testutil/sanitizer.h"

namespace tenzro::node {
namespace {

using tenzro::testing::kAsanQuarantineMiB;
using tenzro::testing::NodeOptions;
using tenzro::testing::RunningNode;
using tenzro::testing::StartNode;
using tenzro::testing::TempDir;

using tenzro::testing::ProcStatusBytes;

// The status of an HTTP answer already received on `fd` within `wait`, or 0.
int EarlyStatus(int fd, std::chrono::milliseconds wait) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return 0;
  char buf[16] = {};
  const ssize_t n = ::recv(fd, buf, 12, MSG_WAITALL);
  if (n < 12 || std::string_view(buf, 9) != "HTTP/1.1 ") return -1;
  return std::atoi(buf + 9);
}

// One hostile upload: announces `total` bytes to `target`, sends all but the
// last byte unless answered first, waits at `sync`, sends the last byte and
// returns the status (-1: no readable answer).
int Upload(uint16_t port, const std::string& target, uint64_t total, std::barrier<>& sync) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int status = -1;
  bool sent_all_but_one = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0) {
    const std::string head = "POST " + target + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(total) +
                             "\r\nConnection: close\r\n\r\n";
    if (::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size())) {
      status = EarlyStatus(fd, std::chrono::milliseconds(300));
      if (status == 0) {
        const std::string piece(1 << 20, 'z');
        uint64_t left = total - 1;
        while (left > 0) {
          const size_t n = static_cast<size_t>(std::min<uint64_t>(left, piece.size()));
          if (::send(fd, piece.data(), n, MSG_NOSIGNAL) != static_cast<ssize_t>(n)) break;
          left -= n;
        }
        sent_all_but_one = left == 0;
        status = -1;
      }
    }
  }
  sync.arrive_and_wait();
  if (sent_all_but_one && ::send(fd, "z", 1, MSG_NOSIGNAL) == 1) {
    char buf[16] = {};
    if (::recv(fd, buf, 12, MSG_WAITALL) == 12 && std::string_view(buf, 9) == "HTTP/1.1 ") status = std::atoi(buf + 9);
  }
  ::close(fd);
  return status;
}

// Prepares and loads expert 0/0 of the tiny model (n_embd 256) on `n`.
void HoldATinyExpert(const RunningNode& n) {
  const nlohmann::json res = tenzro::testing::PrepareTinyLayer(n, "tiny-qwen35moe", 0, {"--experts", "0"});
  ASSERT_TRUE(res.is_object());
  nlohmann::json le = n.CliJson({"moe", "load-expert", "--model", "tiny-qwen35moe", "--layer", "0", "--expert", "0",
                                 "--file", res["experts"][0]["uri"].get<std::string>(), "--json"});
  ASSERT_EQ(le.value("n_embd", 0), 256) << le.dump();
}

// The exec body limit is sized from what the node holds: a node holding
// nothing admits exec bodies up to the public limit only; holding an expert
// of n_embd 256, up to the largest frame the exec limits accept for it
// (65,536 f32 rows of 256: ~64 MiB). Decided from the head alone.
TEST(AdmissionProcessTest, TheExecBodyLimitFollowsTheModelsHeld) {
  TempDir tmp;
  NodeOptions o;
  o.run_args = {"--public-body-bytes", "1MiB"};
  RunningNode n = StartNode(tmp.Join("n"), o);
  ASSERT_TRUE(n.running());
  auto status_of = [&](uint64_t bytes) {
    std::barrier one(1);
    return Upload(n.http.port, "/v1/moe/exec", bytes, one);
  };
  EXPECT_EQ(status_of(2'000'000), 413);     // nothing held: over the 1 MiB floor
  EXPECT_EQ(status_of(100'000), 422);       // within it: read, then refused as a frame
  HoldATinyExpert(n);
  EXPECT_EQ(status_of(2'000'000), 422);     // admitted now
  EXPECT_EQ(status_of(70'000'000), 413);    // over 65,536 x 256 x 4 + headers
  EXPECT_EQ(n.Stop(), 0) << n.proc->Log();
}

TEST(AdmissionProcessTest, AFloodOfLargeBodiesCostsABoundedAmountOfMemory) {
  TempDir tmp;
  NodeOptions o;
  o.run_args = {"--max-inflight-body-bytes", "128MiB"};
  RunningNode n = StartNode(tmp.Join("n"), o);
  ASSERT_TRUE(n.running());
  HoldATinyExpert(n);  // exec bodies up to ~64 MiB (n_embd 256) are then admissible
  const pid_t pid = n.proc->pid();
  const uint64_t hwm_before = ProcStatusBytes(pid, "VmHWM");
  ASSERT_GT(hwm_before, 0u);

  constexpr uint64_t kBody = 60'000'000;
  std::vector<std::string> targets(8, "/v1/moe/exec");
  for (int i = 0; i < 4; ++i) targets.push_back("/v1/health");
  std::barrier sync(static_cast<std::ptrdiff_t>(targets.size()));
  std::vector<int> status(targets.size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < targets.size(); ++i)
    threads.emplace_back([&, i] { status[i] = Upload(n.http.port, targets[i], kBody, sync); });
  for (auto& t : threads) t.join();

  const std::vector<int> exec(status.begin(), status.begin() + 8), other(status.begin() + 8, status.end());
  // Admitted exec frames are read whole, then refused as frames (not a
  // frame: 422); the others were refused at their head.
  EXPECT_EQ(std::count(exec.begin(), exec.end(), 422), 2) << ::testing::PrintToString(status);
  EXPECT_EQ(std::count(exec.begin(), exec.end(), 503), 6) << ::testing::PrintToString(status);
  EXPECT_EQ(std::count(other.begin(), other.end(), 413), 4) << ::testing::PrintToString(status);

  const uint64_t hwm_after = ProcStatusBytes(pid, "VmHWM");
  const double grew_mib = (static_cast<double>(hwm_after) - static_cast<double>(hwm_before)) / (1 << 20);
  std::printf("[admission] peak RSS %.1f -> %.1f MiB (+%.1f MiB) for 12 x 60 MB bodies, in-flight cap 128 MiB\n",
              hwm_before / 1048576.0, hwm_after / 1048576.0, grew_mib);
  // Two admitted 60 MB bodies (~115 MiB) plus the parser's buffers and
  // the frame decoder's working set; without the cap, 12 bodies (~690 MiB).
  EXPECT_LT(grew_mib, 128 + 64 + kAsanQuarantineMiB);

  net::HttpClient c(n.http);
  auto health = c.Send("GET", "/v1/health");
  ASSERT_TRUE(health) << health.error().ToString();
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(n.Stop(), 0) << n.proc->Log();
}

}  // namespace
}  // namespace tenzro::node
