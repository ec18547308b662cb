// Shared by the tokenizer tests: the fixture GGUF's tokenizer, loaded once.
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace tenzro::tokenizer::testing {

inline std::string FixturePath() { return std::string(TENZRO_TEST_DATA) + "/model/tiny-qwen35moe-tok-BF16.gguf"; }

// The fixture's tokenizer (tests/data/model/README.md); aborts the test
// binary if it does not load.
const Tokenizer& Fixture();

}  // namespace tenzro::tokenizer::testing
