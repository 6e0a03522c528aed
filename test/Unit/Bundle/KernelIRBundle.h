//===- KernelIRBundle.h - bundles from the lit tests' kernel IR -*- C++ -*-===//
//
// Test support: compiles one of test/Target/Bundle's hand-written kernel-level .mlir files
// with nns-bundle-emit after substituting fields of its manifest (so a bundle can be built for
// exactly the model a test loads it against, or deliberately for another one).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TEST_UNIT_BUNDLE_KERNELIRBUNDLE_H
#define NNSC_TEST_UNIT_BUNDLE_KERNELIRBUNDLE_H

#include "nnsc/Schema/ModelConfig.h"

#include <map>
#include <string>

namespace nnsc::test {

/// The SmolLM2 config of the bundled model (what the lit tests' manifests describe).
const schema::ModelConfig &smolLM2Config();

/// Compiles test/Target/Bundle/`name` into a fresh .nnsb and returns its path. The manifest's
/// schema_hash becomes `config`'s, then each key of `replace` (a literal text of the file,
/// e.g. "hidden = 576") is replaced by its value. Fails the current test on error.
std::string buildBundle(const std::string &name, const schema::ModelConfig &config,
                        const std::map<std::string, std::string> &replace = {});

} // namespace nnsc::test

#endif // NNSC_TEST_UNIT_BUNDLE_KERNELIRBUNDLE_H
