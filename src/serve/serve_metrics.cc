#include "serve/serve_metrics.h"

#include <fmt/format.h>

namespace tenzro::serve {

ServeMetrics::ServeMetrics()
    : requests_("tenzro_serve_requests_total", "OpenAI API requests answered, by route and HTTP status.",
                {"route", "status"}),
      prompt_tokens_("tenzro_serve_prompt_tokens_total", "Prompt tokens of accepted generation requests."),
      generated_tokens_("tenzro_serve_generated_tokens_total", "Tokens generated and delivered."),
      drafted_("tenzro_serve_drafted_tokens_total", "Drafted tokens fed for verification (speculative decoding)."),
      accepted_("tenzro_serve_accepted_tokens_total", "Drafted tokens accepted (delivered without a step of their own)."),
      ttft_("tenzro_serve_time_to_first_token_seconds", "Request arrival to its first generated token.",
            {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      itl_("tenzro_serve_inter_token_seconds", "Time between two generated tokens of one request.",
           {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      step_("tenzro_serve_step_seconds", "Duration of one batched engine step.",
            {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}),
      batch_("tenzro_serve_batch_sequences", "Sequences in one engine step.", {1, 2, 4, 8, 16, 32, 64}) {}

void ServeMetrics::ObserveStep(const StepInfo& s) {
  step_.Observe(s.ms / 1000.0);
  batch_.Observe(s.sequences);
  if (s.drafted > 0) drafted_.Inc(static_cast<uint64_t>(s.drafted));
  if (s.accepted > 0) accepted_.Inc(static_cast<uint64_t>(s.accepted));
}

void ServeMetrics::Render(const SchedulerStats* st, std::string& out) const {
  requests_.Render(out);
  prompt_tokens_.Render(out);
  generated_tokens_.Render(out);
  drafted_.Render(out);
  accepted_.Render(out);
  ttft_.Render(out);
  itl_.Render(out);
  step_.Render(out);
  batch_.Render(out);
  auto gauge = [&](const char* name, const char* help, double v) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, v);
  };
  gauge("tenzro_serve_model_loaded", "1 when the served model is loaded.", st ? 1 : 0);
  if (!st) return;
  gauge("tenzro_serve_active", "Sequences in the running batch.", st->active);
  gauge("tenzro_serve_queued", "Requests waiting to join the batch.", st->queued);
  gauge("tenzro_serve_session_bytes", "Session (KV and recurrent state) bytes reserved.",
        static_cast<double>(st->session_bytes));
  gauge("tenzro_serve_session_budget_bytes", "Session byte budget.", static_cast<double>(st->session_budget));
  out += fmt::format("# HELP tenzro_serve_steps_total Batched engine steps.\n# TYPE tenzro_serve_steps_total counter\n"
                     "tenzro_serve_steps_total {}\n",
                     st->steps);
}

}  // namespace tenzro::serve
