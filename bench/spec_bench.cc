// Speculative decoding with prompt-lookup drafts (model/draft.h) on the tiny
// Qwen3.5-MoE fixture (tests/data/model, random weights, its real byte-level
// BPE tokenizer): greedy generation of 64 tokens after each of four
// real-text prompts (English prose, C++ code, a list, a text to repeat),
// with drafts off and on.
//
//   BM_Speculative/<draft_max>/<rtt_ms>/<oracle>   rtt_ms > 0 adds that
//       delay to every MoE call (one per layer per step), the cost a swarm's
//       round trip to the expert holders puts on each layer; oracle 1 drafts
//       the plain run's own next tokens (every draft right: the mechanism's
//       ceiling at that draft length) instead of prompt lookup; counters:
//         accept_rate      accepted / drafted tokens
//         tokens_per_step  decode tokens per engine step (= per round trip per layer)
//         decode_tok_s     decode tokens per second
// The weights are random, so the acceptance shows the mechanism's cost and
// bookkeeping, not what a trained model would accept on these prompts.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "format/checkpoint.h"
#include "model/arch.h"
#include "model/engine.h"
#include "model/generator.h"
#include "tokenizer/load.h"

namespace {

using namespace tenzro::model;

const char* kPrompts[] = {
    "The river runs past the old mill, and the old mill stands beside the river. Every morning the miller walks "
    "from the village to the mill, opens the gate, and listens to the river. Every evening the miller walks from the "
    "mill to the village.",
    "int Sum(const std::vector<int>& v) {\n  int s = 0;\n  for (int x : v) s += x;\n  return s;\n}\n\n"
    "int Max(const std::vector<int>& v) {\n  int m = v[0];\n  for (int x : v) m = std::max(m, x);\n  return m;\n}\n\n"
    "int Min(const std::vector<int>& v) {\n",
    "Shopping list:\n- two apples\n- two pears\n- one loaf of bread\n- one bottle of milk\n- two apples\n- ",
    "Repeat the sentence exactly: the quick brown fox jumps over the lazy dog. The quick brown fox",
};

// Forwards to the in-process executor after sleeping `delay` per call.
class DelayedMoe : public MoeExecutor {
 public:
  DelayedMoe(std::unique_ptr<tenzro::format::Checkpoint> ck, std::unique_ptr<MoeExecutor> inner,
             std::chrono::microseconds delay)
      : ck_(std::move(ck)), inner_(std::move(inner)), delay_(delay) {}
  tenzro::Result<void> Run(int layer, const float* h, int n_tok, float* out) override {
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    return inner_->Run(layer, h, n_tok, out);
  }

 private:
  std::unique_ptr<tenzro::format::Checkpoint> ck_;
  std::unique_ptr<MoeExecutor> inner_;
  std::chrono::microseconds delay_;
};

std::string ModelPath() { return std::string(TENZRO_TEST_DATA) + "/model/tiny-qwen35moe-tok-BF16.gguf"; }

std::unique_ptr<Engine> OpenEngine(int rtt_ms) {
  auto ck = tenzro::format::Checkpoint::Open(ModelPath());
  if (!ck) std::fprintf(stderr, "%s\n", ck.error().ToString().c_str()), std::exit(1);
  auto hp = FindArch((*ck)->architecture())->read_hparams(**ck);
  auto local = LocalMoeExecutor::Create(**ck, *hp, nullptr, tenzro::runtime::WireDtype::kF32);
  if (!local) std::fprintf(stderr, "%s\n", local.error().ToString().c_str()), std::exit(1);
  auto moe = std::make_unique<DelayedMoe>(std::move(*ck), std::move(*local), std::chrono::milliseconds(rtt_ms));
  EngineOptions o;
  o.threads = 1;
  auto e = Engine::Open(ModelPath(), o, std::move(moe));
  if (!e) std::fprintf(stderr, "%s\n", e.error().ToString().c_str()), std::exit(1);
  return std::move(*e);
}

void BM_Speculative(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0)), rtt = static_cast<int>(state.range(1));
  const bool oracle = state.range(2) != 0;
  auto e = OpenEngine(rtt);
  auto tok = tenzro::tokenizer::LoadTokenizer(ModelPath());
  if (!tok) return state.SkipWithError("tokenizer");
  GenerateOptions o;
  o.max_tokens = 64;
  o.ignore_eog = true;
  o.draft.draft_max = k;
  int64_t drafted = 0, accepted = 0, steps = 0, tokens = 0;
  double ms = 0;
  for (auto _ : state) {
    for (const char* p : kPrompts) {
      std::vector<int32_t> ids = (*tok)->Encode(p, false);
      std::vector<int32_t> truth;
      if (oracle) {  // the plain greedy run's tokens (not timed)
        state.PauseTiming();
        auto s0 = e->NewSession(512);
        GenerateOptions plain = o;
        plain.draft.draft_max = 0;
        auto r0 = Generate(*e, **s0, ids, plain, nullptr);
        if (!r0) return state.SkipWithError(r0.error().ToString().c_str());
        truth = r0->tokens;
        o.drafter = [&](std::span<const int32_t> h, int max) {
          std::vector<int32_t> d;
          for (size_t g = h.size() - ids.size(); g < truth.size() && static_cast<int>(d.size()) < max; ++g)
            d.push_back(truth[g]);
          return d;
        };
        state.ResumeTiming();
      }
      auto s = e->NewSession(512, k > 0 ? k + 1 : 0);
      auto r = Generate(*e, **s, ids, o, nullptr);
      if (!r) return state.SkipWithError(r.error().ToString().c_str());
      drafted += r->drafted;
      accepted += r->accepted;
      steps += r->steps;
      tokens += static_cast<int64_t>(r->tokens.size()) - 1;  // the first comes from the prompt's step
      ms += r->decode_ms;
    }
  }
  state.counters["accept_rate"] = drafted ? static_cast<double>(accepted) / drafted : 0;
  state.counters["drafted_per_step"] = steps ? static_cast<double>(drafted) / steps : 0;
  state.counters["tokens_per_step"] = steps ? static_cast<double>(tokens) / steps : 0;
  state.counters["decode_tok_s"] = ms > 0 ? tokens / (ms / 1000.0) : 0;
}
BENCHMARK(BM_Speculative)
    ->Args({0, 0, 0})
    ->Args({4, 0, 0})
    ->Args({8, 0, 0})
    ->Args({4, 0, 1})
    ->Args({0, 10, 0})
    ->Args({4, 10, 0})
    ->Args({4, 10, 1})
    ->Args({8, 10, 1})
    ->ArgNames({"draft_max", "rtt_ms", "oracle"})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
