"""What oneDNN's packed weight copies buy: one layer's products with packed against plain weights.

nns-run keeps, next to each widened projection weight, the copy oneDNN's
`_reorder_linear_weight` packs once at load (runtime/lib/Layers/OneDnnLinear.cpp); the
products over the GEMV row limit (prefill, batched decode) run on it. That copy is as large as
the widened weights (538 MB fp32, 269 MB bf16 for SmolLM2-135M). This benchmark times the four
products of one SmolLM2-135M layer (q/k/v fused, o, gate/up fused, down) at several row counts
through the same LibTorch op nns-run calls (`mkldnn::_linear_pointwise`), once with the packed
weights and once with the plain ones (oneDNN then reorders as it goes), alternated, best of
`--repeat` calls per round, median over rounds. With `--tile N`, a third column: the plain
weights N output rows at a time, each tile copied before its product (a stand-in for
dequantizing tiles of GGUF blocks into a GEMM instead of keeping any widened copy).

usage: .venv/bin/python bench/onednn_pack_bench.py [--threads N] [--rounds N] [--repeat N]
           [--rows 32,64,128,512] [--tile N] [--lm-head]

`--lm-head` adds lm_head (49152 x 576) to the layer's products: the set
`nnsc-bench-quant-gemv MODEL --threads N` times on the GEMV and quantized kernels, for
comparing oneDNN with them at decode-sized row counts.

Progress goes to stderr; the results table (Markdown) to stdout.
"""

import argparse
import statistics
import sys
import time

import torch

# SmolLM2-135M: hidden 576, intermediate 1536, 9 query and 3 key/value heads of 64.
SHAPES = [(960, 576), (576, 576), (3072, 576), (576, 1536)]  # [out, in] per product


def best_of(fn, repeat):
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rows", default="32,64,128,512")
    ap.add_argument("--tile", type=int, default=0)
    ap.add_argument("--lm-head", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    shapes = SHAPES + ([(49152, 576)] if a.lm_head else [])
    linear = torch.ops.mkldnn._linear_pointwise
    reorder = torch.ops.mkldnn._reorder_linear_weight
    torch.manual_seed(0)

    tiled = " tiles of %d ms | tiles / packed |" % a.tile if a.tile else ""
    print("| dtype | rows | packed ms | plain ms | plain / packed |" + tiled)
    print("|---|---|---|---|---|" + ("---|---|" if a.tile else ""))
    for dtype in (torch.float32, torch.bfloat16):
        weights = [torch.randn(n, k, dtype=dtype) for n, k in shapes]
        packed = [reorder(w, None) for w in weights]
        for rows in (int(r) for r in a.rows.split(",")):
            inputs = [torch.randn(rows, k, dtype=dtype) for _, k in shapes]

            def layer(ws):
                return lambda: [linear(x, w, None, "none", [], "") for x, w in zip(inputs, ws)]

            def tiles():
                for x, w in zip(inputs, weights):
                    y = torch.empty(x.size(0), w.size(0), dtype=dtype)
                    for t in range(0, w.size(0), a.tile):
                        y[:, t:t + a.tile] = linear(x, w[t:t + a.tile].clone(), None, "none",
                                                    [], "")

            times = {"packed": [], "plain": [], "tiles": []}
            for r in range(a.rounds):
                print("[bench] %s, %d rows, round %d/%d" % (dtype, rows, r + 1, a.rounds),
                      file=sys.stderr)
                times["packed"].append(best_of(layer(packed), a.repeat))
                times["plain"].append(best_of(layer(weights), a.repeat))
                if a.tile:
                    times["tiles"].append(best_of(tiles, a.repeat))
            p, q = statistics.median(times["packed"]), statistics.median(times["plain"])
            row = "| %s | %d | %.3f | %.3f | %.2fx |" % (str(dtype).replace("torch.", ""), rows,
                                                        p * 1e3, q * 1e3, q / p)
            if a.tile:
                t = statistics.median(times["tiles"])
                row += " %.3f | %.2fx |" % (t * 1e3, t / p)
            print(row)
    print("\nOne SmolLM2-135M layer's four products%s, %d threads, medians of %d rounds of the best "
          "of %d calls, packed and plain alternated." % (" and lm_head" if a.lm_head else "",
                                                          a.threads, a.rounds, a.repeat))


if __name__ == "__main__":
    main()
