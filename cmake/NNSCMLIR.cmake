# LLVM/MLIR 22 from Debian (/usr/lib/llvm-22); its version file accepts only major.minor requests. We deliberately do not include
# HandleLLVMOptions: it changes global compile flags (exceptions, warnings) that would leak into
# the LibTorch targets. AddLLVM/AddMLIR apply LLVM's flags per target instead.
find_package(MLIR 22.1 REQUIRED CONFIG
  HINTS /usr/lib/llvm-22/lib/cmake/mlir)
message(STATUS "MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")

list(APPEND CMAKE_MODULE_PATH ${MLIR_CMAKE_DIR} ${LLVM_CMAKE_DIR})
set(LLVM_RUNTIME_OUTPUT_INTDIR ${PROJECT_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${PROJECT_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${PROJECT_BINARY_DIR})
include(TableGen)
include(AddLLVM)
include(AddMLIR)

# Include paths and definitions for targets that use MLIR/LLVM headers.
add_library(nnsc_llvm_flags INTERFACE)
target_include_directories(nnsc_llvm_flags SYSTEM INTERFACE
  ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
separate_arguments(NNSC_LLVM_DEFINITIONS NATIVE_COMMAND "${LLVM_DEFINITIONS}")
target_compile_options(nnsc_llvm_flags INTERFACE ${NNSC_LLVM_DEFINITIONS})

set(NNSC_LLVM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR})
