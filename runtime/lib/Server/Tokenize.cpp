//===- Tokenize.cpp - the tokenize and detokenize handlers ----------------===//
//
// The served model's tokenizer over HTTP, so a client can turn text into the token ids a
// program takes as params and saved ids (argmax, `result`) back into text without a tokenizer
// of its own (nnsc.Client.tokenizer).
//
//===----------------------------------------------------------------------===//

#include "Handlers.h"

#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

namespace nnsc::server {

using json = nlohmann::json;

void handleTokenize(OpenAIServer &server, const httplib::Request &req, httplib::Response &res,
                    bool detokenize) {
  const tokenizer::Tokenizer *tok = server.served().tokenizer;
  if (!tok)
    return sendError(server.metricsSink(), res,
                     invalidField("", "the served model has no tokenizer"));
  json body;
  try {
    body = json::parse(req.body);
  } catch (const json::parse_error &e) {
    return sendError(
        server.metricsSink(), res,
        invalidField("", std::string("the request body is not valid JSON: ") + e.what()));
  }
  ApiError error;
  std::optional<TokenizeRequest> r =
      parseTokenizeRequest(body, detokenize, int64_t(tok->vocabSize()), error);
  if (!r)
    return sendError(server.metricsSink(), res, error);
  json out;
  if (detokenize) {
    out = {{"text", tok->decode(r->ids, /*skipSpecial=*/r->special)}};
  } else {
    r->ids = tok->encode(r->text, /*addSpecial=*/r->special);
    out = {{"ids", r->ids}, {"count", r->ids.size()}};
  }
  if (r->returnTokens) {
    // Each id decoded alone: a piece that is part of a character (byte fallback, a split
    // multi-byte character) decodes to U+FFFD, as it would alone in any client.
    json tokens = json::array();
    for (int32_t id : r->ids)
      tokens.push_back(tok->decode({id}, /*skipSpecial=*/false));
    out["tokens"] = std::move(tokens);
  }
  res.set_content(out.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

} // namespace nnsc::server
