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

namespace {

// The draft to feed after `tok`: prompt lookup over the tail of the session's
// tokens plus `tok`, capped so that a fully accepted draft never takes the
// generation past max_tokens nor the session past its capacity.
std::vector<int32_t> NextDraft(const Session& session, int32_t tok, const GenerateOptions& o, int generated,
                               int32_t n_vocab, std::vector<int32_t>& hist) {
  const int room = std::min({o.max_tokens - generated - 1, session.max_tokens() - session.n_past() - 1,
                             session.rollback_max() - 1});
  if (o.draft.draft_max <= 0 || room <= 0) return {};
  const auto& all = session.tokens();
  const size_t tail = static_cast<size_t>(o.draft.scan_max) + static_cast<size_t>(o.draft.ngram_max) + 1;
  hist.assign(all.end() - static_cast<ptrdiff_t>(std::min(all.size(), tail)), all.end());
  hist.push_back(tok);
  std::vector<int32_t> draft;
  if (o.drafter) {
    hist.assign(all.begin(), all.end());
    hist.push_back(tok);
    draft = o.drafter(hist, std::min(room, o.draft.draft_max));
    for (int32_t& t : draft)  // a bad id would fail the whole step
      if (t < 0 || t >= n_vocab) t = 0;
  } else {
    draft = PromptLookupDraft(hist, o.draft);
  }
  if (static_cast<int>(draft.size()) > room) draft.resize(static_cast<size_t>(room));
  return draft;
}

}  // namespace

Result<GenerateResult> Generate(Engine& engine, Session& session, std::span<const int32_t> prompt,
                                const GenerateOptions& options, const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) return Error::InvalidArgument("generate: empty prompt");
  if (options.max_tokens < 0) return Error::InvalidArgument("generate: max_tokens {} < 0", options.max_tokens);
  if (session.n_past() != 0) return Error::InvalidArgument("generate: the session is not fresh");
  TENZRO_CHECK_OK(options.draft.Validate());
  if (options.draft.draft_max > 0 && session.rollback_max() < 2)
    return Error::InvalidArgument("generate: drafts need a session created with rollback steps (rollback_tokens >= 2)");
  TENZRO_TRY(Sampler sampler, Sampler::Create(options.sampling));
  for (int32_t t : prompt) sampler.Accept(t);
  using Clock = std::chrono::steady_clock;
  const size_t n_vocab = static_cast<size_t>(engine.hparams().n_vocab);
  GenerateResult res;
  res.prompt_tokens = static_cast<int>(prompt.size());
  std::vector<float> logits;
  auto t0 = Clock::now();
  Engine::SeqInput in{&session, prompt, options.collect_logits};
  TENZRO_CHECK_OK(engine.Step({&in, 1}, logits));
  res.prefill_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (options.collect_logits) res.logits = logits;
  auto t1 = Clock::now();
  auto row = [&](size_t i) { return std::span<const float>(logits.data() + i * n_vocab, n_vocab); };
  // Delivers `t`; false when generation ends with it (res.finish set).
  auto emit = [&](int32_t t) {
    if (!options.ignore_eog && std::find(options.eog.begin(), options.eog.end(), t) != options.eog.end()) {
      res.finish = FinishReason::kEog;
      return false;
    }
    res.tokens.push_back(t);
    sampler.Accept(t);
    if (on_token && !on_token(t)) {
      res.finish = FinishReason::kStop;
      return false;
    }
    return static_cast<int>(res.tokens.size()) < options.max_tokens;  // else: length, the last needs no logits
  };
  std::vector<int32_t> feed, hist;
  if (options.max_tokens > 0) {
    TENZRO_TRY(int32_t tok, sampler.Sample(row(logits.size() / n_vocab - 1)));
    while (emit(tok)) {
      if (session.n_past() >= session.max_tokens()) break;  // context full: finish as length
      std::vector<int32_t> draft = NextDraft(session, tok, options, static_cast<int>(res.tokens.size()),
                                                 engine.hparams().n_vocab, hist);
      const bool spec = !draft.empty();
      feed.assign(1, tok);
      feed.insert(feed.end(), draft.begin(), draft.end());
      Engine::SeqInput st{&session, feed, spec, spec};
      TENZRO_CHECK_OK(engine.Step({&st, 1}, logits));
      res.steps++;
      res.drafted += static_cast<int>(draft.size());
      // Row i predicts the token after feed[0..i]: verify draft[i] against it.
      size_t i = 0;
      bool more = true;
      for (; i < draft.size(); ++i) {
        TENZRO_TRY(tok, sampler.SampleDraft(row(i), draft[i]));
        if (tok != draft[i]) break;  // tok: the correction, delivered next round
        res.accepted++;
        if (!(more = emit(tok))) break;
      }
      if (i == draft.size() && more) {  // all accepted (or none drafted): the next token
        TENZRO_TRY(tok, sampler.Sample(row(i)));
      }
      const size_t keep = std::min(i + 1, feed.size());
      if (spec) TENZRO_CHECK_OK(engine.Rollback(&session, static_cast<int>(keep)));
      if (options.collect_logits) res.logits.insert(res.logits.end(), logits.begin(), logits.begin() + keep * n_vocab);
      if (!more) break;
    }
  }
  res.decode_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  return res;
}

}  // namespace tenzro::model
