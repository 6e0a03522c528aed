//===- Protocol.h - OpenAI-compatible request bodies ------------*- C++ -*-===//
//
// The JSON of `POST /v1/completions` and `POST /v1/chat/completions`, parsed and checked into
// a GenerationRequest before anything else looks at it, and the OpenAI error body every
// refusal is answered with. Field meanings are OpenAI's (and vLLM's for its extensions
// `top_k`, `ignore_eos`, `return_token_ids`); the `nns` object carries the intervention
// (docs/Server.md).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_PROTOCOL_H
#define NNSC_SERVER_PROTOCOL_H

#include "nnsc/Runtime/Engine/SamplingParams.h"
#include "nnsc/Runtime/Tokenizer/ChatTemplate.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace nnsc::server {

/// A refusal: HTTP status and OpenAI's {"error": {message, type, param, code}}.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  /// The request field at fault, if one is.
  std::string param;
  std::string code;

  nlohmann::json body() const;
};

/// ApiError for a bad field: 400, invalid_request_error.
ApiError invalidField(const std::string &param, const std::string &message);

/// The `nns` object: which program runs on the request and how its saves come back.
struct InterventionSpec {
  /// `.nns` source compiled by the server, or the name of a bundle registered at start.
  std::optional<std::string> program;
  std::optional<std::string> bundle;
  /// The trace to run; empty for the bundle's only trace.
  std::string trace;
  /// Param values as sent, decoded against the trace's declarations later.
  std::vector<std::pair<std::string, nlohmann::json>> params;
  enum class SavesFormat { Json, Safetensors } savesFormat = SavesFormat::Json;
  enum class SavesTransport { Auto, Inline, Handle } savesTransport = SavesTransport::Auto;
};

/// A checked completion or chat request.
struct GenerationRequest {
  bool chat = false;
  std::string model;
  /// Completions: the prompts as text, or as token ids (one of the two is non-empty).
  std::vector<std::string> textPrompts;
  std::vector<std::vector<int32_t>> idPrompts;
  /// Chat: the conversation.
  std::vector<tokenizer::ChatMessage> messages;
  /// Sampling; maxTokens is meaningful only when `maxTokensGiven`.
  SamplingParams sampling;
  bool maxTokensGiven = false;
  std::vector<std::string> stop;
  bool stream = false;
  bool includeUsage = false;
  bool returnTokenIds = false;
  std::optional<InterventionSpec> nns;

  size_t numPrompts() const {
    return chat ? 1 : textPrompts.empty() ? idPrompts.size() : textPrompts.size();
  }
};

/// Parses a request body. Returns nullopt and fills `error` for anything malformed,
/// of the wrong type, out of range or unsupported, naming the field.
std::optional<GenerationRequest> parseGenerationRequest(const nlohmann::json &body, bool chat,
                                                        ApiError &error);

/// A checked `POST /v1/nns/tokenize` ({"text", "add_special_tokens", "return_tokens"}) or
/// `POST /v1/nns/detokenize` ({"ids", "skip_special_tokens", "return_tokens"}) body.
struct TokenizeRequest {
  std::string text;
  std::vector<int32_t> ids;
  /// Tokenize: add the model's special tokens (BOS); detokenize: leave special tokens out.
  bool special = true;
  /// Also answer each id's own text (`tokens`), one string per id.
  bool returnTokens = false;
};

/// Parses a tokenize (`detokenize` false) or detokenize body; ids are checked against
/// `vocab`. Returns nullopt and fills `error` for a malformed body or an unknown field.
std::optional<TokenizeRequest> parseTokenizeRequest(const nlohmann::json &body, bool detokenize,
                                                    int64_t vocab, ApiError &error);

} // namespace nnsc::server

#endif // NNSC_SERVER_PROTOCOL_H
