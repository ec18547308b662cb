#include "cli/demo_generate.h"

#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/engine.h"
#include "model/generator.h"
#include "tokenizer/chat_format.h"
#include "tokenizer/load.h"
#include "tokenizer/stream_decoder.h"

namespace tenzro::cli {

Result<bool> RunDemoGeneration(const std::string& model_dir) {
  const std::string path = model_dir + "/tiny-qwen35moe-tok-BF16.gguf";
  const std::string ref_path = model_dir + "/ref/chat-hi.json";
  std::ifstream rf(ref_path);
  if (!rf) return Error::NotFound("{} not found (run from the repository root)", ref_path);
  nlohmann::json ref = nlohmann::json::parse(rf, nullptr, false);
  if (ref.is_discarded() || !ref.contains("greedy_ids")) return Error::Corruption("{}: not a reference file", ref_path);
  const auto want = ref["greedy_ids"].get<std::vector<int32_t>>();

  TENZRO_TRY(auto tok, tokenizer::LoadTokenizer(path));
  TENZRO_TRY(auto engine, model::Engine::Open(path));
  std::string rendered = tokenizer::RenderChatMl({{"user", "Hi"}}, /*add_generation_prompt=*/true);
  std::vector<int32_t> prompt = tok->Encode(rendered);
  fmt::print("  prompt (ChatML, {} tokens): {:?}\n  generated: ", prompt.size(), rendered);
  TENZRO_TRY(auto session, engine->NewSession(64));
  model::GenerateOptions o;
  o.max_tokens = static_cast<int>(want.size());
  o.ignore_eog = true;
  tokenizer::StreamDecoder dec(*tok);
  TENZRO_TRY(model::GenerateResult r, model::Generate(*engine, *session, prompt, o, [&](int32_t id) {
               fmt::print("{}", dec.Feed(id));
               std::fflush(stdout);
               return true;
             }));
  const bool same = r.tokens == want;
  fmt::print("\n  {} tokens in {:.1f} ms after a {:.1f} ms prefill (random weights: the text is noise);\n"
             "  greedy tokens {} the float64 reference's\n",
             r.tokens.size(), r.decode_ms, r.prefill_ms, same ? "equal" : "DIFFER from");
  return same;
}

Result<std::string> LocalChatText(const std::string& path, int max_tokens) {
  TENZRO_TRY(auto tok, tokenizer::LoadTokenizer(path));
  model::EngineOptions eo;
  eo.wire_dtype = runtime::kDefaultWireDtype;  // as the node serves (serve_wire_dtype): the same bits
  TENZRO_TRY(auto engine, model::Engine::Open(path, eo));
  std::vector<int32_t> prompt = tok->Encode(tokenizer::RenderChatMl({{"user", "Hi"}}, true));
  TENZRO_TRY(auto session, engine->NewSession(static_cast<int>(prompt.size()) + max_tokens));
  model::GenerateOptions o;
  o.max_tokens = max_tokens;
  o.ignore_eog = true;
  TENZRO_TRY(model::GenerateResult r, model::Generate(*engine, *session, prompt, o, nullptr));
  return tok->Decode(r.tokens);
}

}  // namespace tenzro::cli
