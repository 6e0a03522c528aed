//===- ProtocolTest.cpp - OpenAI request bodies ---------------------------===//
//
// parseGenerationRequest and parseTokenizeRequest: what a well-formed body becomes, and for
// each kind of mistake the field it names and what it says.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Server/Protocol.h"

#include <gtest/gtest.h>

using namespace nnsc::server;
using json = nlohmann::json;

namespace {

std::optional<GenerationRequest> parse(const json &body, bool chat = false) {
  ApiError error;
  return parseGenerationRequest(body, chat, error);
}

/// "param: message" of the refusal of `body`.
std::string refusal(const json &body, bool chat = false) {
  ApiError error;
  EXPECT_FALSE(parseGenerationRequest(body, chat, error)) << body.dump();
  EXPECT_EQ(error.status, 400);
  return error.param + ": " + error.message;
}

TEST(Protocol, CompletionFields) {
  auto r = parse({{"model", "m"},
                  {"prompt", "hi"},
                  {"max_tokens", 7},
                  {"temperature", 0},
                  {"top_p", 0.5},
                  {"top_k", -1},
                  {"seed", 3},
                  {"stop", "\n"},
                  {"stream", true},
                  {"stream_options", {{"include_usage", true}}},
                  {"nns",
                   {{"program", "trace {}"},
                    {"params", {{"a", 1}}},
                    {"saves_transport", "handle"},
                    {"saves_format", "safetensors"}}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->textPrompts, std::vector<std::string>{"hi"});
  EXPECT_TRUE(r->maxTokensGiven);
  EXPECT_EQ(r->sampling.maxTokens, 7);
  EXPECT_EQ(r->sampling.temperature, 0.0f);
  EXPECT_EQ(r->sampling.topP, 0.5f);
  EXPECT_EQ(r->sampling.topK, 0);
  EXPECT_EQ(r->sampling.seed, 3u);
  EXPECT_EQ(r->sampling.logprobs, -1);
  EXPECT_EQ(parse({{"model", "m"}, {"prompt", "x"}, {"logprobs", 4}})->sampling.logprobs, 4);
  EXPECT_EQ(r->stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(r->stream && r->includeUsage);
  ASSERT_TRUE(r->nns);
  EXPECT_EQ(r->nns->program, "trace {}");
  EXPECT_EQ(r->nns->params.size(), 1u);
  EXPECT_EQ(r->nns->savesTransport, InterventionSpec::SavesTransport::Handle);
  EXPECT_EQ(r->nns->savesFormat, InterventionSpec::SavesFormat::Safetensors);
}

TEST(Protocol, PromptForms) {
  EXPECT_EQ(parse({{"model", "m"}, {"prompt", {"a", "b"}}})->textPrompts.size(), 2u);
  EXPECT_EQ(parse({{"model", "m"}, {"prompt", {1, 2, 3}}})->idPrompts,
            (std::vector<std::vector<int32_t>>{{1, 2, 3}}));
  EXPECT_EQ(parse({{"model", "m"}, {"prompt", {{1}, {2, 3}}}})->idPrompts.size(), 2u);
  EXPECT_EQ(refusal({{"model", "m"}, {"prompt", {"a", {1}}}}).substr(0, 8), "prompt: ");
  EXPECT_EQ(refusal({{"model", "m"}, {"prompt", {1, -2}}}),
            "prompt: a token-id prompt must be a non-empty list of token ids");
  EXPECT_EQ(refusal({{"model", "m"}}), "prompt: 'prompt' is required");
}

TEST(Protocol, ChatMessages) {
  auto r = parse({{"model", "m"},
                  {"messages",
                   {{{"role", "system"}, {"content", "be brief"}},
                    {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "hi"}}}}}}}},
                 /*chat=*/true);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[1].content, "hi");
  EXPECT_EQ(refusal({{"model", "m"}, {"messages", {{{"role", "robot"}, {"content", "x"}}}}}, true),
            "messages: message role must be system, developer, user or assistant, got 'robot'");
  EXPECT_EQ(refusal({{"model", "m"}, {"messages", json::array()}}, true),
            "messages: 'messages' must be a non-empty list of messages");
  // A part whose "type" is not a string is refused by name (it threw, a 500; fuzz-request).
  EXPECT_EQ(
      refusal({{"model", "m"}, {"messages", {{{"role", "user"}, {"content", {{{"type", 7}}}}}}}},
              true),
      "messages: only text content parts ({\"type\": \"text\", \"text\": ...}) are "
      "supported");
  EXPECT_EQ(refusal({{"model", "m"},
                     {"messages", {{{"role", "user"}, {"content", "x"}}}},
                     {"response_format", {{"type", json::array()}}}},
                    true),
            "response_format: only the \"text\" response format is supported");
}

TEST(Protocol, EachMistakeNamesItsField) {
  const json base = {{"model", "m"}, {"prompt", "x"}};
  auto with = [&](const char *key, json value) {
    json b = base;
    b[key] = std::move(value);
    return b;
  };
  EXPECT_EQ(refusal(with("max_tokens", "3")), "max_tokens: 'max_tokens' must be an integer");
  EXPECT_EQ(refusal(with("max_tokens", 0)),
            "max_tokens: 'max_tokens' must be a positive integer, got 0");
  EXPECT_EQ(refusal(with("temperature", -1)),
            "temperature: 'temperature' must be in [0, 100], got -1");
  EXPECT_EQ(refusal(with("top_p", 0)), "top_p: 'top_p' must be in (0, 1], got 0");
  EXPECT_EQ(refusal(with("n", 2)), "n: 'n' must be 1 (one choice per prompt), got 2");
  EXPECT_EQ(refusal(with("stream", "yes")), "stream: 'stream' must be a boolean");
  EXPECT_EQ(refusal(with("stop", {1})),
            "stop: 'stop' must be a non-empty string or a list of up to 16 of them");
  EXPECT_EQ(refusal(with("presence_penalty", 0.5)),
            "presence_penalty: 'presence_penalty' is not supported (only its neutral value)");
  EXPECT_EQ(refusal(with("logprobs", 30)), "logprobs: 'logprobs' must be in [0, 20], got 30");
  EXPECT_EQ(refusal(json{{"model", "m"},
                         {"messages", {{{"role", "user"}, {"content", "x"}}}},
                         {"top_logprobs", 2}},
                    /*chat=*/true),
            "top_logprobs: 'top_logprobs' needs 'logprobs': true");
  EXPECT_EQ(refusal(with("nns", {{"program", "x"}, {"bundle", "y"}})),
            "nns: 'nns' needs exactly one of 'program' (.nns source) and 'bundle' (the name of "
            "a registered bundle)");
  EXPECT_EQ(refusal(with("nns", {{"bundle", "y"}, {"colour", 1}})).substr(0, 35),
            "nns.colour: unknown field 'nns.colo");
  EXPECT_EQ(refusal(with("nns", {{"bundle", 3}})), "nns.bundle: 'nns.bundle' must be a string");
  EXPECT_EQ(refusal(with("nns", {{"bundle", "b"}, {"saves_format", "npz"}})),
            "nns.saves_format: 'nns.saves_format' must be \"json\" or \"safetensors\"");
  EXPECT_EQ(refusal(json::array()), ": the request body must be a JSON object");
}

TEST(Protocol, TokenizeBodies) {
  ApiError error;
  std::optional<TokenizeRequest> r = parseTokenizeRequest({{"text", "hi"}}, false, 10, error);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "hi");
  EXPECT_TRUE(r->special);
  r = parseTokenizeRequest({{"ids", {1, 9}}, {"skip_special_tokens", false}}, true, 10, error);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ids, (std::vector<int32_t>{1, 9}));
  EXPECT_FALSE(r->special);
  EXPECT_FALSE(r->returnTokens);
  r = parseTokenizeRequest({{"text", "hi"}, {"return_tokens", true}}, false, 10, error);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->returnTokens);
  EXPECT_TRUE(parseTokenizeRequest({{"ids", json::array()}}, true, 10, error));

  auto refused = [](const json &body, bool detokenize) {
    ApiError e;
    EXPECT_FALSE(parseTokenizeRequest(body, detokenize, 10, e)) << body.dump();
    EXPECT_EQ(e.status, 400);
    return e.param + ": " + e.message;
  };
  EXPECT_EQ(refused({{"ids", {1, 10}}}, true),
            "ids: token id 10 is outside the vocabulary [0, 10)");
  EXPECT_EQ(refused({{"ids", {1, -1}}}, true),
            "ids: 'ids' must be a list of token ids (non-negative integers)");
  EXPECT_EQ(refused({{"text", 3}}, false), "text: 'text' must be a string");
  EXPECT_EQ(refused(json::object(), false), "text: 'text' is required");
  EXPECT_EQ(refused({{"text", "x"}, {"ids", {1}}}, false),
            "ids: unknown field 'ids' (known: text, add_special_tokens, return_tokens)");
  EXPECT_EQ(refused({{"ids", {1}}, {"return_tokens", "yes"}}, true),
            "return_tokens: 'return_tokens' must be a boolean");
  EXPECT_EQ(refused({{"ids", {1}}, {"skip_special_tokens", 1}}, true),
            "skip_special_tokens: 'skip_special_tokens' must be a boolean");
  EXPECT_EQ(refused("text", false), ": the request body must be a JSON object");
}

TEST(Protocol, ErrorBodyIsOpenAIs) {
  ApiError e = invalidField("prompt", "bad");
  e.code = "x";
  EXPECT_EQ(e.body(), json({{"error",
                             {{"message", "bad"},
                              {"type", "invalid_request_error"},
                              {"param", "prompt"},
                              {"code", "x"}}}}));
  EXPECT_TRUE(invalidField("", "m").body()["error"]["param"].is_null());
}

} // namespace
