# The fuzz build (-DNNSC_FUZZ=ON in its own build directory, compiled with clang): libFuzzer
# targets over every reader of outside input (test/Fuzz, docs/Testing.md "Fuzzing"), with
# AddressSanitizer and UndefinedBehaviorSanitizer. Only the small libraries the targets need
# are built: no LibTorch, no compiler back end. scripts/fuzz configures and runs it.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "NNSC_FUZZ needs clang for libFuzzer: configure with "
    "-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 (scripts/fuzz does)")
endif()

# Every object is instrumented for coverage and the sanitizers; only the fuzz targets link
# libFuzzer's main (-fsanitize=fuzzer, see test/Fuzz/CMakeLists.txt). -O1 keeps the runs fast
# and the stack traces readable; an undefined-behaviour report stops the run like a crash.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
  -fno-omit-frame-pointer -gline-tables-only -O1)
add_link_options(-fsanitize=address,undefined)

# The tokenizer's Unicode tables are generated with the project venv's Python (as in the main
# build, where cmake/NNSCTorch.cmake sets it).
set(NNSC_PYTHON ${PROJECT_SOURCE_DIR}/.venv/bin/python CACHE FILEPATH
  "Python of the project venv (scripts/setup)")
if(NOT EXISTS ${NNSC_PYTHON})
  message(FATAL_ERROR "${NNSC_PYTHON} not found: run scripts/setup first")
endif()
