//===- ChatTemplateTest.cpp - Recognizing the ChatML template -------------===//

#include "nnsc/Runtime/Tokenizer/ChatTemplate.h"

#include <gtest/gtest.h>

using namespace nnsc::tokenizer;

namespace {
// Whitespace and trim markers inside tags, and the quote style, do not matter.
const char *PlainChatML =
    "{%- for message in messages -%}{{ \"<|im_start|>\" + message['role'] + '\\n' + "
    "message[\"content\"] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

TEST(ChatTemplate, RendersPlainChatML) {
  std::string error;
  auto chat = ChatTemplate::create(PlainChatML, error);
  ASSERT_TRUE(chat) << error;
  EXPECT_FALSE(chat->defaultSystemPrompt());
  EXPECT_EQ(chat->render({{"user", "hi"}}, true),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, RejectsOtherTemplatesWithAReason) {
  std::string error;
  EXPECT_FALSE(ChatTemplate::create("", error));
  EXPECT_EQ(error, "unsupported chat template (only the ChatML template of SmolLM2-Instruct "
                   "is implemented): the model has no chat template");
  EXPECT_FALSE(ChatTemplate::create("{{ bos_token }}{% for m in messages %}[INST] "
                                    "{{ m['content'] }} [/INST]{% endfor %}",
                                    error));
  EXPECT_EQ(error, "unsupported chat template (only the ChatML template of SmolLM2-Instruct "
                   "is implemented): text outside template tags at offset 38");
  EXPECT_FALSE(ChatTemplate::create("{% for message in messages %}{{ 'x' }}{% endfor %}", error));
  EXPECT_EQ(error, "unsupported chat template (only the ChatML template of SmolLM2-Instruct "
                   "is implemented): the template does not have the ChatML structure");
  EXPECT_FALSE(ChatTemplate::create("{{ 'unterminated }}", error));
  EXPECT_EQ(error, "unsupported chat template (only the ChatML template of SmolLM2-Instruct "
                   "is implemented): malformed string literal at offset 3");
}
} // namespace
