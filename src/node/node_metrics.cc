#include "node/node_metrics.h"

#include "node/node.h"

namespace tenzro::node {

NodeMetrics::NodeMetrics()
    : forwards_("tenzro_forwards_total", "Distributed forwards answered by this node, by outcome.", {"outcome"}),
      stages_("tenzro_forward_stage_seconds", "Time of each stage of a distributed forward (ok forwards).",
              metrics::LatencyBucketsSeconds(), {"stage"}),
      bytes_("tenzro_transport_bytes_total",
             "Bytes moved, by transport (http, quic, local), traffic (exec, blob) and direction (sent, received).",
             {"transport", "traffic", "direction"}),
      blob_fetches_("tenzro_blob_fetches_total", "Blob fetches from peers, by transport and outcome.",
                    {"transport", "outcome"}),
      blob_fetch_bytes_("tenzro_blob_fetch_bytes_total", "Verified bytes of blobs fetched from peers.", {"transport"}),
      blob_verify_failures_("tenzro_blob_verify_failures_total",
                            "Blob streams from peers that failed verification (dropped).", {"transport"}) {
  forwards_.Touch({"ok"});
  forwards_.Touch({"error"});
  for (const char* t : {"http", "quic", "local"})
    for (const char* d : {"sent", "received"}) bytes_.Touch({t, "exec", d});
  for (const char* d : {"sent", "received"}) bytes_.Touch({"http", "blob", d});
  blob_fetches_.Touch({"http", "ok"});
  blob_fetch_bytes_.Touch({"http"});
  blob_verify_failures_.Touch({"http"});
}

void NodeMetrics::RecordForward(ForwardRecord r) {
  forwards_.Inc({r.ok ? "ok" : "error"});
  if (r.ok)
    for (const auto& [stage, ms] : r.stages_ms) stages_.Observe({stage}, ms / 1000.0);
  std::lock_guard<std::mutex> lock(mu_);
  recent_.push_front(std::move(r));
  while (recent_.size() > kRecentForwards) recent_.pop_back();
}

nlohmann::json NodeMetrics::RecentForwards() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : recent_) {
    nlohmann::json stages = nlohmann::json::object();
    for (const auto& [k, v] : r.stages_ms) stages[k] = v;
    nlohmann::json j = {{"unix_ms", r.unix_ms}, {"model", r.model},   {"layer", r.layer},
                        {"n_tokens", r.n_tokens}, {"ok", r.ok},       {"stages_ms", stages},
                        {"rounds", r.rounds},   {"transports", r.transports}};
    if (!r.ok) j["error"] = r.error;
    arr.push_back(std::move(j));
  }
  return arr;
}

void NodeMetrics::AddBytes(std::string_view transport, std::string_view traffic, uint64_t sent, uint64_t received) {
  const std::string t(transport), k(traffic);
  if (sent) bytes_.Inc({t, k, "sent"}, sent);
  if (received) bytes_.Inc({t, k, "received"}, received);
}

void NodeMetrics::RecordBlobFetch(std::string_view transport, std::optional<ErrorCode> failure, uint64_t bytes) {
  const std::string t(transport);
  blob_fetches_.Inc({t, failure ? std::string(ErrorCodeName(*failure)) : std::string("ok")});
  if (!failure) blob_fetch_bytes_.Inc({t}, bytes);
  if (failure == ErrorCode::kCorruption) blob_verify_failures_.Inc({t});
}

void NodeMetrics::Render(std::string& out) const {
  forwards_.Render(out);
  stages_.Render(out);
  bytes_.Render(out);
  blob_fetches_.Render(out);
  blob_fetch_bytes_.Render(out);
  blob_verify_failures_.Render(out);
}

namespace {

class Counting : public dispatch::Executor {
 public:
  Counting(std::shared_ptr<dispatch::Executor> inner, std::string transport)
      : inner_(std::move(inner)), transport_(std::move(transport)) {}
  Result<dispatch::ExecResponse> Exec(const dispatch::HolderTarget& target, const dispatch::ExecRequest& req,
                                      std::chrono::milliseconds timeout) override {
    return Count(req, inner_->Exec(target, req, timeout));
  }
  Result<dispatch::ExecResponse> ExecCancellable(const dispatch::HolderTarget& target,
                                                 const dispatch::ExecRequest& req, std::chrono::milliseconds timeout,
                                                 CancelToken& cancel) override {
    return Count(req, inner_->ExecCancellable(target, req, timeout, cancel));
  }

 private:
  Result<dispatch::ExecResponse> Count(const dispatch::ExecRequest& req, Result<dispatch::ExecResponse> r) {
    uint64_t sent = 0, received = 0;
    for (const auto& b : req.experts) sent += dispatch::RowBytesOnWire(req.dtype, b.rows.size());
    if (r)
      for (const auto& e : r->experts) received += dispatch::RowBytesOnWire(r->dtype, e.rows.size());
    ProcessMetrics().AddBytes(transport_, "exec", sent, received);
    return r;
  }
  std::shared_ptr<dispatch::Executor> inner_;
  std::string transport_;
};

}  // namespace

std::shared_ptr<dispatch::Executor> CountingExecutor(std::shared_ptr<dispatch::Executor> inner,
                                                     std::string transport) {
  if (!inner) return nullptr;
  return std::make_shared<Counting>(std::move(inner), std::move(transport));
}

NodeMetrics& ProcessMetrics() {
  static NodeMetrics* m = new NodeMetrics();  // never destroyed: used until the process exits
  return *m;
}

void AddNodeMetrics(Node& node) {
  node.AddMetrics([](std::string& out) { ProcessMetrics().Render(out); });
}

}  // namespace tenzro::node
