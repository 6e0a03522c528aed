//===- Workbench.cpp - the browser workbench's static files ---------------===//
//
// GET / and GET /workbench/...: the single-page workbench (docs/Server.md, "Workbench"). The
// page talks to the server's own API only; its files are compiled into the binary, so the
// server needs no source tree and no network.
//
//===----------------------------------------------------------------------===//

#include "Handlers.h"
#include "WorkbenchAssets.h"

namespace nnsc::server {

namespace {

const char *contentType(std::string_view url) {
  auto endsWith = [&](std::string_view suffix) {
    return url.size() >= suffix.size() && url.substr(url.size() - suffix.size()) == suffix;
  };
  if (endsWith(".html"))
    return "text/html; charset=utf-8";
  if (endsWith(".js"))
    return "text/javascript; charset=utf-8";
  if (endsWith(".css"))
    return "text/css; charset=utf-8";
  if (endsWith(".json"))
    return "application/json";
  if (endsWith(".svg"))
    return "image/svg+xml";
  return "text/plain; charset=utf-8";
}

} // namespace

bool isWorkbenchPath(std::string_view path) {
  return path == "/" || path.rfind("/workbench/", 0) == 0;
}

void handleWorkbenchFile(OpenAIServer &server, const httplib::Request &req,
                         httplib::Response &res) {
  const std::string url = req.path == "/" ? "/workbench/index.html" : req.path;
  std::optional<std::string_view> file = findWorkbenchAsset(url);
  if (!file) {
    ApiError e;
    e.status = 404;
    e.type = "NotFoundError";
    e.message = "no workbench file " + req.path;
    return sendError(server.metricsSink(), res, e);
  }
  // The page is small and changes with the server binary; no caching keeps an upgraded
  // server from running an old page against a new API.
  res.set_header("Cache-Control", "no-cache");
  res.set_content(file->data(), file->size(), contentType(url));
}

} // namespace nnsc::server
