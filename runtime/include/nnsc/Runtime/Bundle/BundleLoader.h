//===- BundleLoader.h - dlopen and check a bundle ---------------*- C++ -*-===//
//
// Loads a `.nnsb` and refuses it, with a message naming the field that differs, when it was
// not built for this runtime (ABI version) or this model (architecture, dimensions, schema
// hash, the path of every site it touches). See docs/BundleABI.md, "Loading checks".
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BUNDLE_BUNDLELOADER_H
#define NNSC_RUNTIME_BUNDLE_BUNDLELOADER_H

#include "nnsc/Runtime/Bundle/Bundle.h"
#include "nnsc/Schema/Architecture.h"

#include <memory>
#include <string>

namespace nnsc {

/// Checks an exported bundle table against `architecture` and converts it. Returns nullopt
/// and sets `error` ("bundle was built for hidden=576 but the model has hidden=64").
std::optional<std::vector<BundleTrace>> checkBundle(const nnsc_bundle &bundle,
                                                    const schema::Architecture &architecture,
                                                    std::string &error);

/// dlopens `path`, queries it and checks it with checkBundle. Returns null and sets `error`
/// when the file cannot be loaded, is not a bundle or does not fit the model.
std::unique_ptr<Bundle> loadBundle(const std::string &path,
                                   const schema::Architecture &architecture, std::string &error);

} // namespace nnsc

#endif // NNSC_RUNTIME_BUNDLE_BUNDLELOADER_H
