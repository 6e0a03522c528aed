//===- RequestFuzzer.cpp - fuzz nns-serve's request body parser -----------===//
//
// The body of POST /v1/completions or /v1/chat/completions (the first byte picks which): JSON
// parsing as the server does it, then parseGenerationRequest (runtime/lib/Server/Protocol.cpp).
// An accepted request must carry prompts (or messages) and sampling params that validate.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Server/Protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const bool chat = data[0] & 1;
  nlohmann::json body =
      nlohmann::json::parse(data + 1, data + size, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded())
    return 0;
  nnsc::server::ApiError error;
  std::optional<nnsc::server::GenerationRequest> request =
      nnsc::server::parseGenerationRequest(body, chat, error);
  if (!request) {
    (void)error.body().dump();
    return 0;
  }
  if (request->chat ? request->messages.empty() : request->numPrompts() == 0)
    __builtin_trap();
  request->sampling.validate(); // throws (an uncaught exception aborts) if it lets junk through
  return 0;
}
