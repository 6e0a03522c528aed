# CUDA is optional and on by default when nvcc is found (/usr/local/cuda here). The .cu kernels
# compile and link on every such machine; nothing runs them without a GPU.
find_program(NNSC_NVCC nvcc HINTS /usr/local/cuda/bin)
if(NNSC_NVCC)
  set(nnsc_cuda_default ON)
else()
  set(nnsc_cuda_default OFF)
endif()
option(NNSC_ENABLE_CUDA "Compile the CUDA kernels (needs nvcc)" ${nnsc_cuda_default})

if(NNSC_ENABLE_CUDA)
  set(CMAKE_CUDA_COMPILER ${NNSC_NVCC})
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    # Ampere and Hopper; CUDA 13 dropped everything before Turing.
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(CMAKE_CUDA_STANDARD 17)
  message(STATUS "CUDA ${CMAKE_CUDA_COMPILER_VERSION}: kernels compiled for sm_${CMAKE_CUDA_ARCHITECTURES}")
endif()
