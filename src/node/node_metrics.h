// tenzro node: the node's own Prometheus families on GET /metrics
// (docs/operations.md, "Metrics") and the recent-forwards log the dashboard
// shows (node/dashboard.h).
//
// Families (core/metrics.h):
//   tenzro_forwards_total{outcome="ok"|"error"}             distributed forwards
//   tenzro_forward_stage_seconds{stage}                     histogram; stages
//       gate, shared, plan, exec, combine, dispatch, total
//   tenzro_transport_bytes_total{transport, traffic, direction}
//       transport http|quic|local, traffic exec|blob, direction sent|received
//   tenzro_blob_fetches_total{transport, outcome}           outcome "ok" or the
//       error code's name (core/error.h: not_found, unavailable, corruption, ...)
//   tenzro_blob_fetch_bytes_total{transport}                verified bytes fetched
//   tenzro_blob_verify_failures_total{transport}            streams that did not verify
// Blob fetches and transfers are free functions without a Node, so there is
// one NodeMetrics per process (a `tenzro node run` process runs one node).
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/metrics.h"
#include "dispatch/executor.h"

namespace tenzro::node {

class Node;

// One distributed forward as the dashboard lists it.
struct ForwardRecord {
  int64_t unix_ms = 0;
  std::string model;
  int layer = -1;
  int64_t n_tokens = 0;
  bool ok = false;
  std::string error;                                     // when !ok
  std::vector<std::pair<std::string, double>> stages_ms;  // ("gate", 1.2), ...
  int rounds = 0;
  std::vector<std::string> transports;  // of the holder calls, in call order
};

class NodeMetrics {
 public:
  static constexpr size_t kRecentForwards = 20;

  NodeMetrics();

  // Counts the forward, observes its stage times, keeps it in the log.
  void RecordForward(ForwardRecord r);
  // The last kRecentForwards forwards, newest first: [{"unix_ms", "model",
  // "layer", "n_tokens", "ok", "error"?, "stages_ms": {...}, "rounds",
  // "transports": [...]}].
  nlohmann::json RecentForwards() const;

  // transport: "http" | "quic" | "local"; traffic: "exec" | "blob".
  void AddBytes(std::string_view transport, std::string_view traffic, uint64_t sent, uint64_t received);
  // One blob fetch over `transport`: nullopt = verified and stored (`bytes`
  // = its size), else the failure's code (kCorruption also counts a
  // verification failure).
  void RecordBlobFetch(std::string_view transport, std::optional<ErrorCode> failure, uint64_t bytes);

  void Render(std::string& out) const;

  const metrics::LabelledCounter& forwards() const { return forwards_; }
  const metrics::LabelledCounter& transport_bytes() const { return bytes_; }

 private:
  metrics::LabelledCounter forwards_;
  metrics::Histogram stages_;
  metrics::LabelledCounter bytes_;
  metrics::LabelledCounter blob_fetches_;
  metrics::LabelledCounter blob_fetch_bytes_;
  metrics::LabelledCounter blob_verify_failures_;
  mutable std::mutex mu_;
  std::deque<ForwardRecord> recent_;  // newest first; mu_
};

// The process's metrics.
NodeMetrics& ProcessMetrics();

// `inner` counting its exec traffic into ProcessMetrics() as `transport`:
// the row bytes of each request (sent) and answer (received), rows x the
// wire dtype's size (frame headers not counted; "local" = rows handed to
// this node's runner without encoding).
std::shared_ptr<dispatch::Executor> CountingExecutor(std::shared_ptr<dispatch::Executor> inner,
                                                     std::string transport);

// Adds ProcessMetrics() to the node's GET /metrics. Before Run().
void AddNodeMetrics(Node& node);

}  // namespace tenzro::node
