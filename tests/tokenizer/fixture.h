// Shared by the tokenizer tests: the fixture GGUF's tokenizer, loaded once.
#pragma once

#include <string>

#include "testutil/testutil.h"
#include "tokenizer/tokenizer.h"

namespace tenzro::tokenizer::testing {

inline std::string FixturePath() { return ::tenzro::testing::DataPath("model/tiny-qwen35moe-tok-BF16.gguf"); }

// The fixture's tokenizer (tests/data/model/README.md); aborts the test
// binary if it does not load.
const Tokenizer& Fixture();

}  // namespace tenzro::tokenizer::testing
