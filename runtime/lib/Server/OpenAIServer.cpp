//===- OpenAIServer.cpp - nns-serve's HTTP front --------------------------===//

#include "nnsc/Server/OpenAIServer.h"

#include "Handlers.h"

#include <chrono>

namespace nnsc::server {

using json = nlohmann::json;

void sendError(Metrics &metrics, httplib::Response &res, const ApiError &error) {
  metrics.countRequest(error.status >= 500 ? "error_5xx" : "error_4xx");
  res.status = error.status;
  res.set_content(error.body().dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
}

OpenAIServer::OpenAIServer(ServerOptions options, ServedModel served, EngineLoop &loop,
                           session::ProgramRegistry &programs, SaveHandleStore &saves,
                           Metrics &metrics)
    : opts(std::move(options)), model(std::move(served)), loop(loop), registry(programs),
      saves(saves), metrics(metrics), http(std::make_unique<httplib::Server>()) {
  const int threads = std::max(opts.httpThreads, 2);
  http->new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  http->set_payload_max_length(opts.maxBodyBytes);
  // A response goes out as several writes (headers, body, each event of a stream); with
  // Nagle's algorithm a later write waits for the client's delayed ACK of the first (40 ms).
  http->set_tcp_nodelay(true);
  // Generation can take long between two events of a stream; reads of a request are short.
  http->set_write_timeout(std::chrono::seconds(30));
  addRoutes();
}

OpenAIServer::~OpenAIServer() = default;

bool OpenAIServer::bind(std::string &error) {
  if (opts.port == 0) {
    boundPort = http->bind_to_any_port(opts.host);
  } else if (http->bind_to_port(opts.host, opts.port)) {
    boundPort = opts.port;
  } else {
    boundPort = -1;
  }
  if (boundPort <= 0) {
    error = "cannot listen on " + opts.host + ":" + std::to_string(opts.port) +
            " (in use, or not an address of this machine)";
    return false;
  }
  return true;
}

void OpenAIServer::serve() { http->listen_after_bind(); }

void OpenAIServer::stop() { http->stop(); }

void OpenAIServer::addRoutes() {
  // Every route but /health and the workbench's page needs the API key when one is set (the
  // page asks for the key and sends it with its API calls).
  http->set_pre_routing_handler([this](const httplib::Request &req, httplib::Response &res) {
    if (opts.apiKey.empty() || req.path == "/health" ||
        (opts.workbench && isWorkbenchPath(req.path)))
      return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + opts.apiKey)
      return httplib::Server::HandlerResponse::Unhandled;
    ApiError e;
    e.status = 401;
    e.type = "authentication_error";
    e.code = "invalid_api_key";
    e.message = "a valid API key is required: send 'Authorization: Bearer <key>'";
    sendError(metrics, res, e);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Statuses httplib sets itself (unknown route, body too large, ...) get an OpenAI body too.
  http->set_error_handler([this](const httplib::Request &req, httplib::Response &res) {
    if (!res.body.empty())
      return;
    ApiError e;
    e.status = res.status;
    if (res.status == 404) {
      e.type = "NotFoundError";
      e.message = "no route " + req.method + " " + req.path;
    } else if (res.status == 413) {
      e.message = "the request body is larger than the limit of " +
                  std::to_string(opts.maxBodyBytes) + " bytes (--max-body-bytes)";
    } else {
      e.message = "the request could not be handled (HTTP " + std::to_string(res.status) + ")";
    }
    metrics.countRequest(e.status >= 500 ? "error_5xx" : "error_4xx");
    res.set_content(e.body().dump(), "application/json");
  });
  http->set_exception_handler(
      [this](const httplib::Request &, httplib::Response &res, std::exception_ptr ep) {
        ApiError e;
        e.status = 500;
        e.type = "server_error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception &ex) {
          e.message = std::string("internal error: ") + ex.what();
        } catch (...) {
          e.message = "internal error";
        }
        sendError(metrics, res, e);
      });

  // Unhealthy (503, the reason as text) once a tensor-parallel rank is gone.
  http->Get("/health", [this](const httplib::Request &, httplib::Response &res) {
    const std::string failure = loop.failure();
    res.status = failure.empty() ? 200 : 503;
    res.set_content(failure, "text/plain");
  });
  http->Get("/metrics", [this](const httplib::Request &, httplib::Response &res) {
    const std::optional<RankLinkStats> ranks = loop.rankStats();
    res.set_content(metrics.render(registry.cacheCounts(), ranks ? &*ranks : nullptr),
                    "text/plain; version=0.0.4");
  });
  http->Get("/v1/models", [this](const httplib::Request &, httplib::Response &res) {
    json entry = {{"id", opts.servedModelName},
                  {"object", "model"},
                  {"created", 0},
                  {"owned_by", "nnsc"},
                  {"max_model_len", model.maxModelLen}};
    res.set_content(json{{"object", "list"}, {"data", json::array({entry})}}.dump(),
                    "application/json");
  });
  http->Post("/v1/completions", [this](const httplib::Request &req, httplib::Response &res) {
    handleGeneration(*this, req, res, /*chat=*/false);
  });
  http->Post("/v1/chat/completions", [this](const httplib::Request &req, httplib::Response &res) {
    handleGeneration(*this, req, res, /*chat=*/true);
  });
  http->Get("/v1/nns/sites", [this](const httplib::Request &req, httplib::Response &res) {
    handleSites(*this, req, res);
  });
  if (opts.workbench) {
    auto workbench = [this](const httplib::Request &req, httplib::Response &res) {
      handleWorkbenchFile(*this, req, res);
    };
    http->Get("/", workbench);
    http->Get(R"(/workbench/.*)", workbench);
  }
  http->Post("/v1/nns/tokenize", [this](const httplib::Request &req, httplib::Response &res) {
    handleTokenize(*this, req, res, /*detokenize=*/false);
  });
  http->Post("/v1/nns/detokenize", [this](const httplib::Request &req, httplib::Response &res) {
    handleTokenize(*this, req, res, /*detokenize=*/true);
  });
  http->Get(
      R"(/v1/nns/saves/([0-9a-f]+))", [this](const httplib::Request &req, httplib::Response &res) {
        std::shared_ptr<const std::string> blob = saves.get(req.matches[1]);
        if (!blob) {
          ApiError e;
          e.status = 404;
          e.type = "NotFoundError";
          e.code = "unknown_saves_handle";
          e.message = "no saves under this handle: it is unknown or expired (entries live " +
                      std::to_string(saves.timeToLive().count()) +
                      " s, and the oldest are dropped when the store's " +
                      std::to_string(saves.capacityBytes()) + " bytes are full)";
          return sendError(metrics, res, e);
        }
        res.set_content_provider(blob->size(), "application/octet-stream",
                                 [blob](size_t offset, size_t length, httplib::DataSink &sink) {
                                   return sink.write(blob->data() + offset, length);
                                 });
      });
}

} // namespace nnsc::server
