# The sanitizer build (-DNNSC_SANITIZE=ON in its own build directory, `scripts/test --sanitize`):
# every object of the project compiled with AddressSanitizer and UndefinedBehaviorSanitizer,
# so the GoogleTests and the lit suite (the tools, the bundles they load, the end-to-end and
# parity tests) run under both. LibTorch, MLIR and the other prebuilt libraries are not
# instrumented: a bad access inside them is found only where our code made it.
#
# -O1 keeps runs fast and stack traces readable; an undefined-behaviour report stops the
# process like a crash (-fno-sanitize-recover), so a test cannot pass over one. The Python
# extension is left out: it would have to be loaded into an instrumented Python.
add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
  -fno-omit-frame-pointer -g1 -O1)
add_link_options(-fsanitize=address,undefined)
