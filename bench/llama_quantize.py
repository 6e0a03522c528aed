"""Re-quantizes a GGUF file with llama.cpp's own quantizer (llama_model_quantize), for the peer
benchmark on the formats real GGUF files ship in.

usage: ~/.cache/nnsc/bench-llama-venv/bin/python bench/llama_quantize.py INPUT.gguf OUTPUT.gguf
           [FTYPE]

FTYPE is a llama.cpp file type without its LLAMA_FTYPE_MOSTLY_ prefix (default Q4_K_M; Q5_K_M,
Q4_0, Q8_0, ...). The input may itself be quantized (allow_requantize), as the bundled Q4_1
SmolLM2 is: the output is what `llama-quantize --allow-requantize` writes, including llama.cpp's
per-tensor choices and its fallbacks where a row is not a multiple of 256 weights (SmolLM2's
576-wide projections: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0). Runs in the bench-only venv of
bench/setup-llama-cpp.
"""

import ctypes
import sys

import llama_cpp


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.split("\n\n")[1])
    src, dst = sys.argv[1:3]
    ftype = sys.argv[3] if len(sys.argv) == 4 else "Q4_K_M"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + ftype)
    params.allow_requantize = True
    params.nthread = 2
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params))
    if rc != 0:
        sys.exit("llama_quantize: llama_model_quantize failed (%d)" % rc)
    print("llama_quantize: wrote %s (%s)" % (dst, ftype))


if __name__ == "__main__":
    main()
