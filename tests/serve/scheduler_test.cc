// The batch scheduler on the tiny Qwen3.5-MoE: tokens independent of the
// batch, one engine step per scheduler step, the queue bound, cancellation.
#include "serve/scheduler.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>

#include "model/engine.h"
#include "model/generator.h"
#include "testutil/testutil.h"

namespace tenzro::serve {
namespace {

std::unique_ptr<model::Engine> OpenTiny(uint64_t session_budget = 1ull << 30) {
  model::EngineOptions o;
  o.threads = 2;
  o.session_budget = session_budget;
  auto e = model::Engine::Open(testing::DataPath("model/tiny-qwen35moe-tok-BF16.gguf"), o);
  EXPECT_TRUE(e.has_value()) << e.error().ToString();
  return e ? std::move(*e) : nullptr;
}

// Collects one request's tokens and its finish.
struct Sink {
  std::vector<int32_t> tokens;
  std::promise<FinishEvent> done;
  std::future<FinishEvent> future = done.get_future();
  std::function<bool(int32_t)> stop_when;  // optional

  GenRequest Request(std::vector<int32_t> prompt, int max_tokens, model::SamplingParams s) {
    GenRequest r;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.sampling = s;
    r.on_token = [this](const TokenEvent& ev) {
      tokens.push_back(ev.id);
      return !(stop_when && stop_when(ev.id));
    };
    r.on_done = [this](const FinishEvent& fe) { done.set_value(fe); };
    return r;
  }
  FinishEvent Wait() {
    EXPECT_EQ(future.wait_for(std::chrono::seconds(120)), std::future_status::ready);
    return future.get();
  }
};

model::SamplingParams Sampled(uint64_t seed) {
  model::SamplingParams s;
  s.temperature = 0.9f;
  s.top_p = 0.95f;
  s.seed = seed;
  return s;
}

const std::vector<int32_t> kPromptA = {51, 71, 68, 220, 506, 266};
const std::vector<int32_t> kPromptB = {895, 270, 876, 89};
std::vector<int32_t> LongPrompt() {
  std::vector<int32_t> p;
  for (int i = 0; i < 40; ++i) p.push_back((100 + 37 * i) % 1000);
  return p;
}

TEST(SchedulerTest, TokensDoNotDependOnTheBatch) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  SchedulerOptions o;
  o.max_step_tokens = 8;  // the long prompt is prefilled over several steps
  std::vector<int32_t> alone;
  {
    Sink a;  // before the scheduler: its destructor finishes pending requests into them
    Scheduler s(engine.get(), o);
    s.Start();
    ASSERT_TRUE(s.Submit(a.Request(kPromptA, 12, Sampled(7))).has_value());
    FinishEvent fe = a.Wait();
    ASSERT_TRUE(fe.status.has_value());
    alone = a.tokens;
  }
  ASSERT_FALSE(alone.empty());
  Sink a, b, c, d;  // before the scheduler: its destructor finishes pending requests into them
  Scheduler s(engine.get(), o);
  ASSERT_TRUE(s.Submit(b.Request(kPromptB, 20, Sampled(1))).has_value());
  ASSERT_TRUE(s.Submit(c.Request(LongPrompt(), 5, Sampled(2))).has_value());
  ASSERT_TRUE(s.Submit(a.Request(kPromptA, 12, Sampled(7))).has_value());
  ASSERT_TRUE(s.Submit(d.Request(kPromptA, 9, model::SamplingParams{})).has_value());
  s.Start();
  for (Sink* k : {&a, &b, &c, &d}) ASSERT_TRUE(k->Wait().status.has_value());
  EXPECT_EQ(a.tokens, alone);
  EXPECT_EQ(engine->budget().used(), 0u);
}

TEST(SchedulerTest, ChunkedPrefillMatchesGenerate) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  auto session = engine->NewSession(64);
  ASSERT_TRUE(session.has_value());
  model::GenerateOptions go;
  go.max_tokens = 10;
  go.ignore_eog = true;
  auto ref = model::Generate(*engine, **session, LongPrompt(), go, nullptr);
  ASSERT_TRUE(ref.has_value());
  session->reset();
  SchedulerOptions o;
  o.max_step_tokens = 3;
  Sink k;  // before the scheduler: its destructor finishes pending requests into them
  Scheduler s(engine.get(), o);
  s.Start();
  ASSERT_TRUE(s.Submit(k.Request(LongPrompt(), 10, model::SamplingParams{})).has_value());
  ASSERT_TRUE(k.Wait().status.has_value());
  EXPECT_EQ(k.tokens, ref->tokens);
}

TEST(SchedulerTest, OneEngineStepPerSchedulerStepForAllSequences) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  Scheduler s(engine.get(), SchedulerOptions{});
  std::vector<StepInfo> steps;
  s.SetStepObserver([&](const StepInfo& i) { steps.push_back(i); });
  std::vector<std::unique_ptr<Sink>> sinks;
  for (uint64_t i = 0; i < 4; ++i) {
    sinks.push_back(std::make_unique<Sink>());
    ASSERT_TRUE(s.Submit(sinks.back()->Request(kPromptA, 6, Sampled(i))).has_value());
  }
  s.Start();
  for (auto& k : sinks) {
    FinishEvent fe = k->Wait();
    ASSERT_TRUE(fe.status.has_value());
    ASSERT_EQ(fe.reason, model::FinishReason::kLength);  // no eog ids given
  }
  // 1 prefill step + 5 decode steps, every one with all 4 sequences.
  ASSERT_EQ(steps.size(), 6u);
  EXPECT_EQ(s.stats().steps, 6u);
  EXPECT_EQ(steps[0].tokens, 4 * static_cast<int>(kPromptA.size()));
  for (const StepInfo& i : steps) EXPECT_EQ(i.sequences, 4);
  EXPECT_EQ(s.stats().generated_tokens, 24u);
  EXPECT_EQ(engine->budget().used(), 0u);
}

// Speculative decoding in the batch: greedy requests give the tokens plain
// greedy generation gives, while a sampled request shares the steps; drafts
// are accepted in full, in part and not at all (an oracle drafter: the plain
// tokens, every 5th one wrong; then prompt lookup, which on this random
// model is mostly rejected), and every step is still one engine step for all.
TEST(SchedulerTest, DraftsKeepGreedyTokens) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  const std::vector<std::vector<int32_t>> prompts = {kPromptA, kPromptB, LongPrompt()};
  const std::vector<int> lens = {24, 30, 16};
  std::vector<std::vector<int32_t>> truth;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto session = engine->NewSession(128);
    model::GenerateOptions go;
    go.max_tokens = lens[i];
    go.ignore_eog = true;
    auto r = model::Generate(*engine, **session, prompts[i], go, nullptr);
    ASSERT_TRUE(r.has_value());
    truth.push_back(r->tokens);
  }
  for (bool oracle : {true, false}) {
    SchedulerOptions o;
    o.max_step_tokens = 12;  // drafts compete with the long prompt's chunks
    o.draft.draft_max = 4;
    if (oracle)
      o.drafter = [&](std::span<const int32_t> h, int max) {
        std::vector<int32_t> d;
        for (size_t p = 0; p < prompts.size(); ++p) {
          const auto& pr = prompts[p];
          if (h.size() < pr.size() || !std::equal(pr.begin(), pr.end(), h.begin())) continue;
          for (size_t g = h.size() - pr.size(); g < truth[p].size() && static_cast<int>(d.size()) < max; ++g)
            d.push_back(g % 5 == 2 ? (truth[p][g] + 1) % 1024 : truth[p][g]);
          break;
        }
        return d;
      };
    std::vector<Sink> sinks(4);  // before the scheduler: its destructor finishes pending requests into them
    Scheduler s(engine.get(), o);
    std::vector<StepInfo> steps;
    s.SetStepObserver([&](const StepInfo& i) { steps.push_back(i); });
    for (size_t i = 0; i < prompts.size(); ++i)
      ASSERT_TRUE(s.Submit(sinks[i].Request(prompts[i], lens[i], model::SamplingParams{})).has_value());
    ASSERT_TRUE(s.Submit(sinks[3].Request({5, 6, 7, 8}, 20, Sampled(5))).has_value());  // no oracle drafts
    s.Start();
    for (auto& k : sinks) ASSERT_TRUE(k.Wait().status.has_value());
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(sinks[i].tokens, truth[i]) << "oracle " << oracle;
    EXPECT_EQ(sinks[3].tokens.size(), 20u);
    const SchedulerStats st = s.stats();
    EXPECT_EQ(st.steps, steps.size());
    EXPECT_GT(st.drafted_tokens, 0u);
    EXPECT_LT(st.accepted_tokens, st.drafted_tokens);
    uint64_t drafted = 0, accepted = 0;
    for (const StepInfo& i : steps) {
      drafted += i.drafted;
      accepted += i.accepted;
      EXPECT_LE(i.tokens, 12 + 4);  // the budget, plus at most one own token per decoder
    }
    EXPECT_EQ(drafted, st.drafted_tokens);
    EXPECT_EQ(accepted, st.accepted_tokens);
    if (oracle) {
      EXPECT_GT(st.accepted_tokens, 20u);
    }
    // Every request delivered all its tokens.
    EXPECT_EQ(st.generated_tokens, 24u + 30 + 16 + 20);
    std::printf("oracle %d: %zu steps, %llu drafted, %llu accepted\n", oracle, steps.size(),
                static_cast<unsigned long long>(st.drafted_tokens), static_cast<unsigned long long>(st.accepted_tokens));
    EXPECT_EQ(engine->budget().used(), 0u);
  }
}

TEST(SchedulerTest, QueueFullIsResourceExhausted) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  SchedulerOptions o;
  o.max_active = 1;
  o.max_waiting = 1;
  Sink a, b, c;  // before the scheduler: its destructor finishes pending requests into them
  Scheduler s(engine.get(), o);  // not started: everything waits
  ASSERT_TRUE(s.Submit(a.Request(kPromptA, 2, {})).has_value());
  ASSERT_TRUE(s.Submit(b.Request(kPromptA, 2, {})).has_value());
  auto r = s.Submit(c.Request(kPromptA, 2, {}));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(s.stats().queued, 2);
  EXPECT_FALSE(s.Submit(a.Request({}, 2, {})).has_value());  // empty prompt
}

TEST(SchedulerTest, CancelFreesTheSession) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  Sink k;  // before the scheduler: its destructor finishes pending requests into them
  Scheduler s(engine.get(), SchedulerOptions{});
  std::atomic<uint64_t> id{0};
  k.stop_when = [&](int32_t) {
    if (k.tokens.size() == 3) s.Cancel(id.load());
    return false;
  };
  GenRequest r = k.Request(kPromptA, 200, model::SamplingParams{});
  r.eog.clear();
  auto got = s.Submit(std::move(r));
  ASSERT_TRUE(got.has_value());
  id = *got;
  s.Start();  // after the id is known
  FinishEvent fe = k.Wait();
  ASSERT_FALSE(fe.status.has_value());
  EXPECT_EQ(fe.status.error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(k.tokens.size(), 3u);  // retired at the next step boundary
  EXPECT_EQ(engine->budget().used(), 0u);
  EXPECT_EQ(s.stats().active, 0);
}

TEST(SchedulerTest, SessionBudgetQueuesThenRefuses) {
  // Room for exactly one session of prompt + 8 positions: the second request
  // waits for the first to give its bytes back, then runs.
  auto probe = OpenTiny();
  ASSERT_TRUE(probe);
  const int ctx = static_cast<int>(kPromptA.size()) + 8;
  const uint64_t one = model::Session::BytesFor(probe->hparams(), ctx);
  int big_tokens = 64;  // a request that cannot fit even alone
  while (model::Session::BytesFor(probe->hparams(), ctx - 8 + big_tokens) <= one + one / 2) big_tokens *= 2;
  probe.reset();
  auto engine = OpenTiny(one + one / 2);
  ASSERT_TRUE(engine);
  Sink a, b, big;  // before the scheduler: its destructor finishes pending requests into them
  Scheduler s(engine.get(), SchedulerOptions{});
  std::vector<StepInfo> steps;
  s.SetStepObserver([&](const StepInfo& i) { steps.push_back(i); });
  ASSERT_TRUE(s.Submit(a.Request(kPromptA, 8, {})).has_value());
  ASSERT_TRUE(s.Submit(b.Request(kPromptA, 8, {})).has_value());
  s.Start();
  ASSERT_TRUE(a.Wait().status.has_value());
  ASSERT_TRUE(b.Wait().status.has_value());
  EXPECT_EQ(a.tokens, b.tokens);
  for (const StepInfo& i : steps) EXPECT_EQ(i.sequences, 1);  // never both at once
  // A request that cannot fit even alone fails with kResourceExhausted.
  ASSERT_TRUE(s.Submit(big.Request(kPromptA, big_tokens, {})).has_value());
  FinishEvent fe = big.Wait();
  ASSERT_FALSE(fe.status.has_value());
  EXPECT_EQ(fe.status.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(engine->budget().used(), 0u);
}

}  // namespace
}  // namespace tenzro::serve
