// `tenzro generate`: a prompt in, tokens out.
//
// With a node running for the data dir (DATA_DIR/node.json, or --node), a
// model id from the catalog or a spine blob (tenzro moe prepare-dense) and
// no --local, the node generates
// (POST /v1/model/generate, node/generate_service.h): the spine on the node,
// the routed experts on the swarm's holders; the text is printed when the
// answer arrives. Otherwise the whole model runs in-process
// (model/engine.h): the spine and every routed expert from one checkpoint,
// text streamed as it is produced (whole UTF-8 characters, stop strings held
// back until they cannot match). Both round each routed expert's rows through
// --wire-dtype (default bf16; runtime/wire_rows.h), so for the same dtype
// they give the same tokens and logits bit for bit. Timings go to stderr.
// docs/cli.md, docs/engine.md.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "blob/blob_uri.h"
#include "catalog/catalog.h"
#include "cli/command.h"
#include "cli/model_source.h"
#include "cli/node_client.h"
#include "core/file.h"
#include "format/checkpoint.h"
#include "model/engine.h"
#include "model/generator.h"
#include "model/stop_matcher.h"
#include "node/runtime_service.h"
#include "prepare/spine.h"
#include "runtime/wire_rows.h"
#include "tokenizer/chat_format.h"
#include "tokenizer/load.h"
#include "tokenizer/stream_decoder.h"

namespace tenzro::cli {
namespace {

struct GenerateArgs {
  std::string model, prompt, chat, system, prompt_tokens, logits_out;
  std::string wire_dtype{runtime::WireDtypeName(runtime::kDefaultWireDtype)};
  std::vector<std::string> stop;
  int max_tokens = 128;
  int threads = 0;
  int ctx = 0;
  model::SamplingParams sampling;
  bool think = false, no_think = false, ignore_eos = false, json = false, local = false;
};

Result<std::vector<int32_t>> PromptIds(const GenerateArgs& a, const tokenizer::Tokenizer& tok) {
  int given = !a.prompt.empty() + !a.chat.empty() + !a.prompt_tokens.empty();
  if (given != 1) return Error::InvalidArgument("give exactly one of --prompt, --chat, --prompt-tokens");
  if (!a.prompt_tokens.empty()) {
    TENZRO_TRY(std::vector<int32_t> ids, ParseTokenIds(a.prompt_tokens));
    for (int32_t id : ids)
      if (!tok.IsValid(id)) return Error::InvalidArgument("--prompt-tokens: id {} outside [0, {})", id, tok.vocab_size());
    return ids;
  }
  std::string text = a.prompt;
  if (!a.chat.empty()) {
    if (!tok.chat_template().empty()) TENZRO_CHECK_OK(tokenizer::CheckChatTemplate(tok.chat_template()));
    std::vector<tokenizer::ChatMessage> msgs;
    if (!a.system.empty()) msgs.push_back({"system", a.system});
    msgs.push_back({"user", a.chat});
    std::optional<bool> thinking;
    if (a.think) thinking = true;
    if (a.no_think) thinking = false;
    text = tokenizer::RenderChatMl(msgs, /*add_generation_prompt=*/true, thinking);
  }
  std::vector<int32_t> ids;
  if (tok.add_bos() && tok.bos() != tokenizer::kNoToken) ids.push_back(tok.bos());
  std::vector<int32_t> body = tok.Encode(text, /*parse_special=*/true);
  ids.insert(ids.end(), body.begin(), body.end());
  if (ids.empty()) return Error::InvalidArgument("the prompt encodes to no tokens");
  return ids;
}

// What the node is asked to run: a catalog id, or a spine blob (its model
// id from its tenzro.model_id). nullopt for a checkpoint path.
struct NodeModel {
  std::string model, spine;
};
std::optional<NodeModel> NodeModelOf(const GenerateArgs& a, const Globals& g, const std::string& path) {
  auto cat = catalog::Catalog::Load(DataDir(g));
  if (cat && cat->Lookup(a.model)) return NodeModel{a.model, ""};
  if (!blob::ParseHashOrUri(a.model)) return std::nullopt;
  auto ckpt = format::Checkpoint::Open(path);
  if (!ckpt) return std::nullopt;
  auto id = (*ckpt)->GetString(prepare::kSpineModelIdKey);
  if (!id) return std::nullopt;
  return NodeModel{*id, a.model};
}

// The node to generate on, or nullopt for in-process: --local, a model that
// is neither a catalog id nor a spine blob here, or no node running for the
// data dir (an explicit --node that does not answer is an error).
Result<std::optional<NodeClient>> GenerateNode(const GenerateArgs& a, const Globals& g,
                                               const std::optional<NodeModel>& target) {
  if (a.local || !target) return std::optional<NodeClient>();
  auto c = ConnectToNode(g);
  Result<nlohmann::json> info = c ? c->Get("/v1/node/info") : Result<nlohmann::json>(c.error());
  if (!info) {
    if (info.error().code() == ErrorCode::kUnavailable && g.node_url.empty()) return std::optional<NodeClient>();
    return info.error();
  }
  return std::optional<NodeClient>(std::move(*c));
}

Result<void> PrintNodeAnswer(const GenerateArgs& a, const std::vector<int32_t>& prompt, const nlohmann::json& r) {
  if (!a.logits_out.empty()) {
    TENZRO_TRY(Bytes raw, node::Base64Decode(r.value("logits_f32_b64", "")));
    TENZRO_CHECK_OK(WriteFileAtomic(a.logits_out, ByteSpan(raw.data(), raw.size())));
  }
  const std::string text = r.value("text", "");
  int holder_calls = 0, failed = 0;
  for (const auto& l : r["layers"]) {
    holder_calls += l.value("holder_calls", 0);
    failed += l.value("failed_calls", 0);
  }
  if (a.json) {
    nlohmann::json j = {{"model", a.model},
                        {"prompt_ids", prompt},
                        {"tokens", r["tokens"]},
                        {"text", text},
                        {"finish_reason", r["finish_reason"]},
                        {"prompt_tokens", r["prompt_tokens"]},
                        {"generated_tokens", r["generated_tokens"]},
                        {"prefill_ms", r["prefill_ms"]},
                        {"decode_ms", r["decode_ms"]},
                        {"decode_tokens_per_s", r["decode_tokens_per_s"]},
                        {"executor", "swarm"},
                        {"wire_dtype", r.value("wire_dtype", "")},
                        {"layers", r["layers"]}};
    if (r.contains("logits_rows")) j["logits_rows"] = r["logits_rows"];
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return Ok();
  }
  fmt::print("{}\n", text);
  fmt::print(stderr,
             "prompt {} tokens in {:.1f} ms; {} tokens in {:.1f} ms ({:.1f} tok/s); finish: {}; on the node, experts "
             "on the swarm ({} holder calls, {} failed)\n",
             r.value("prompt_tokens", 0), r.value("prefill_ms", 0.0), r.value("generated_tokens", 0),
             r.value("decode_ms", 0.0), r.value("decode_tokens_per_s", 0.0), r.value("finish_reason", ""),
             holder_calls, failed);
  return Ok();
}

Result<void> GenerateOnNode(const GenerateArgs& a, NodeClient& node, const NodeModel& target,
                            const std::vector<int32_t>& prompt) {
  const model::SamplingParams& s = a.sampling;
  nlohmann::json body = {{"model", target.model},
                         {"prompt_ids", prompt},
                         {"max_tokens", a.max_tokens},
                         {"temperature", s.temperature},
                         {"top_k", s.top_k},
                         {"top_p", s.top_p},
                         {"min_p", s.min_p},
                         {"repeat_penalty", s.repetition_penalty},
                         {"presence_penalty", s.presence_penalty},
                         {"frequency_penalty", s.frequency_penalty},
                         {"seed", s.seed},
                         {"stop", a.stop},
                         {"ignore_eos", a.ignore_eos},
                         {"logits", !a.logits_out.empty()},
                         {"wire_dtype", a.wire_dtype}};
  if (a.ctx > 0) body["ctx"] = a.ctx;
  if (!target.spine.empty()) body["spine"] = target.spine;
  TENZRO_TRY(nlohmann::json r, node.Post("/v1/model/generate", body));
  return PrintNodeAnswer(a, prompt, r);
}

Result<void> RunGenerate(const GenerateArgs& a, const Globals& g) {
  if (a.think && a.no_think) return Error::InvalidArgument("--think and --no-think exclude each other");
  TENZRO_TRY(runtime::WireDtype wire, runtime::ParseWireDtype(a.wire_dtype));
  TENZRO_TRY(std::string path, ResolveModelFile(g, a.model));
  TENZRO_TRY(auto tok, tokenizer::LoadTokenizer(path));
  TENZRO_TRY(std::vector<int32_t> prompt, PromptIds(a, *tok));
  const std::optional<NodeModel> target = a.local ? std::nullopt : NodeModelOf(a, g, path);
  TENZRO_TRY(std::optional<NodeClient> node, GenerateNode(a, g, target));
  if (node) return GenerateOnNode(a, *node, *target, prompt);
  model::EngineOptions eo;
  eo.threads = a.threads;
  eo.wire_dtype = wire;
  TENZRO_TRY(auto engine, model::Engine::Open(path, eo));
  if (engine->hparams().n_vocab < tok->vocab_size())
    return Error::InvalidArgument("{}: tokenizer has {} tokens but the model's embedding only {}", path,
                                  tok->vocab_size(), engine->hparams().n_vocab);
  int ctx = a.ctx > 0 ? a.ctx : static_cast<int>(prompt.size()) + a.max_tokens;
  TENZRO_TRY(auto session, engine->NewSession(ctx));

  model::GenerateOptions go;
  go.max_tokens = a.max_tokens;
  go.sampling = a.sampling;
  go.eog = tok->end_of_generation();
  go.ignore_eog = a.ignore_eos;
  go.collect_logits = !a.logits_out.empty();
  TENZRO_TRY(model::StopMatcher stop, model::StopMatcher::Create(a.stop));
  tokenizer::StreamDecoder dec(*tok);
  std::string text;
  auto emit = [&](const std::string& s) {
    text += s;
    if (!a.json && !s.empty()) {
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    }
  };
  TENZRO_TRY(model::GenerateResult r, model::Generate(*engine, *session, prompt, go, [&](int32_t id) {
               model::StopMatcher::Output out = stop.Feed(dec.Feed(id));
               emit(out.emit);
               return !out.stopped;
             }));
  if (!stop.stopped()) {
    model::StopMatcher::Output out = stop.Feed(dec.Flush());
    emit(out.emit);
    if (!out.stopped) emit(stop.Flush());
  }
  if (!a.logits_out.empty()) {
    ByteSpan bytes(reinterpret_cast<const uint8_t*>(r.logits.data()), r.logits.size() * sizeof(float));
    TENZRO_CHECK_OK(WriteFileAtomic(a.logits_out, bytes));
  }
  const double tps = r.decode_ms > 0 && r.tokens.size() > 1 ? (r.tokens.size() - 1) * 1000.0 / r.decode_ms : 0.0;
  if (a.json) {
    nlohmann::json j = {{"model", a.model},
                        {"prompt_ids", prompt},
                        {"tokens", r.tokens},
                        {"text", text},
                        {"finish_reason", model::FinishReasonName(r.finish)},
                        {"prompt_tokens", r.prompt_tokens},
                        {"generated_tokens", r.tokens.size()},
                        {"prefill_ms", r.prefill_ms},
                        {"decode_ms", r.decode_ms},
                        {"decode_tokens_per_s", tps},
                        {"wire_dtype", a.wire_dtype}};
    if (!a.logits_out.empty()) j["logits_rows"] = r.logits.size() / engine->hparams().n_vocab;
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    std::fputs("\n", stdout);
    std::fflush(stdout);
    fmt::print(stderr, "prompt {} tokens in {:.1f} ms; {} tokens in {:.1f} ms ({:.1f} tok/s); finish: {}\n",
               r.prompt_tokens, r.prefill_ms, r.tokens.size(), r.decode_ms, tps, model::FinishReasonName(r.finish));
  }
  return Ok();
}

void RegisterGenerate(CLI::App& root, Globals& g) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* c = root.add_subcommand(
      "generate", "Generate text from a prompt: on the running node with the experts on the swarm, or in-process");
  c->add_option("--model,--model-id", a->model, "Model id (catalog), checkpoint path or tenzro://blob/<hash> of a spine")
      ->required();
  c->add_option("--prompt", a->prompt, "Raw prompt text (special tokens such as <|im_start|> are recognised)");
  c->add_option("--chat", a->chat, "A user message, rendered with the model's ChatML template and the assistant prefix");
  c->add_option("--system", a->system, "A system message before --chat");
  c->add_flag("--think", a->think, "--chat: leave Qwen's thinking on (the template's default)");
  c->add_flag("--no-think", a->no_think, "--chat: switch Qwen's thinking off (an empty <think></think> block)");
  c->add_option("--prompt-tokens", a->prompt_tokens, "The prompt as token ids: 1,2,3");
  c->add_option("--max-tokens", a->max_tokens, "Tokens to generate at most (default 128)")->check(CLI::Range(0, 1 << 20));
  c->add_option("--temperature", a->sampling.temperature, "0 = greedy (default)");
  c->add_option("--top-k", a->sampling.top_k, "Keep the K most likely (0 = off)");
  c->add_option("--top-p", a->sampling.top_p, "Nucleus sampling (1 = off)");
  c->add_option("--min-p", a->sampling.min_p, "Drop tokens below this fraction of the best (0 = off)");
  c->add_option("--repeat-penalty", a->sampling.repetition_penalty, "Repetition penalty over the last 64 tokens (1 = off)");
  c->add_option("--presence-penalty", a->sampling.presence_penalty, "OpenAI presence penalty");
  c->add_option("--frequency-penalty", a->sampling.frequency_penalty, "OpenAI frequency penalty");
  c->add_option("--seed", a->sampling.seed, "Random seed (same seed, same tokens)");
  c->add_option("--stop", a->stop, "Stop string (repeatable, at most 4); not printed");
  c->add_flag("--ignore-eos", a->ignore_eos, "Do not stop at end-of-generation tokens");
  c->add_option("--logits-out", a->logits_out, "Write float32 logits [positions][n_vocab] of every position fed");
  c->add_option("--threads", a->threads, "Compute threads, in-process (default: all)");
  c->add_option("--ctx", a->ctx, "Session positions (default: prompt + max tokens)");
  c->add_flag("--local", a->local, "Run everything in-process even when a node runs for the data dir");
  c->add_option("--wire-dtype", a->wire_dtype,
                "Routed-expert rows as sent to holders: bf16 (default), f32 (exact), f16 or q8_0; in-process runs "
                "round them the same way")
      ->check(CLI::IsMember({"f32", "bf16", "f16", "q8_0"}));
  c->add_flag("--json", a->json, "Print one JSON object at the end instead of streaming text");
  SetAction(c, g, [&g, a] { return RunGenerate(*a, g); });
}

TENZRO_CLI_REGISTER(RegisterGenerate);

}  // namespace
}  // namespace tenzro::cli
