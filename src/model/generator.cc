#include "model/generator.h"

#include <algorithm>
#include <chrono>

namespace tenzro::model {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kLength: return "length";
    case FinishReason::kEog: return "eos";
    case FinishReason::kStop: return "stop";
  }
  return "?";
}

Result<GenerateResult> Generate(Engine& engine, Session& session, std::span<const int32_t> prompt,
                                const GenerateOptions& options, const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) return Error::InvalidArgument("generate: empty prompt");
  if (options.max_tokens < 0) return Error::InvalidArgument("generate: max_tokens {} < 0", options.max_tokens);
  if (session.n_past() != 0) return Error::InvalidArgument("generate: the session is not fresh");
  TENZRO_TRY(Sampler sampler, Sampler::Create(options.sampling));
  for (int32_t t : prompt) sampler.Accept(t);
  using Clock = std::chrono::steady_clock;
  const int n_vocab = engine.hparams().n_vocab;
  GenerateResult res;
  res.prompt_tokens = static_cast<int>(prompt.size());
  std::vector<float> logits;
  auto t0 = Clock::now();
  Engine::SeqInput in{&session, prompt, options.collect_logits};
  TENZRO_CHECK_OK(engine.Step({&in, 1}, logits));
  res.prefill_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (options.collect_logits) res.logits = logits;
  auto t1 = Clock::now();
  for (int i = 0; i < options.max_tokens; ++i) {
    std::span<const float> last(logits.data() + logits.size() - n_vocab, n_vocab);
    TENZRO_TRY(int32_t tok, sampler.Sample(last));
    if (!options.ignore_eog && std::find(options.eog.begin(), options.eog.end(), tok) != options.eog.end()) {
      res.finish = FinishReason::kEog;
      break;
    }
    res.tokens.push_back(tok);
    sampler.Accept(tok);
    if (on_token && !on_token(tok)) {
      res.finish = FinishReason::kStop;
      break;
    }
    if (i + 1 == options.max_tokens) break;  // the last token needs no logits
    if (session.n_past() >= session.max_tokens()) break;  // context full: finish as length
    Engine::SeqInput st{&session, {&res.tokens.back(), 1}, false};
    TENZRO_CHECK_OK(engine.Step({&st, 1}, logits));
    if (options.collect_logits) res.logits.insert(res.logits.end(), logits.begin(), logits.end());
  }
  res.decode_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  return res;
}

}  // namespace tenzro::model
