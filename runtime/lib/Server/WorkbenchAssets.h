//===- WorkbenchAssets.h - the workbench page's files, compiled in -*- C++ -*-===//
//
// The files of the browser workbench (runtime/lib/Server/workbench, examples/workbench),
// embedded into the server at build time by cmake/EmbedFiles.cmake.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_WORKBENCHASSETS_H
#define NNSC_SERVER_WORKBENCHASSETS_H

#include <optional>
#include <string_view>

namespace nnsc::server {

/// The contents of the workbench file served at `url` ("/workbench/index.html",
/// "/workbench/examples/examples.json"), or nullopt when there is none.
std::optional<std::string_view> findWorkbenchAsset(std::string_view url);

} // namespace nnsc::server

#endif // NNSC_SERVER_WORKBENCHASSETS_H
