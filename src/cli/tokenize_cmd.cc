// `tenzro tokenize | detokenize`: text <-> token ids with a model's own
// tokenizer (tokenizer/tokenizer.h), for inspecting prompts.
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/model_source.h"
#include "tokenizer/load.h"
#include "tokenizer/unicode.h"

namespace tenzro::cli {
namespace {

struct TokenizeArgs {
  std::string model, text;
  bool no_special = false;
  bool json = false;
};

struct DetokenizeArgs {
  std::string model, tokens;
  bool json = false;
};

Result<std::unique_ptr<tokenizer::Tokenizer>> LoadFor(const Globals& g, const std::string& model) {
  TENZRO_TRY(std::string path, ResolveCheckpointPath(g, model));
  return tokenizer::LoadTokenizer(path);
}

Result<void> RunTokenize(const TokenizeArgs& a, const Globals& g) {
  std::string text = a.text;
  if (text == "-") text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  TENZRO_TRY(auto tok, LoadFor(g, a.model));
  std::vector<int32_t> ids = tok->Encode(text, !a.no_special);
  if (!a.json) {
    fmt::print("{}\n", fmt::join(ids, ","));
    return Ok();
  }
  nlohmann::json pieces = nlohmann::json::array();
  for (int32_t id : ids) pieces.push_back(tokenizer::SanitizeUtf8(tok->TokenBytes(id)));
  nlohmann::json j = {{"model", a.model}, {"count", ids.size()}, {"ids", ids}, {"pieces", pieces}};
  fmt::print("{}\n", j.dump(2));
  return Ok();
}

Result<void> RunDetokenize(const DetokenizeArgs& a, const Globals& g) {
  TENZRO_TRY(std::vector<int32_t> ids, ParseTokenIds(a.tokens, "--tokens"));
  TENZRO_TRY(auto tok, LoadFor(g, a.model));
  for (int32_t id : ids)
    if (!tok->IsValid(id))
      return Error::InvalidArgument("--tokens: id {} is out of range (vocabulary of {})", id, tok->vocab_size());
  std::string text = tok->Decode(ids);
  if (a.json) fmt::print("{}\n", nlohmann::json({{"model", a.model}, {"ids", ids}, {"text", text}}).dump(2));
  else fmt::print("{}\n", text);
  return Ok();
}

void RegisterTokenize(CLI::App& root, Globals& g) {
  auto t = std::make_shared<TokenizeArgs>();
  CLI::App* tc = root.add_subcommand("tokenize", "Print the token ids of a text with a model's tokenizer");
  tc->add_option("--model", t->model, "Model id (tenzro moe catalog-add) or checkpoint path")->required();
  tc->add_option("--text", t->text, "The text (\"-\": read standard input)")->required();
  tc->add_flag("--no-special", t->no_special, "Do not parse control tokens such as <|im_start|> in the text");
  tc->add_flag("--json", t->json, "Print {model, count, ids, pieces}");
  tc->footer(
      "Example: tenzro tokenize --model tests/data/model/tiny-qwen35moe-tok-BF16.gguf --text 'Hello world'\n"
      "         39,68,372,78,303,264,923");
  SetAction(tc, g, [t, &g]() { return RunTokenize(*t, g); });

  auto d = std::make_shared<DetokenizeArgs>();
  CLI::App* dc = root.add_subcommand("detokenize", "Print the text of token ids with a model's tokenizer");
  dc->add_option("--model", d->model, "Model id (tenzro moe catalog-add) or checkpoint path")->required();
  dc->add_option("--tokens", d->tokens, "Comma-separated token ids, e.g. 1,2,3")->required();
  dc->add_flag("--json", d->json, "Print {model, ids, text}");
  dc->footer("Example: tenzro detokenize --model tiny-qwen35moe --tokens 39,68,372,78,303,264,923");
  SetAction(dc, g, [d, &g]() { return RunDetokenize(*d, g); });
}

}  // namespace

TENZRO_CLI_REGISTER(RegisterTokenize);

}  // namespace tenzro::cli
