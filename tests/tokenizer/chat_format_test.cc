#include "tokenizer/chat_format.h"

#include <gtest/gtest.h>

#include "tokenizer/fixture.h"

namespace tenzro::tokenizer {
namespace {

TEST(ChatFormat, ChatMl) {
  std::vector<ChatMessage> msgs = {{"system", "Be brief."}, {"user", "Hi"}};
  EXPECT_EQ(RenderChatMl(msgs, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(RenderChatMl({{"user", "Hi"}}, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(RenderChatMl({}, true), "<|im_start|>assistant\n");
}

TEST(ChatFormat, ThinkingSwitch) {
  EXPECT_EQ(RenderChatMl({{"user", "Hi"}}, true, false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(RenderChatMl({{"user", "Hi"}}, true, true), RenderChatMl({{"user", "Hi"}}, true));
  EXPECT_EQ(RenderChatMl({{"user", "Hi"}}, false, false), "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatFormat, ChatHiPromptIds) {
  const Tokenizer& t = testing::Fixture();
  EXPECT_EQ(t.Encode(RenderChatMl({{"user", "Hi"}}, true)),
            std::vector<int32_t>({1022, 442, 259, 198, 39, 72, 1023, 198, 1022, 396, 82, 341, 454, 198}));
}

TEST(ChatFormat, TemplateCheck) {
  EXPECT_TRUE(CheckChatTemplate(testing::Fixture().chat_template()));
  EXPECT_TRUE(CheckChatTemplate("{{ '<|im_start|>' + m.role }}"));
  auto r = CheckChatTemplate("{{ bos_token }}[INST] {{ m.content }} [/INST]");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.error().message().find("not ChatML"), std::string::npos);
  EXPECT_EQ(CheckChatTemplate("").error().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace tenzro::tokenizer
