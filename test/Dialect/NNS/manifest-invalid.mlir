// The manifest attributes (NNSManifest.td) verify themselves: each malformed entry is reported
// where it is written, by its verifier (NNSManifest.cpp) or by the generated parser.
// RUN: nns-opt %s -split-input-file -verify-diagnostics

// expected-error @+3 {{model dimension 'vocab' must be at least 1, got 0}}
// expected-error @+2 {{failed to parse NNS_TargetAttr parameter 'dims' which is to be a `::nnsc::nns::ModelDimsAttr`}}
module attributes {nns.target = #nns.target<source_hash = "00", arch = "llama", schema_hash = 1,
    dims = #nns.model_dims<hidden = 8, intermediate = 16, layers = 2, heads = 2, kv_heads = 1, head_dim = 4, vocab = 0>,
    modules = {}>} {
}

// -----

// expected-error @+1 {{module 'model.layers.0.mlp' must map to its schema index, got -1 : i32}}
module attributes {nns.target = #nns.target<source_hash = "00", arch = "llama", schema_hash = 1,
    dims = #nns.model_dims<hidden = 8, intermediate = 16, layers = 2, heads = 2, kv_heads = 1, head_dim = 4, vocab = 32>,
    modules = {"model.layers.0.mlp" = -1 : i32}>} {
}

// -----

// expected-error @+5 {{param 'v' has element type 'f64' (expected f32, bf16, f16, i64 or i1)}}
// expected-error @+4 {{failed to parse NNS_TraceDescAttr parameter 'params' which is to be a `::llvm::ArrayRef<::nnsc::nns::ParamDescAttr>`}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [
      #nns.param_desc<name = "v", type = tensor<4xf64>>],
    saves = [],
    sites = []>]} {
}

// -----

// expected-error @+5 {{param 'v' has rank 5, more than the ABI's 4}}
// expected-error @+4 {{failed to parse NNS_TraceDescAttr parameter 'params' which is to be a `::llvm::ArrayRef<::nnsc::nns::ParamDescAttr>`}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [
      #nns.param_desc<name = "v", type = tensor<1x1x1x1x4xf32>>],
    saves = [],
    sites = []>]} {
}

// -----

// expected-error @+5 {{param 'v' has type 'tensor<?xf32>' (dimensions must be > 0)}}
// expected-error @+4 {{failed to parse NNS_TraceDescAttr parameter 'params' which is to be a `::llvm::ArrayRef<::nnsc::nns::ParamDescAttr>`}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [
      #nns.param_desc<name = "v", type = tensor<?xf32>>],
    saves = [],
    sites = []>]} {
}

// -----

// expected-error @+5 {{param 'v' has type 'tensor<3xf32>' but its default is 'tensor<4xf32>'}}
// expected-error @+4 {{failed to parse NNS_TraceDescAttr parameter 'params' which is to be a `::llvm::ArrayRef<::nnsc::nns::ParamDescAttr>`}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [
      #nns.param_desc<name = "v", type = tensor<3xf32>, default_value = dense<1.0> : tensor<4xf32>>],
    saves = [],
    sites = []>]} {
}

// -----

// expected-error @+6 {{save 'h' has type 'tensor<0x8xf32>' (dimensions must be > 0 or ? for the tokens)}}
// expected-error @+5 {{failed to parse NNS_TraceDescAttr parameter 'saves' which is to be a `::llvm::ArrayRef<::nnsc::nns::SaveDescAttr>`}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [
      #nns.save_desc<name = "h", type = tensor<0x8xf32>, flags = []>],
    sites = []>]} {
}

// -----

// expected-error @+6 {{save 'h' lists 'per_step' twice}}
// expected-error @+5 {{failed to parse NNS_TraceDescAttr parameter 'saves' which is to be a `::llvm::ArrayRef<::nnsc::nns::SaveDescAttr>`}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [
      #nns.save_desc<name = "h", type = tensor<?x8xf32>, flags = [per_step, per_step]>],
    sites = []>]} {
}

// -----

// expected-error @+7 {{expected one of [per_step] for how a save is collected, got: every_step}}
// expected-error @+6 {{failed to parse NNS_SaveDescAttr parameter 'flags' which is to be a `::llvm::ArrayRef<::nnsc::nns::SaveFlag>`}}
// expected-error @+5 {{failed to parse NNS_TraceDescAttr parameter 'saves' which is to be a `::llvm::ArrayRef<::nnsc::nns::SaveDescAttr>`}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [
      #nns.save_desc<name = "h", type = tensor<8xf32>, flags = [every_step]>],
    sites = []>]} {
}

// -----

// expected-error @+7 {{site index -1 of 'p' is negative}}
// expected-error @+6 {{failed to parse NNS_TraceDescAttr parameter 'sites' which is to be a `::llvm::ArrayRef<::nnsc::nns::SiteEntryAttr>`}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [],
    sites = [
      #nns.site_entry<site = -1, path = "p", phase = forward, access = [read], kernel = @k>]>]} {
}

// -----

// expected-error @+7 {{site 3 ('p') must read, write or skip}}
// expected-error @+6 {{failed to parse NNS_TraceDescAttr parameter 'sites' which is to be a `::llvm::ArrayRef<::nnsc::nns::SiteEntryAttr>`}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [],
    sites = [
      #nns.site_entry<site = 3, path = "p", phase = forward, access = [], kernel = @k>]>]} {
}

// -----

// expected-error @+7 {{site 3 access lists 'read' twice}}
// expected-error @+6 {{failed to parse NNS_TraceDescAttr parameter 'sites' which is to be a `::llvm::ArrayRef<::nnsc::nns::SiteEntryAttr>`}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [],
    sites = [
      #nns.site_entry<site = 3, path = "p", phase = forward, access = [read, read], kernel = @k>]>]} {
}

// -----

// expected-error @+8 {{expected one of [forward, logits, samples, result] for phase in which a site fires, got: prefill}}
// expected-error @+7 {{failed to parse NNS_SiteEntryAttr parameter 'phase' which is to be a `::nnsc::nns::Phase`}}
// expected-error @+6 {{failed to parse NNS_TraceDescAttr parameter 'sites' which is to be a `::llvm::ArrayRef<::nnsc::nns::SiteEntryAttr>`}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [],
    sites = [
      #nns.site_entry<site = 3, path = "p", phase = prefill, access = [read], kernel = @k>]>]} {
}

// -----

// expected-error @+1 {{trace 't' lists 'stops' twice}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [stops, stops],
    frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [],
    sites = []>]} {
}

// -----

// expected-error @+1 {{trace 't' has a frame of -8 bytes}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = -8, frame_heap_slots = [],
    params = [],
    saves = [],
    sites = []>]} {
}

// -----

// expected-error @+1 {{trace 't': frame heap slot 12 is not 8-aligned}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 24, frame_heap_slots = [12],
    params = [],
    saves = [],
    sites = []>]} {
}

// -----

// expected-error @+1 {{trace 't': frame heap slot 24 is not a pointer inside the frame of 24 bytes}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 24, frame_heap_slots = [24],
    params = [],
    saves = [],
    sites = []>]} {
}

// -----

// expected-error @+1 {{trace 't': frame heap slot 8 follows 16 (offsets ascend)}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 24, frame_heap_slots = [16, 8],
    params = [],
    saves = [],
    sites = []>]} {
}

// -----

// expected-error @+1 {{duplicate param 'v'}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [#nns.param_desc<name = "v", type = tensor<f32>>,
              #nns.param_desc<name = "v", type = tensor<i64>>],
    saves = [],
    sites = []>]} {
}

// -----

// expected-error @+1 {{duplicate save 'h'}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [#nns.save_desc<name = "h", type = tensor<8xf32>, flags = []>,
             #nns.save_desc<name = "h", type = tensor<8xf32>, flags = []>],
    sites = []>]} {
}

// -----

// expected-error @+1 {{trace 't': site 27 follows site 27 (entries ascend by site index without repeats)}}
module attributes {nns.traces = [#nns.trace_desc<name = "t", invoke_names = [], flags = [],
    frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [],
    sites = [#nns.site_entry<site = 27, path = "p", phase = forward, access = [read], kernel = @k>,
             #nns.site_entry<site = 27, path = "p", phase = forward, access = [write], kernel = @k>]>]} {
}

// -----

// expected-error @+1 {{duplicate trace 't'}}
module attributes {nns.manifest = #nns.manifest<source_hash = "00", arch = "llama", schema_hash = 1,
    dims = #nns.model_dims<hidden = 8, intermediate = 16, layers = 2, heads = 2, kv_heads = 1, head_dim = 4, vocab = 32>,
    traces = [
      #nns.trace_desc<name = "t", invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = [], params = [], saves = [], sites = []>,
      #nns.trace_desc<name = "t", invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = [], params = [], saves = [], sites = []>]>} {
}
