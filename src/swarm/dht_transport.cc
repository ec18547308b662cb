#include "swarm/dht_transport.h"

#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <opendht.h>

#include "swarm/declaration.h"
#include "identity/envelope.h"
#include "swarm/dht_socket.h"
#include "swarm/provider.h"
#include "swarm/value_id.h"

namespace tenzro::swarm {

struct DhtTransport::Impl {
  DhtOptions options;
  dht::DhtRunner runner;
  std::vector<std::pair<std::string, std::string>> bootstrap;  // host, port
  std::shared_ptr<const DhtSocketCounters> socket_counts;
  mutable std::mutex stats_mu;  // guards the request totals below
  mutable std::array<uint64_t, DhtStats::kRequestTypes> requests_in{}, requests_out{};
};

namespace {

// "HOST:PORT" -> (host, port); IPv6 as "[::1]:4222".
Result<std::pair<std::string, std::string>> SplitHostPort(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
    return Error::InvalidArgument("bootstrap '{}' is not HOST:PORT", s);
  std::string host = s.substr(0, colon), port = s.substr(colon + 1);
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  for (char c : port) {
    if (c < '0' || c > '9') return Error::InvalidArgument("bootstrap '{}': port '{}' is not a number", s, port);
  }
  if (port.size() > 5 || std::stoul(port) == 0 || std::stoul(port) > 65535)
    return Error::InvalidArgument("bootstrap '{}': port {} out of range 1..65535", s, port);
  return std::make_pair(host, port);
}

// Where a valid tenzro record belongs (value_id.h); nullopt when `data` is
// not one.
std::optional<RecordSlot> SlotOf(const std::vector<uint8_t>& data) {
  if (data.size() > kMaxRecordBytes) return std::nullopt;
  return RecordSlotOf(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
}

// tenzro's value type: storing nodes keep only valid signed records, for at
// most 5 minutes, each only at the value id its signer and content give
// (value_id.h), and replace one only by a newer record of the same slot. So
// a holder's refresh replaces its previous value, and nobody else can
// overwrite it, occupy its future ids, or push it out with a replay.
dht::ValueType TenzroValueType() {
  return dht::ValueType(
      kTenzroValueType, "tenzro-record", std::chrono::minutes(5),
      [](dht::InfoHash, std::shared_ptr<dht::Value>& v, const dht::InfoHash&, const dht::SockAddr&) {
        if (!v) return false;
        const auto slot = SlotOf(v->data);
        return slot && slot->value_id == v->id;
      },
      [](dht::InfoHash, const std::shared_ptr<dht::Value>& old_v, std::shared_ptr<dht::Value>& new_v,
         const dht::InfoHash&, const dht::SockAddr&) {
        if (!old_v || !new_v) return false;
        const auto slot = SlotOf(new_v->data);
        if (!slot || slot->value_id != new_v->id) return false;
        const auto held = SlotOf(old_v->data);
        return !held || slot->version >= held->version;
      });
}

}  // namespace

DhtTransport::DhtTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DhtTransport::~DhtTransport() {
  if (!impl_) return;
  try {
    impl_->runner.join();
  } catch (...) {
  }
}

Result<std::unique_ptr<DhtTransport>> DhtTransport::Start(const DhtOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  for (const std::string& b : options.bootstrap) {
    TENZRO_TRY(auto hp, SplitHostPort(b));
    impl->bootstrap.push_back(std::move(hp));
  }
  dht::DhtRunner::Config config;
  config.dht_config.node_config.network = kTenzroDhtNetwork;
  config.threaded = true;
  const std::string port = std::to_string(options.port);
  const bool v6 = options.bind_host.find(':') != std::string::npos;
  try {
    // The runner's socket is ours, so its bytes are counted (DhtStats).
    std::vector<dht::SockAddr> bind = dht::SockAddr::resolve(options.bind_host, port);
    if (bind.empty()) return Error::Unavailable("DHT: cannot resolve {}", options.bind_host);
    auto sock = CountingUdpSocket::Open(bind.front(), options.receive_buffer_bytes);
    if (!sock) return Error::Unavailable("DHT: cannot start on {}:{}: {}", options.bind_host, options.port,
                                         sock.error().ToString());
    impl->socket_counts = (*sock)->counters();
    (v6 ? config.bind6 : config.bind4) = bind.front();
    dht::DhtRunner::Context context;
    context.sock = std::move(*sock);
    impl->runner.run(config, std::move(context));
  } catch (const std::exception& e) {
    return Error::Unavailable("DHT: cannot start on {}:{}: {}", options.bind_host, options.port, e.what());
  }
  impl->runner.registerType(TenzroValueType());
  if (impl->runner.getBoundPort(v6 ? AF_INET6 : AF_INET) == 0)
    return Error::Unavailable("DHT: could not bind UDP {}:{}", options.bind_host, options.port);
  std::unique_ptr<DhtTransport> t(new DhtTransport(std::move(impl)));
  t->Rebootstrap();
  return t;
}

void DhtTransport::Rebootstrap() {
  for (const auto& [host, port] : impl_->bootstrap) impl_->runner.bootstrap(host, port);
}

uint16_t DhtTransport::port() const {
  const bool v6 = impl_->options.bind_host.find(':') != std::string::npos;
  return impl_->runner.getBoundPort(v6 ? AF_INET6 : AF_INET);
}

DhtStats DhtTransport::stats() const {
  DhtStats s;
  unsigned cached = 0;
  const bool v6 = impl_->options.bind_host.find(':') != std::string::npos;
  impl_->runner.getNodesStats(v6 ? AF_INET6 : AF_INET, &s.good_nodes, &s.dubious_nodes, &cached, &s.incoming_nodes);
  {
    std::lock_guard<std::mutex> lock(impl_->stats_mu);
    const std::vector<unsigned> in = impl_->runner.getNodeMessageStats(true);
    const std::vector<unsigned> out = impl_->runner.getNodeMessageStats(false);
    for (size_t i = 0; i < DhtStats::kRequestTypes; ++i) {
      if (i < in.size()) impl_->requests_in[i] += in[i];
      if (i < out.size()) impl_->requests_out[i] += out[i];
    }
    s.requests_in = impl_->requests_in;
    s.requests_out = impl_->requests_out;
  }
  const DhtSocketCounters& c = *impl_->socket_counts;
  s.datagrams_in = c.datagrams_in.load(std::memory_order_relaxed);
  s.datagrams_out = c.datagrams_out.load(std::memory_order_relaxed);
  s.bytes_in = c.bytes_in.load(std::memory_order_relaxed);
  s.bytes_out = c.bytes_out.load(std::memory_order_relaxed);
  return s;
}

void DhtTransport::AwaitPeers() {
  // A node that has just started knows no peer until its bootstrap nodes
  // answer (a few ms on a LAN); a search before that finds nothing. Wait for
  // the first peer, bounded by op_timeout. A network of one never waits.
  if (impl_->bootstrap.empty()) return;
  const auto deadline = std::chrono::steady_clock::now() + impl_->options.op_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const DhtStats s = stats();
    if (s.good_nodes + s.dubious_nodes + s.incoming_nodes > 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Result<void> DhtTransport::Put(const std::string& key, uint64_t value_id, std::string value) {
  AwaitPeers();
  if (value.size() > dht::MAX_VALUE_SIZE - 1024)
    return Error::ResourceExhausted("DHT: value of {} bytes exceeds the {} byte limit", value.size(),
                                    dht::MAX_VALUE_SIZE - 1024);
  auto v = std::make_shared<dht::Value>(kTenzroValueType,
                                        reinterpret_cast<const uint8_t*>(value.data()), value.size(), value_id);
  auto done = std::make_shared<std::promise<bool>>();
  auto fut = done->get_future();
  impl_->runner.put(dht::InfoHash::get(key), v, [done](bool ok) {
    try {
      done->set_value(ok);
    } catch (...) {  // a second callback
    }
  });
  // A put that found no other node (a network of one) is stored locally and
  // answers false: that is not an error, so only the wait is bounded.
  fut.wait_for(impl_->options.op_timeout);
  return Ok();
}

Result<std::vector<std::string>> DhtTransport::Get(const std::string& key) {
  AwaitPeers();
  struct State {
    std::mutex mu;
    // Distinct values, not keyed by value id: a dishonest node may answer a
    // forged value under somebody else's id, which must not shadow the
    // genuine one (readers verify every value).
    std::set<std::string> values;
    std::promise<void> done;
    bool finished = false;
  };
  auto st = std::make_shared<State>();
  auto fut = st->done.get_future();
  impl_->runner.get(
      dht::InfoHash::get(key),
      [st](const std::vector<std::shared_ptr<dht::Value>>& values) {
        std::lock_guard<std::mutex> lock(st->mu);
        for (const auto& v : values) {
          if (!v || v->data.empty() || v->data.size() > kMaxRecordBytes) continue;
          // A valid record away from its own value id is a squatter that a
          // dishonest storing node kept (value_id.h): dropped here. Invalid
          // records go on to the reader, which counts them as forgeries.
          const std::optional<RecordSlot> slot = SlotOf(v->data);
          if (slot && slot->value_id != v->id) continue;
          st->values.emplace(v->data.begin(), v->data.end());
        }
        return true;
      },
      [st](bool) {
        std::lock_guard<std::mutex> lock(st->mu);
        if (!st->finished) {
          st->finished = true;
          st->done.set_value();
        }
      });
  if (fut.wait_for(impl_->options.op_timeout) != std::future_status::ready) {
    // Whatever arrived so far is still useful; the search goes on in the
    // runner and its callbacks only touch `st`.
  }
  std::lock_guard<std::mutex> lock(st->mu);
  std::vector<std::string> out;
  out.reserve(st->values.size());
  for (const auto& v : st->values) out.push_back(v);
  return out;
}

}  // namespace tenzro::swarm
