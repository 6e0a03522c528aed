//===- Sites.cpp - the served model's hook sites over HTTP ----------------===//
//
// GET /v1/nns/sites: the sites a program can read and write on the served model, in firing
// order with their shapes (what `nnsc --print-sites` prints), and the model's dimension names
// a program may use (`hidden`, `layers`, ...). The workbench's site browser reads it; a client
// can check a path before it sends a program.
//
//===----------------------------------------------------------------------===//

#include "Handlers.h"

#include "nnsc/Runtime/Models/CausalLM.h"
#include "nnsc/Schema/Architecture.h"

namespace nnsc::server {

using json = nlohmann::json;

namespace {

json shapeJson(const std::vector<int64_t> &shape) {
  json out = json::array();
  for (int64_t d : shape) {
    if (d == schema::kTokens)
      out.push_back("T");
    else if (d == schema::kContext)
      out.push_back("S");
    else
      out.push_back(d);
  }
  return out;
}

} // namespace

void handleSites(OpenAIServer &server, const httplib::Request &, httplib::Response &res) {
  const schema::Architecture &arch = server.served().model->architecture();
  json sites = json::array();
  for (const schema::Site &site : arch.sites())
    sites.push_back({{"path", site.path},
                     {"shape", shapeJson(site.shape)},
                     {"dtype", site.elementType == schema::ElementType::F32 ? "f32" : "i64"},
                     {"writable", site.writable}});
  json out = {{"model", server.options().servedModelName},
              {"architecture", std::string(arch.config().traits().classPrefix) + "ForCausalLM"},
              {"sites", std::move(sites)}};
  for (const auto &[name, value] : arch.dimensionNames())
    out[name] = value;
  res.set_content(out.dump(), "application/json");
}

} // namespace nnsc::server
