# LibTorch from the project venv's torch wheel (scripts/setup), located through
# torch.utils.cmake_prefix_path. We import libtorch_cpu and libc10 ourselves instead of calling
# find_package(Torch): TorchConfig of the CUDA wheel probes the system CUDA toolkit and adds its
# libnvrtc (13.0 here, while the wheel is built for 13.2) to every consumer. The runtime's CUDA
# kernels are separate .cu sources (see NNSCCuda.cmake) and need none of that.
set(NNSC_PYTHON ${PROJECT_SOURCE_DIR}/.venv/bin/python CACHE FILEPATH
  "Python of the project venv (carries torch, transformers, nnsight)")
if(NOT EXISTS ${NNSC_PYTHON})
  message(FATAL_ERROR "${NNSC_PYTHON} not found: run scripts/setup first")
endif()
execute_process(
  COMMAND ${NNSC_PYTHON} -c "import torch.utils, os; print(os.path.dirname(os.path.dirname(torch.utils.cmake_prefix_path)))"
  OUTPUT_VARIABLE NNSC_TORCH_DIR OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cannot import torch from ${NNSC_PYTHON}: run scripts/setup")
endif()

find_library(NNSC_TORCH_CPU torch_cpu PATHS ${NNSC_TORCH_DIR}/lib NO_DEFAULT_PATH REQUIRED)
find_library(NNSC_TORCH_C10 c10 PATHS ${NNSC_TORCH_DIR}/lib NO_DEFAULT_PATH REQUIRED)
message(STATUS "LibTorch from ${NNSC_TORCH_DIR}")

add_library(nnsc_torch INTERFACE)
target_include_directories(nnsc_torch SYSTEM INTERFACE
  ${NNSC_TORCH_DIR}/include
  ${NNSC_TORCH_DIR}/include/torch/csrc/api/include)
target_link_libraries(nnsc_torch INTERFACE ${NNSC_TORCH_CPU} ${NNSC_TORCH_C10})
target_link_options(nnsc_torch INTERFACE "-Wl,-rpath,${NNSC_TORCH_DIR}/lib")

# The wheel's CUDA libraries, for the CUDA backend library and the GPU tests only: CPU
# targets never link them (loading libtorch_cuda alone takes seconds). The wheel's CUDA
# runtime, cuBLAS, cuDNN, NCCL, ... live in site-packages/nvidia/*/lib, which Python preloads
# but libtorch_cuda's own dynamic section does not name, so consumers carry them in their
# RPATH (not RUNPATH: only RPATH is searched for the dependencies of dependencies).
find_library(NNSC_TORCH_CUDA torch_cuda PATHS ${NNSC_TORCH_DIR}/lib NO_DEFAULT_PATH)
find_library(NNSC_TORCH_C10_CUDA c10_cuda PATHS ${NNSC_TORCH_DIR}/lib NO_DEFAULT_PATH)
if(NNSC_TORCH_CUDA AND NNSC_TORCH_C10_CUDA)
  file(GLOB nnsc_nvidia_lib_dirs LIST_DIRECTORIES true ${NNSC_TORCH_DIR}/../nvidia/*/lib)
  add_library(nnsc_torch_cuda INTERFACE)
  # No symbol of libtorch_cuda is referenced directly, but loading it registers the CUDA
  # device, allocator and kernels with LibTorch; --as-needed would drop it.
  target_link_libraries(nnsc_torch_cuda INTERFACE nnsc_torch "-Wl,--no-as-needed"
    ${NNSC_TORCH_CUDA} "-Wl,--as-needed" ${NNSC_TORCH_C10_CUDA})
  target_link_options(nnsc_torch_cuda INTERFACE "-Wl,--disable-new-dtags")
  foreach(dir ${nnsc_nvidia_lib_dirs})
    target_link_options(nnsc_torch_cuda INTERFACE "-Wl,-rpath,${dir}")
  endforeach()
endif()
