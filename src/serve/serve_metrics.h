// tenzro serve: Prometheus metrics of the OpenAI API and the batch scheduler
// (rendered on the node's GET /metrics; docs/serving.md lists them).
//
//   tenzro_serve_requests_total{route,status}       answered requests
//   tenzro_serve_prompt_tokens_total                prompt tokens of accepted requests
//   tenzro_serve_generated_tokens_total             tokens delivered
//   tenzro_serve_time_to_first_token_seconds        request arrival -> first token
//   tenzro_serve_inter_token_seconds                between two tokens of one request
//   tenzro_serve_step_seconds                       one Engine::Step
//   tenzro_serve_batch_sequences                    sequences per step
//   tenzro_serve_drafted_tokens_total               drafted tokens fed (speculative decoding)
//   tenzro_serve_accepted_tokens_total              of those, accepted
//   tenzro_serve_active / _queued / _session_bytes  gauges, read at scrape time
// Thread-safety: every method from any thread.
#pragma once

#include <string>

#include "core/metrics.h"
#include "serve/scheduler.h"

namespace tenzro::serve {

class ServeMetrics {
 public:
  ServeMetrics();
  void CountRequest(const std::string& route, int status) { requests_.Inc({route, std::to_string(status)}); }
  void AddPromptTokens(uint64_t n) { prompt_tokens_.Inc(n); }
  void AddGeneratedToken() { generated_tokens_.Inc(); }
  void ObserveTtft(double s) { ttft_.Observe(s); }
  void ObserveInterToken(double s) { itl_.Observe(s); }
  void ObserveStep(const StepInfo& s);
  // Appends every family; the gauges from `stats` (nullptr: not loaded).
  void Render(const SchedulerStats* stats, std::string& out) const;
  uint64_t requests(const std::string& route, int status) const {
    return requests_.value({route, std::to_string(status)});
  }

 private:
  metrics::LabelledCounter requests_;
  metrics::Counter prompt_tokens_, generated_tokens_, drafted_, accepted_;
  metrics::Histogram ttft_, itl_, step_, batch_;
};

}  // namespace tenzro::serve
