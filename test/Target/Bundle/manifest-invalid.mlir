// The manifest verifier: every malformed field of nnsc.manifest is reported on the module with
// its path inside the attribute.
// RUN: nns-bundle-emit %s -emit=llvm -split-input-file -verify-diagnostics -o /dev/null

// expected-error @+1 {{missing module attribute 'nnsc.manifest' (kernel-level IR carries the bundle manifest there)}}
module {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{'nnsc.manifest' must be a dictionary, got ["traces"]}}
module attributes {nnsc.manifest = ["traces"]} {
}

// -----

// expected-error @+1 {{nnsc.manifest: schema_hash: expected a ui64 integer, got 1 : i64}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: arch: missing}}
module attributes {nnsc.manifest = {
  source_hash = "00", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: dims.vocab: missing}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: dims.hidden: must be at least 1, got 0}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 0, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].params[0].dtype: unknown dtype 'f64' (expected f32, bf16, f16, i64 or bool)}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [{name = "v", dtype = "f64", shape = array<i64: 576>}], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].params[0].shape: invalid dimension -1 (expected > 0)}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [{name = "v", dtype = "f32", shape = array<i64: -1>}], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].params[0].default: type 'tensor<4xf32>' does not match the param's dtype and shape}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [{name = "v", dtype = "f32", shape = array<i64: 576>, default = dense<0.0> : tensor<4xf32>}], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].params[1].name: duplicate param 'v'}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [{name = "v", dtype = "f32", shape = array<i64>}, {name = "v", dtype = "i64", shape = array<i64>}], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].saves[0].flags[0]: unknown flag "every_step" (expected one of 'per_step')}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [], saves = [{name = "h", dtype = "f32", shape = array<i64: -1, 576>, flags = ["every_step"]}],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].sites[0].phase: unknown phase 'prefill' (expected forward, logits, samples or result)}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "prefill", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].sites[0].access: a site entry must read, write or skip}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = [], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].sites[0].kernel: no kernel function @missing in the module}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @missing}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].sites[0].kernel: kernel @k has type '(!llvm.ptr, !llvm.ptr, i64, !llvm.ptr) -> i32', expected (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr) -> i32}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i64, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].sites[1].site: site 27 follows site 27: entries must be sorted by site index without repeats}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>,
    params = [], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}, {site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"], kernel = @k}]}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].invoke_names: has 1 names for 2 invokes}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 2, invoke_names = ["a"], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>, params = [], saves = [], sites = []}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].flags[0]: unknown flag "reads" (expected one of 'reads_prompt' 'writes_prompt' 'stops')}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = ["reads"], frame_bytes = 0, frame_heap_slots = array<i64>, params = [], saves = [], sites = []}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[1].name: duplicate trace 't'}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "t", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>, params = [], saves = [], sites = []}, {name = "t", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = array<i64>, params = [], saves = [], sites = []}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].frame_bytes: must be at least 0, got -8}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = -8, frame_heap_slots = array<i64>, params = [], saves = [], sites = []}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].frame_heap_slots: missing}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 24, params = [], saves = [], sites = []}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].frame_heap_slots: expected array<i64: ...>, got [8]}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 24, frame_heap_slots = [8], params = [], saves = [], sites = []}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// A heap pointer must lie inside the frame.
// expected-error @+1 {{nnsc.manifest: traces[0].frame_heap_slots: offset 24 is not a pointer inside the frame of 24 bytes}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 24, frame_heap_slots = array<i64: 8, 24>, params = [], saves = [], sites = []}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].frame_heap_slots: offset 12 is not 8-aligned}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 48, frame_heap_slots = array<i64: 12>, params = [], saves = [], sites = []}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nnsc.manifest: traces[0].frame_heap_slots: offset 8 follows 32 (offsets ascend)}}
module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152},
  traces = [{name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 48, frame_heap_slots = array<i64: 32, 8>, params = [], saves = [], sites = []}]
}} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}
