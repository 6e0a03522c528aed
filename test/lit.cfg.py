# -*- Python -*-
# lit configuration for nnsc: FileCheck tests of the compiler and tools.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "NNSC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".nns", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.nnsc_obj_root, "test")
config.excludes = ["Unit", "Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

llvm_config.use_default_substitutions()

# lit runs tests two at a time on two cores. LibTorch's OpenMP threads spin between parallel
# regions by default, and two spinning engines on two cores slow each other down ~5x (measured:
# nns-run decode 3.3 tok/s vs 15.3 tok/s with passive waiting, same load). Tests wait passively.
config.environment["OMP_WAIT_POLICY"] = "PASSIVE"
# `scripts/test --sanitize`: the sanitizers' options reach the tools the tests run.
for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.nnsc_tools_dir, append_path=True)

config.substitutions.append(("%nnsc_src_root", config.nnsc_src_root))
config.substitutions.append(("%nnsc_obj_root", config.nnsc_obj_root))
# The project venv python (torch, transformers, nnsight): lit defines its own %python.
config.substitutions.append(("%ref_python", config.python_executable))
config.substitutions.append(
    ("%default_model",
     os.path.join(config.nnsc_src_root, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")))
config.substitutions.append(
    ("%gemma_model", os.path.join(config.nnsc_src_root, "models", "gemma-3-270m-q4_k_m.gguf")))

# `nvcc`: the CUDA toolkit compiled the .cu kernels (every machine with /usr/local/cuda).
# `cuda-gpu`: a GPU is present to run them (never on the development and CI machines).
if config.nnsc_cuda_enabled:
    config.available_features.add("nvcc")
    # The toolkit's ptxas, to check the PTX of --target=cuda bundles on its own.
    config.substitutions.append(
        ("%ptxas", shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"))
if shutil.which("nvidia-smi") and os.path.exists("/dev/nvidia0"):
    config.available_features.add("cuda-gpu")

# `blocks-only-weights`: a load keeps a GGUF projection's or embedding's blocks without a
# widened copy (ProjectionForms::BlocksAndPacked): oneDNN serves the products over the row
# limit (AVX-512 BW/VL/DQ, not NNSC_GEMM=libtorch) and the quantized kernels the rest
# (AVX2/FMA/F16C).
def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()
if ({"avx512bw", "avx512vl", "avx512dq", "avx2", "fma", "f16c"} <= cpu_flags()
        and os.environ.get("NNSC_GEMM") != "libtorch"):
    config.available_features.add("blocks-only-weights")

# `quantized-kernels`: the quantized GEMV runs (AVX2/FMA/F16C), so decode-sized steps take the
# row lane (DecoderLayer::runOnRows) on the bundled model.
if {"avx2", "fma", "f16c"} <= cpu_flags():
    config.available_features.add("quantized-kernels")

llvm_config.add_tool_substitutions(
    ["nns-opt", "nnsc", "nns-run", "nns-serve"], [config.nnsc_tools_dir])
