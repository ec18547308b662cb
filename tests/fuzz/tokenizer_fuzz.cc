// libFuzzer target: the tokenizer. The first byte chooses the mode:
//   even: encode the rest with the fixture's vocabulary (tests/data/model):
//         the tokens' bytes must join to the input, Decode must equal the
//         input with ill-formed UTF-8 replaced, and StreamDecoder must agree;
//   odd:  parse the rest as a tokenizer.json (must not crash; when it loads,
//         a byte round trip must hold when it does not normalize).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tokenizer/hf_vocab.h"
#include "tokenizer/load.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/unicode.h"

using namespace tenzro;
using namespace tenzro::tokenizer;

namespace {

const Tokenizer& Fixture() {
  static const Tokenizer* t = [] {
    auto r = LoadTokenizer(TENZRO_TEST_DATA "/model/tiny-qwen35moe-tok-BF16.gguf");
    if (!r) {
      fprintf(stderr, "tokenizer_fuzz: %s\n", r.error().ToString().c_str());
      std::abort();
    }
    return r->release();
  }();
  return *t;
}

void Check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "tokenizer_fuzz: %s\n", what);
    std::abort();
  }
}

void RoundTrip(const Tokenizer& t, std::string_view text, bool exact) {
  for (bool special : {true, false}) {
    auto ids = t.Encode(text, special);
    std::string joined;
    for (int32_t id : ids) {
      Check(t.IsValid(id), "encode produced an invalid id");
      joined += t.TokenBytes(id);
    }
    if (exact) Check(joined == text, "the tokens' bytes do not join to the input");
    std::string decoded = t.Decode(ids);
    Check(decoded == SanitizeUtf8(joined), "Decode differs from the joined bytes");
    StreamDecoder d(t);
    std::string streamed;
    for (int32_t id : ids) streamed += d.Feed(id);
    streamed += d.Flush();
    Check(streamed == decoded, "StreamDecoder differs from Decode");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    RoundTrip(Fixture(), rest, true);
    return 0;
  }
  auto t = TokenizerFromHfJson(rest, "", "fuzz.json");
  if (!t) return 0;
  RoundTrip(**t, "Hello world <|im_end|> \xE3\x81\x82 \xFF", !(*t)->nfc());
  return 0;
}
