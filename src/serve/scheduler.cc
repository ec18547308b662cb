#include "serve/scheduler.h"

#include <algorithm>
#include <chrono>

#include "model/draft.h"

namespace tenzro::serve {

struct Scheduler::Seq {
  uint64_t id = 0;
  GenRequest req;
  std::unique_ptr<model::Session> session;
  std::optional<model::Sampler> sampler;
  size_t prefilled = 0;            // prompt tokens fed so far
  std::vector<int32_t> generated;  // delivered tokens
  std::vector<int32_t> feed;       // this step's: the last token and its draft
  bool done = false;
  std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();
};

Scheduler::Scheduler(model::Engine* engine, SchedulerOptions options) : engine_(engine), options_(options) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  // Whatever is left (the worker never ran, or stopped mid-batch).
  for (auto& s : active_) Finish(*s, Error::Unavailable("the server is shutting down"), model::FinishReason::kLength);
  std::deque<std::unique_ptr<Seq>> left;
  {
    std::lock_guard lk(mu_);
    left.swap(waiting_);
  }
  for (auto& s : left) Finish(*s, Error::Unavailable("the server is shutting down"), model::FinishReason::kLength);
}

void Scheduler::Start() { worker_ = std::thread([this] { Loop(); }); }

Result<uint64_t> Scheduler::Submit(GenRequest req) {
  if (req.prompt.empty()) return Error::InvalidArgument("the prompt has no tokens");
  const int n_vocab = engine_->hparams().n_vocab;
  for (int32_t t : req.prompt)
    if (t < 0 || t >= n_vocab) return Error::InvalidArgument("prompt token {} outside [0, {})", t, n_vocab);
  if (req.max_tokens < 1) return Error::InvalidArgument("max_tokens {} < 1", req.max_tokens);
  if (!req.on_token || !req.on_done) return Error::InvalidArgument("a request needs on_token and on_done");
  TENZRO_TRY(model::Sampler sampler, model::Sampler::Create(req.sampling));
  auto s = std::make_unique<Seq>();
  s->req = std::move(req);
  s->sampler.emplace(std::move(sampler));
  for (int32_t t : s->req.prompt) s->sampler->Accept(t);
  uint64_t id;
  {
    std::lock_guard lk(mu_);
    if (stop_) return Error::Unavailable("the server is shutting down");
    const int in = active_count_ + static_cast<int>(waiting_.size());
    if (in >= options_.max_active + options_.max_waiting)
      return Error::ResourceExhausted("{} requests running and {} queued (limits {} + {}); retry later", active_count_,
                                      waiting_.size(), options_.max_active, options_.max_waiting);
    id = s->id = next_id_++;
    counters_.requests++;
    waiting_.push_back(std::move(s));
  }
  cv_.notify_all();
  return id;
}

void Scheduler::Cancel(uint64_t id) {
  {
    std::lock_guard lk(mu_);
    if (id == 0 || id >= next_id_) return;
    cancelled_.insert(id);
  }
  cv_.notify_all();
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lk(mu_);
  SchedulerStats s = counters_;
  s.active = active_count_;
  s.queued = static_cast<int>(waiting_.size());
  s.session_bytes = engine_->budget().used();
  s.session_budget = engine_->budget().limit();
  return s;
}

std::vector<RequestSnapshot> Scheduler::Requests(size_t max) const {
  std::vector<RequestSnapshot> out;
  std::lock_guard lk(mu_);
  out.reserve(std::min(max, running_.size() + waiting_.size()));
  for (const RequestSnapshot& r : running_) {
    if (out.size() >= max) return out;
    out.push_back(r);
  }
  for (const auto& s : waiting_) {
    if (out.size() >= max) break;
    RequestSnapshot r;
    r.id = s->id;
    r.queued = true;
    r.prompt_tokens = static_cast<int>(s->req.prompt.size());
    r.max_tokens = s->req.max_tokens;
    r.submitted = s->submitted;
    out.push_back(r);
  }
  return out;
}

void Scheduler::PublishLocked() {
  active_count_ = static_cast<int>(active_.size());
  running_.clear();
  for (const auto& s : active_) {
    if (s->done) continue;
    RequestSnapshot r;
    r.id = s->id;
    r.prompt_tokens = static_cast<int>(s->req.prompt.size());
    r.prefilled = static_cast<int>(s->prefilled);
    r.generated = static_cast<int>(s->generated.size());
    r.max_tokens = s->req.max_tokens;
    r.submitted = s->submitted;
    running_.push_back(r);
  }
}

void Scheduler::Finish(Seq& s, Result<void> status, model::FinishReason reason) {
  if (s.done) return;
  s.done = true;
  s.session.reset();  // back to the budget before the caller hears of it
  FinishEvent ev;
  ev.status = std::move(status);
  ev.reason = reason;
  ev.prompt_tokens = static_cast<int>(s.req.prompt.size());
  ev.completion_tokens = static_cast<int>(s.generated.size());
  if (defer_done_) deferred_.push_back([fn = std::move(s.req.on_done), ev = std::move(ev)] { fn(ev); });
  else s.req.on_done(ev);
}

void Scheduler::Loop() {
  while (true) {
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !waiting_.empty() || !active_.empty() || !cancelled_.empty(); });
      if (stop_) return;
    }
    RetireCancelled();
    Admit();
    RunStep();
  }
}

void Scheduler::RetireCancelled() {
  std::unordered_set<uint64_t> ids;
  std::vector<std::unique_ptr<Seq>> dropped;
  {
    std::lock_guard lk(mu_);
    ids.swap(cancelled_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (ids.count((*it)->id)) {
        dropped.push_back(std::move(*it));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : active_)
    if (ids.count(s->id)) dropped.push_back(std::move(s));
  std::erase(active_, nullptr);
  {
    std::lock_guard lk(mu_);
    PublishLocked();
  }
  for (auto& s : dropped) Finish(*s, Error::Unavailable("request {} cancelled", s->id), model::FinishReason::kStop);
}

void Scheduler::Admit() {
  while (static_cast<int>(active_.size()) < options_.max_active) {
    std::unique_ptr<Seq> s;
    {
      std::lock_guard lk(mu_);
      if (waiting_.empty()) break;
      s = std::move(waiting_.front());
      waiting_.pop_front();
    }
    const int ctx = static_cast<int>(s->req.prompt.size()) + s->req.max_tokens;
    const int rollback = options_.draft.draft_max > 0 ? options_.draft.draft_max + 1 : 0;
    Result<std::unique_ptr<model::Session>> sess = engine_->NewSession(ctx, rollback);
    if (!sess) {
      if (sess.error().code() == ErrorCode::kResourceExhausted && !active_.empty()) {
        // Wait for a running sequence to give its bytes back.
        std::lock_guard lk(mu_);
        waiting_.push_front(std::move(s));
        break;
      }
      Finish(*s, sess.error(), model::FinishReason::kLength);
      continue;
    }
    s->session = std::move(*sess);
    active_.push_back(std::move(s));
  }
  std::lock_guard lk(mu_);
  PublishLocked();
}

bool Scheduler::RunStep() {
  if (active_.empty()) return false;
  using Clock = std::chrono::steady_clock;
  // Decoders first (one token each), then prompt chunks in admission order.
  std::vector<model::Engine::SeqInput> batch;
  std::vector<Seq*> fed;
  int budget = std::max(options_.max_step_tokens, 1);
  int decoders = 0, drafted = 0;
  for (auto& s : active_) decoders += s->prefilled == s->req.prompt.size();
  int spare = budget - decoders;  // for drafts
  std::vector<int32_t> hist;
  for (auto& s : active_) {
    if (s->prefilled < s->req.prompt.size()) continue;
    s->feed.assign(1, s->generated.back());
    if (options_.draft.draft_max > 0 && spare > 0) {
      const model::Session& ss = *s->session;
      const int room = std::min({s->req.max_tokens - static_cast<int>(s->generated.size()) - 1,
                                 ss.max_tokens() - ss.n_past() - 1, ss.rollback_max() - 1, spare});
      if (room > 0) {
        const auto& all = ss.tokens();
        const size_t tail = options_.drafter ? all.size()
                                             : static_cast<size_t>(options_.draft.scan_max + options_.draft.ngram_max) + 1;
        hist.assign(all.end() - static_cast<ptrdiff_t>(std::min(all.size(), tail)), all.end());
        hist.push_back(s->generated.back());
        std::vector<int32_t> d = options_.drafter ? options_.drafter(hist, room)
                                                  : model::PromptLookupDraft(hist, options_.draft);
        if (static_cast<int>(d.size()) > room) d.resize(static_cast<size_t>(room));
        for (int32_t& t : d)
          if (t < 0 || t >= engine_->hparams().n_vocab) t = 0;  // a bad id would fail the whole step
        s->feed.insert(s->feed.end(), d.begin(), d.end());
        spare -= static_cast<int>(d.size());
        drafted += static_cast<int>(d.size());
      }
    }
    const bool spec = s->feed.size() > 1;
    batch.push_back({s->session.get(), s->feed, spec, spec});
    fed.push_back(s.get());
    budget -= static_cast<int>(s->feed.size());
  }
  for (auto& s : active_) {
    const size_t left = s->req.prompt.size() - s->prefilled;
    if (left == 0) continue;
    if (budget <= 0 && !batch.empty()) break;
    const size_t n = std::min<size_t>(left, static_cast<size_t>(std::max(budget, 1)));
    batch.push_back({s->session.get(), std::span<const int32_t>(s->req.prompt).subspan(s->prefilled, n), false});
    fed.push_back(s.get());
    budget -= static_cast<int>(n);
  }
  int rows = 0, prompt_rows = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    rows += static_cast<int>(batch[i].tokens.size());
    if (fed[i]->prefilled < fed[i]->req.prompt.size()) prompt_rows += static_cast<int>(batch[i].tokens.size());
  }
  auto t0 = Clock::now();
  defer_done_ = true;  // on_done after this step is counted
  Result<void> st = engine_->Step(batch, logits_);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  uint64_t delivered = 0;
  int accepted = 0, decode_rows = 0;
  if (!st) {
    for (Seq* s : fed) Finish(*s, st.error(), model::FinishReason::kLength);
  } else {
    const size_t n_vocab = static_cast<size_t>(engine_->hparams().n_vocab);
    size_t at = 0;  // first logits row of sequence i
    for (size_t i = 0; i < fed.size(); ++i) {
      Seq& s = *fed[i];
      const size_t n_rows = batch[i].all_logits ? batch[i].tokens.size() : 1;
      const std::span<const float> rows(logits_.data() + at * n_vocab, n_rows * n_vocab);
      at += n_rows;
      if (s.prefilled < s.req.prompt.size()) {
        s.prefilled += batch[i].tokens.size();
        if (s.prefilled < s.req.prompt.size()) continue;  // more prompt next step
      } else {
        decode_rows += static_cast<int>(batch[i].tokens.size());
      }
      const size_t before = s.generated.size();
      if (batch[i].rollback) accepted += Verify(s, rows);
      else Advance(s, rows);
      delivered += s.generated.size() - before;
    }
  }
  std::erase_if(active_, [](const std::unique_ptr<Seq>& s) { return s->done; });
  {
    std::lock_guard lk(mu_);
    PublishLocked();
    counters_.steps++;
    counters_.prompt_tokens += static_cast<uint64_t>(prompt_rows);
    counters_.generated_tokens += delivered;
    counters_.decode_rows += static_cast<uint64_t>(decode_rows);
    counters_.drafted_tokens += static_cast<uint64_t>(drafted);
    counters_.accepted_tokens += static_cast<uint64_t>(accepted);
    counters_.last_step_ms = ms;
  }
  if (observer_) observer_({static_cast<int>(batch.size()), rows, ms, static_cast<int>(delivered), drafted, accepted});
  defer_done_ = false;
  std::vector<std::function<void()>> done;
  done.swap(deferred_);
  for (auto& fn : done) fn();
  return true;
}

bool Scheduler::Advance(Seq& s, std::span<const float> row) {
  Result<int32_t> tok = s.sampler->Sample(row);
  if (!tok) {
    Finish(s, tok.error(), model::FinishReason::kLength);
    return false;
  }
  return Deliver(s, *tok, row, s.session->n_past());
}

int Scheduler::Verify(Seq& s, std::span<const float> rows) {
  const size_t n_vocab = static_cast<size_t>(engine_->hparams().n_vocab);
  const int d = static_cast<int>(s.feed.size()) - 1;
  const int pos0 = s.session->n_past() - d - 1;  // before the step
  auto row = [&](int i) { return rows.subspan(static_cast<size_t>(i) * n_vocab, n_vocab); };
  auto keep = [&](int n) {
    Result<void> r = engine_->Rollback(s.session.get(), n);
    if (!r) Finish(s, r.error(), model::FinishReason::kLength);
  };
  for (int i = 0; i < d; ++i) {  // row i predicts the token after feed[0..i]
    Result<int32_t> tok = s.sampler->SampleDraft(row(i), s.feed[i + 1]);
    if (!tok) {
      Finish(s, tok.error(), model::FinishReason::kLength);
      return i;
    }
    const bool hit = *tok == s.feed[i + 1];
    if (!Deliver(s, *tok, row(i), pos0 + i + 1)) return i + hit;  // finished (session freed)
    if (!hit) {
      keep(i + 1);  // the corrected token is fed next step
      return i;
    }
  }
  if (Advance(s, row(d))) keep(d + 1);  // all kept: ends the step's rollback state
  return d;
}

bool Scheduler::Deliver(Seq& s, int32_t tok, std::span<const float> row, int kept) {
  if (std::find(s.req.eog.begin(), s.req.eog.end(), tok) != s.req.eog.end()) {
    Finish(s, Ok(), model::FinishReason::kEog);
    return false;
  }
  TokenEvent ev;
  ev.id = tok;
  if (s.req.top_logprobs >= 0) {
    Result<model::LogprobResult> lp = model::Logprobs(row, tok, s.req.top_logprobs);
    if (lp) ev.logprob = std::move(*lp);
  }
  s.generated.push_back(tok);
  s.sampler->Accept(tok);
  if (!s.req.on_token(ev)) {
    Finish(s, Ok(), model::FinishReason::kStop);
    return false;
  }
  if (static_cast<int>(s.generated.size()) >= s.req.max_tokens || kept >= s.session->max_tokens()) {
    Finish(s, Ok(), model::FinishReason::kLength);
    return false;
  }
  return true;
}

}  // namespace tenzro::serve
