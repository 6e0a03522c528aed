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
    std::vector<int32_t> ids = tok->encode(r->text, /*addSpecial=*/r->special);
    out = {{"ids", ids}, {"count", ids.size()}};
  }
  res.set_content(out.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

} // namespace nnsc::server
