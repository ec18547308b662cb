// A swarm of many holders in one process, for bench/scale_bench.cc (header-
// only, like serve_swarm.h): H holders of one MoE model, each its own
// identity, its own swarm::DhtTransport (real OpenDHT) on its own loopback
// address and UDP port (holder k on 127.0.(1 + k / 250).(1 + k % 250), so
// OpenDHT's per-address rate limits see H machines), and its own
// swarm::SwarmAgent declaring its share of the experts through the real code
// path (split into DHT-sized parts, signed, put, refreshed, read back into
// its snapshot). Every transport bootstraps off holder 0.
//
// Placement: expert i of the model (row-major over MoE layers) is held by
// holders i % H and (i + H / 2) % H: replication 2, every holder an equal
// share. No expert bytes exist: the HoldingsFn returns declared entries
// (q4_k_m formats, a made-up 64-hex blob hash per expert), which is all the
// agent needs to declare an expert.
//
// Not thread-safe: one thread drives a ScaleSwarm; the agents run their own
// threads. Setup failures are returned as errors.
#pragma once

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "catalog/model_shape.h"
#include "core/result.h"
#include "identity/identity.h"
#include "swarm/agent.h"
#include "swarm/dht_transport.h"

namespace tenzro::bench {

struct ScaleHolder {
  std::shared_ptr<swarm::DhtTransport> transport;
  std::unique_ptr<swarm::SwarmAgent> agent;
  std::string host;
  std::string node_id;
  int64_t complete_ms = -1;  // when its snapshot first covered every expert at full replication
  bool alive = true;
};

inline std::string ScaleHost(int k) { return fmt::format("127.0.{}.{}", 1 + k / 250, 1 + k % 250); }

// The experts each of h holders declares for `shape`: expert i (row-major
// over the MoE layers) goes to holders i % h and (i + h / 2) % h.
inline std::vector<std::vector<swarm::HeldExpert>> ScaleShares(const catalog::ModelShape& shape, int h) {
  std::vector<std::vector<swarm::HeldExpert>> out(h);
  int i = 0;
  for (int l = 0; l < shape.n_layer; ++l) {
    if (shape.layers[l].n_expert == 0) continue;
    const std::string down = catalog::UseMoreBits(l, shape.n_layer) ? "q6_k" : "q4_k";
    for (int e = 0; e < shape.layers[l].n_expert; ++e, ++i) {
      swarm::HeldExpert x;
      x.layer = l;
      x.expert = e;
      x.gate_format = x.up_format = "q4_k";
      x.down_format = down;
      x.blob_hash = fmt::format("{:016x}{:016x}{:016x}{:016x}", 0x5ca1eull + l, 0xb10bull + e, l * 7919ull + e, 42ull);
      out[i % h].push_back(x);
      if (h > 1) out[(i + h / 2) % h].push_back(std::move(x));
    }
  }
  return out;
}

// Process resident set (bytes), from /proc/self/statm.
inline uint64_t ResidentBytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// The kernel's UDP receive-buffer drops so far (RcvbufErrors in
// /proc/net/snmp): machine-wide, so only a hint of whose datagrams.
inline uint64_t UdpRcvbufErrors() {
  std::ifstream f("/proc/net/snmp");
  std::string line, header;
  while (std::getline(f, line)) {
    if (line.rfind("Udp: ", 0) != 0) continue;
    if (header.empty()) {
      header = line;
      continue;
    }
    std::istringstream hs(header), vs(line);
    std::string name, value;
    while (hs >> name && vs >> value)
      if (name == "RcvbufErrors") return std::stoull(value);
  }
  return 0;
}

// Heap bytes of one declaration as held in memory (strings past the small-
// string buffer, vectors by capacity).
inline size_t DeclarationBytes(const swarm::Declaration& d) {
  auto str = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
  size_t b = sizeof(swarm::Declaration) + str(d.node_id) + str(d.model);
  for (const auto& e : d.endpoints) b += sizeof(e) + str(e.kind) + str(e.address);
  b += d.experts.capacity() * sizeof(swarm::HeldExpert);
  for (const auto& e : d.experts) b += str(e.gate_format) + str(e.up_format) + str(e.down_format) + str(e.blob_hash);
  b += d.gates.capacity() * sizeof(swarm::HeldGate) + d.offers.capacity() * sizeof(swarm::OfferedBlob);
  return b;
}

class ScaleSwarm {
 public:
  ScaleSwarm(catalog::ModelShape shape, swarm::AgentOptions options, swarm::DhtOptions dht)
      : shape_(std::move(shape)), options_(std::move(options)), dht_(std::move(dht)) {}
  ~ScaleSwarm() { Stop(); }

  // Starts h DHT nodes (not the agents) and waits, at most `wait`, until each
  // knows a peer. Starting runs on `threads` threads.
  Result<void> StartNodes(int h, std::chrono::milliseconds wait, int threads = 8) {
    holders_.resize(h);
    for (int k = 0; k < h; ++k) holders_[k].host = ScaleHost(k);
    swarm::DhtOptions o = dht_;
    o.bind_host = holders_[0].host;
    TENZRO_TRY(auto boot, swarm::DhtTransport::Start(o));
    holders_[0].transport = std::move(boot);
    const std::string bootstrap = fmt::format("{}:{}", holders_[0].host, holders_[0].transport->port());
    std::vector<std::string> errors(h);
    ForEach(1, h, threads, [&](int k) {
      swarm::DhtOptions ok = o;
      ok.bind_host = holders_[k].host;
      ok.bootstrap = {bootstrap};
      auto t = swarm::DhtTransport::Start(ok);
      if (t) holders_[k].transport = std::move(*t);
      else errors[k] = t.error().ToString();
    });
    for (int k = 0; k < h; ++k)
      if (!errors[k].empty()) return Error::Unavailable("holder {}: {}", k, errors[k]);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (int k = 0; k < h; ++k) {
      for (;;) {
        const swarm::DhtStats s = holders_[k].transport->stats();
        if (s.good_nodes + s.dubious_nodes + s.incoming_nodes > 0) break;
        if (std::chrono::steady_clock::now() > deadline) return Error::Unavailable("holder {} found no peer", k);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    return Ok();
  }

  // Creates and starts every agent (Start publishes at once) on `threads`
  // threads.
  void StartAgents(int threads = 8) {
    const int h = static_cast<int>(holders_.size());
    std::vector<std::vector<swarm::HeldExpert>> shares = ScaleShares(shape_, h);
    for (int k = 0; k < h; ++k) {
      identity::Identity id = identity::Identity::Generate();
      holders_[k].node_id = id.node_id();
      auto share = std::make_shared<std::vector<swarm::HeldExpert>>(std::move(shares[k]));
      std::vector<swarm::Endpoint> eps = {{"quic", fmt::format("{}:4433", holders_[k].host)},
                                          {"http", fmt::format("http://{}:8080", holders_[k].host)}};
      const std::string model = shape_.id;
      holders_[k].agent = std::make_unique<swarm::SwarmAgent>(
          holders_[k].transport, std::move(id), std::move(eps), options_, [share, model] {
            swarm::Declaration d;
            d.model = model;
            d.experts = *share;
            d.memory_budget = uint64_t{64} << 30;
            d.free_bytes = uint64_t{8} << 30;
            return std::vector<swarm::Declaration>{std::move(d)};
          });
    }
    ForEach(0, h, threads, [&](int k) { holders_[k].agent->Start(); });
  }

  // Stops holder k: with `leave`, as a clean shutdown ("leaving" published);
  // without, as a crash (agent and DHT node gone without a word).
  void StopHolder(int k, bool leave) {
    ScaleHolder& x = holders_[k];
    if (!x.alive) return;
    x.alive = false;
    x.agent->Stop(leave);
    x.agent.reset();
    x.transport.reset();
  }

  void Stop(int threads = 8) {
    ForEach(0, static_cast<int>(holders_.size()), threads, [&](int k) {
      if (holders_[k].agent) holders_[k].agent->Stop(false);
    });
    ForEach(0, static_cast<int>(holders_.size()), threads, [&](int k) {
      holders_[k].agent.reset();
      holders_[k].transport.reset();
      holders_[k].alive = false;
    });
    holders_.clear();
  }

  std::vector<ScaleHolder>& holders() { return holders_; }
  const catalog::ModelShape& shape() const { return shape_; }

 private:
  template <typename F>
  static void ForEach(int begin, int end, int threads, F f) {
    std::atomic<int> next{begin};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&] {
        for (int k; (k = next++) < end;) f(k);
      });
    for (auto& t : ts) t.join();
  }

  catalog::ModelShape shape_;
  swarm::AgentOptions options_;
  swarm::DhtOptions dht_;
  std::vector<ScaleHolder> holders_;
};

}  // namespace tenzro::bench
