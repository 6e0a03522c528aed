// What the bundle target checks of a manifest beyond the attributes' own verifiers
// (test/Dialect/NNS/manifest-invalid.mlir): that it is there, and that each site's kernel is a
// function of the module with the kernel signature.
// RUN: nns-bundle-emit %s -emit=llvm -split-input-file -verify-diagnostics -o /dev/null

// expected-error @+1 {{missing module attribute 'nns.manifest' (kernel-level IR carries the bundle manifest there)}}
module {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nns.manifest: trace 't' site 27 ('model.layers.0.output'): no kernel function @missing in the module}}
module attributes {nns.manifest = #nns.manifest<source_hash = "00", arch = "llama", schema_hash = 1,
  dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
  traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = [],
    params = [], saves = [],
    sites = [#nns.site_entry<site = 27, path = "model.layers.0.output", phase = forward, access = [read], kernel = @missing>]>]>} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// expected-error @+1 {{nns.manifest: trace 't' site 27 ('model.layers.0.output'): no kernel function @k in the module}}
module attributes {nns.manifest = #nns.manifest<source_hash = "00", arch = "llama", schema_hash = 1,
  dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
  traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = [],
    params = [], saves = [],
    sites = [#nns.site_entry<site = 27, path = "model.layers.0.output", phase = forward, access = [read], kernel = @k>]>]>} {
  func.func private @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i32, %rt: !llvm.ptr) -> i32
}

// -----

// expected-error @+1 {{nns.manifest: trace 't' site 27 ('model.layers.0.output'): kernel @k has type '(!llvm.ptr, !llvm.ptr, i64, !llvm.ptr) -> i32', expected (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr) -> i32}}
module attributes {nns.manifest = #nns.manifest<source_hash = "00", arch = "llama", schema_hash = 1,
  dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
  traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = [],
    params = [], saves = [],
    sites = [#nns.site_entry<site = 27, path = "model.layers.0.output", phase = forward, access = [read], kernel = @k>]>]>} {
  func.func @k(%v: !llvm.ptr, %g: !llvm.ptr, %n: i64, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

