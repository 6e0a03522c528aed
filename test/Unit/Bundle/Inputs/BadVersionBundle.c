/* A bundle from a future ABI: a well-formed table whose abi_version is one ahead of the
 * runtime's. Built as a shared object by CMake for BundleLoaderTest. */
#include "nnsc/Bundle/BundleABI.h"

static const nnsc_bundle bundle = {
    NNSC_BUNDLE_ABI_VERSION + 1u, "00", "llama", 0u, 576, 1536, 30, 9, 3, 64, 49152, 0, 0, 0};

const nnsc_bundle *nnsc_bundle_query(void) { return &bundle; }
