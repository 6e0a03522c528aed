// RUN: nns-opt %s --nns-lower-to-kernels --split-input-file --verify-diagnostics | FileCheck %s

// A steering kernel: one func.func of the ABI signature with a loop over the groups, a step
// guard, the site's rows and the param as strided memrefs, a param check that reports an error
// for the request, and the update as scf loops; the manifest is built from nns.traces,
// nns.param and nns.target.
// CHECK: nns.manifest = #nns.manifest<source_hash = "00", arch = "llama", schema_hash = 1,
// CHECK-SAME: dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>
// CHECK-SAME: traces = [#nns.trace_desc<name = "", invoke_names = [], flags = [reads_prompt, writes_prompt], frame_bytes = 0, frame_heap_slots = [],
// CHECK-SAME: params = [#nns.param_desc<name = "steer", type = tensor<576xf32>>]
// CHECK-SAME: sites = [#nns.site_entry<site = 339, path = "model.layers.12.output", phase = forward, access = [read, write], kernel = @main_339>]>]>
// CHECK: llvm.mlir.global internal constant @main_339.msg{{.*}}: param 'steer' is bound with the wrong dtype or shape
// CHECK-LABEL: func.func @main_339(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i32, %{{.*}}: !llvm.ptr) -> i32
// CHECK: scf.for
// CHECK: arith.cmpi sge
// CHECK: scf.if
// CHECK: builtin.unrealized_conversion_cast {{.*}} to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: memref.store
// CHECK: llvm.mlir.addressof @main_339.msg
// CHECK-NOT: {{^ *(%[^ ]+ = )?"?nns\.}}
module attributes {
  nns.target = #nns.target<source_hash = "00", arch = "llama", schema_hash = 1,
                dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
                modules = {}>,
  nns.traces = [#nns.trace_desc<name = "main", invoke_names = [], flags = [reads_prompt, writes_prompt], frame_bytes = 0, frame_heap_slots = [], params = [], saves = [], sites = []>]} {
  nns.param @steer : tensor<576xf32>
  nns.kernel @main_339 trace @main site 339 "model.layers.12.output" forward access [read, write] {
    %0 = nns.get_param @steer : tensor<576xf32>
    nns.site.update add %0 to "model.layers.12.output" at 339 forward {nns.guard = array<i64: 0, -1, 1>} : tensor<576xf32> into tensor<?x576xf32>
  }
}

// -----

// expected-error @+1 {{nns-lower-to-kernels needs 'nns.target' and 'nns.traces'}}
module {
}

// -----

// The ops of a run-time `if` branch stay in the branch, after the condition: only the
// unguarded ops of the kernel body (constants, params) form the prologue of a run
// (random-if-indexed-write.nns, random-if-site-view.nns, random-if-site-read-write.nns).
// CHECK-LABEL: func.func @main_121
// CHECK-NOT: memref.subview
// CHECK: %[[C:.*]] = memref.load %{{.*}}[] : memref<i1, {{.*}}>
// CHECK-NEXT: scf.if %[[C]] {
// CHECK: memref.subview
module attributes {
  nns.target = #nns.target<source_hash = "00", arch = "qwen3", schema_hash = 1,
                dims = #nns.model_dims<hidden = 64, intermediate = 128, layers = 16, heads = 4, kv_heads = 2, head_dim = 16, vocab = 256>,
                modules = {}>,
  nns.traces = [#nns.trace_desc<name = "main", invoke_names = [], flags = [reads_prompt, writes_prompt], frame_bytes = 0, frame_heap_slots = [], params = [], saves = [], sites = []>]} {
  nns.param @v : tensor<64xf32>
  nns.param @a : tensor<f32>
  nns.kernel @main_121 trace @main site 121 "model.layers.3.output" forward access [read, write] {
    %a = nns.get_param @a : tensor<f32>
    %half = arith.constant dense<5.000000e-01> : tensor<f32>
    %c = nns.compare gt %a, %half : tensor<f32>, tensor<f32> -> tensor<i1>
    %v = nns.get_param @v : tensor<64xf32>
    %zero = arith.constant dense<0> : tensor<i64>
    nns.if %c : tensor<i1> {
      %h = nns.site.read "model.layers.3.output" at 121 forward : tensor<?x64xf32>
      %s = nns.select_scatter %v into %h[%zero] dim 0 : tensor<64xf32>, tensor<?x64xf32>, tensor<i64> -> tensor<?x64xf32>
      nns.site.write %s to "model.layers.3.output" at 121 forward : tensor<?x64xf32> into tensor<?x64xf32>
    } {nns.guard = array<i64: 0, 1, 1>}
  }
}

// -----

// Frame slots start with the step their value was stored at (+1; the zeroed frame means never
// stored). A load checks it before touching the value: when the clean invoke's run failed for a
// request (h[5] out of range), the corrupt invoke's run of the same kernel call reports the value
// as never computed, naming the invoke, and skips the write (random-invoke-error.nns).
// CHECK: llvm.mlir.global internal constant @patch_183.msg{{[0-9]+}}("{{.*}}:{{[0-9]+}}:{{[0-9]+}}: this value of invoke 'clean' was never computed for this request (that invoke failed); its uses are skipped\00")
// CHECK-LABEL: func.func @patch_183
// CHECK: %[[STAMP:[0-9]+]] = arith.addi %[[STEP:[0-9]+]], %c1_i64{{.*}} : i64
// CHECK-NEXT: llvm.store %[[STAMP]], %{{[0-9]+}} : i64, !llvm.ptr
// CHECK: %[[WANT:[0-9]+]] = arith.addi %[[STEP]], %c1_i64{{.*}} : i64
// CHECK-NEXT: %[[SAME:[0-9]+]] = arith.cmpi eq, %{{[0-9]+}}, %[[WANT]] : i64
// CHECK-NEXT: scf.if %[[SAME]] {
module attributes {
  nns.target = #nns.target<source_hash = "00", arch = "qwen3", schema_hash = 1,
                dims = #nns.model_dims<hidden = 64, intermediate = 128, layers = 16, heads = 4, kv_heads = 2, head_dim = 16, vocab = 256>,
                modules = {}>,
  nns.traces = [#nns.trace_desc<name = "patch", invoke_names = ["clean", "corrupt"], flags = [reads_prompt, writes_prompt], frame_bytes = 264, frame_heap_slots = [], params = [], saves = [], sites = []>]} {
  nns.kernel @patch_183 trace @patch site 183 "model.layers.6.output" forward access [read, write] {
    %h = nns.site.read "model.layers.6.output" at 183 forward {nns.invoke = 0 : i64, nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32>
    %i = arith.constant dense<5> : tensor<i64>
    %r = nns.select %h[%i] dim 0 {nns.invoke = 0 : i64, nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32>, tensor<i64> -> tensor<64xf32>
    nns.frame.store %r, 0 {nns.guard = array<i64: 0, 1, 1>, nns.invoke = 0 : i64} : tensor<64xf32>
    %l = nns.frame.load 0 {nns.guard = array<i64: 0, 1, 1>, nns.invoke = 1 : i64, nns.stored_guard = array<i64: 0, 1, 1>, nns.stored_invoke = "clean"} : tensor<64xf32>
    %h2 = nns.site.read "model.layers.6.output" at 183 forward {nns.invoke = 1 : i64, nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32>
    %w = nns.select_scatter %l into %h2[%i] dim 0 {nns.invoke = 1 : i64, nns.guard = array<i64: 0, 1, 1>} : tensor<64xf32>, tensor<?x64xf32>, tensor<i64> -> tensor<?x64xf32>
    nns.site.write %w to "model.layers.6.output" at 183 forward {nns.invoke = 1 : i64, nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32> into tensor<?x64xf32>
  }
}

// -----

// A value stored at step 0 and loaded in a steps loop was computed at step 0, whatever the
// current step: the expected stamp is min(step, 0) + 1.
// CHECK-LABEL: func.func @main_121
// CHECK: arith.minsi %{{[0-9]+}}, %c0_i64{{.*}} : i64
// CHECK: arith.cmpi eq, %{{[0-9]+}}, %{{[0-9]+}} : i64
module attributes {
  nns.target = #nns.target<source_hash = "00", arch = "qwen3", schema_hash = 1,
                dims = #nns.model_dims<hidden = 64, intermediate = 128, layers = 16, heads = 4, kv_heads = 2, head_dim = 16, vocab = 256>,
                modules = {}>,
  nns.traces = [#nns.trace_desc<name = "main", invoke_names = [], flags = [writes_prompt], frame_bytes = 16, frame_heap_slots = [], params = [], saves = [], sites = []>]} {
  nns.kernel @main_121 trace @main site 121 "model.layers.3.output" forward access [write] {
    %l = nns.frame.load 0 {nns.guard = array<i64: 0, -1, 1>, nns.stored_guard = array<i64: 0, 1, 1>} : tensor<f32>
    nns.site.update add %l to "model.layers.3.output" at 121 forward {nns.guard = array<i64: 0, -1, 1>} : tensor<f32> into tensor<?x64xf32>
  }
}

// -----

// Elementwise ops broadcast a dynamic size of 1 at run time, as torch does: a T-shaped value
// kept from step 0 ([prompt length, D]) meets a one-token site value at later steps
// (random-step-broadcast.nns). The result size is the first size other than 1; a size that is
// neither 1 nor that one is an error naming the shapes; a size of 1 reads index 0.
// CHECK: llvm.mlir.global internal constant @main_121.msg{{[0-9]+}}("{{.*}}: shape mismatch: operands of shapes [?, 64] and [?, 64] do not broadcast in dimension 0 at this step (a '?' size is known at run time, e.g. the token count: the prompt length at step 0, 1 after)\00")
// CHECK-LABEL: func.func @main_121
// CHECK: %[[A:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?x?xf32
// CHECK: %[[FIRST:.*]] = arith.select %{{.*}}, %[[A]], %{{.*}} : index
// CHECK: %[[B:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?x?xf32
// CHECK: %[[SIZE:.*]] = arith.select %{{.*}}, %[[B]], %[[FIRST]] : index
// CHECK: %[[DIM:.*]] = memref.dim
// CHECK-DAG: %[[SAME:.*]] = arith.cmpi eq, %[[DIM]], %[[SIZE]] : index
// CHECK-DAG: %[[ONE:.*]] = arith.cmpi eq, %[[DIM]], %{{.*}} : index
// CHECK: arith.ori %[[ONE]], %[[SAME]] : i1
// CHECK: scf.for
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// CHECK: arith.addf
module attributes {
  nns.target = #nns.target<source_hash = "00", arch = "qwen3", schema_hash = 1,
                dims = #nns.model_dims<hidden = 64, intermediate = 128, layers = 16, heads = 4, kv_heads = 2, head_dim = 16, vocab = 256>,
                modules = {}>,
  nns.traces = [#nns.trace_desc<name = "main", invoke_names = [], flags = [reads_prompt], frame_bytes = 0, frame_heap_slots = [], params = [], saves = [#nns.save_desc<name = "y", type = tensor<?x64xf32>, flags = [per_step]>], sites = []>]} {
  nns.kernel @main_121 trace @main site 121 "model.layers.3.output" forward access [read] {
    %h = nns.site.read "model.layers.3.output" at 121 forward {nns.guard = array<i64: 0, -1, 1>} : tensor<?x64xf32>
    %m = nns.binary min %h, %h {nns.guard = array<i64: 0, -1, 1>} : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
    %y = nns.binary add %h, %m {nns.guard = array<i64: 0, -1, 1>} : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
    nns.save "y", %y {nns.guard = array<i64: 0, -1, 1>, nns.save_index = 0 : i64} : tensor<?x64xf32>
  }
}

// -----

// An `if` that rebinds names: each branch copies its value into storage made before the `if`
// (a buffer for a static shape; for a T-shaped value, a heap copy whose address and sizes go to
// a stack slot), and the name after the `if` reads it (random-if-rebind.nns).
// CHECK-LABEL: func.func @main_121
// CHECK-DAG: %[[SLOT:.*]] = memref.alloca() : memref<3xindex>
// CHECK-DAG: memref.alloca() : memref<64xf32>
// CHECK: scf.if
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: memref.store %{{.*}}, %[[SLOT]][%{{.*}}] : memref<3xindex>
// CHECK: } else {
// CHECK: memref.store %{{.*}}, %[[SLOT]][%{{.*}}] : memref<3xindex>
// CHECK: memref.load %[[SLOT]]
// CHECK: llvm.inttoptr
// CHECK: memref.dealloc
module attributes {
  nns.target = #nns.target<source_hash = "00", arch = "qwen3", schema_hash = 1,
                dims = #nns.model_dims<hidden = 64, intermediate = 128, layers = 16, heads = 4, kv_heads = 2, head_dim = 16, vocab = 256>,
                modules = {}>,
  nns.traces = [#nns.trace_desc<name = "main", invoke_names = [], flags = [reads_prompt, writes_prompt], frame_bytes = 0, frame_heap_slots = [], params = [], saves = [], sites = []>]} {
  nns.param @a : tensor<f32>
  nns.kernel @main_121 trace @main site 121 "model.layers.3.output" forward access [read, write] {
    %a = nns.get_param @a : tensor<f32>
    %half = arith.constant dense<5.000000e-01> : tensor<f32>
    %c = nns.compare gt %a, %half : tensor<f32>, tensor<f32> -> tensor<i1>
    %h = nns.site.read "model.layers.3.output" at 121 forward {nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32>
    %m1 = arith.constant dense<-1> : tensor<i64>
    %x = nns.select %h[%m1] dim 0 {nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32>, tensor<i64> -> tensor<64xf32>
    %r:2 = nns.if %c : tensor<i1> {
      %d = nns.binary mul %h, %a : tensor<?x64xf32>, tensor<f32> -> tensor<?x64xf32>
      %e = nns.binary mul %x, %a : tensor<64xf32>, tensor<f32> -> tensor<64xf32>
      nns.yield %d, %e : tensor<?x64xf32>, tensor<64xf32>
    } else {
      nns.yield %h, %x : tensor<?x64xf32>, tensor<64xf32>
    } {nns.guard = array<i64: 0, 1, 1>} -> tensor<?x64xf32>, tensor<64xf32>
    %s = nns.binary add %r#0, %r#1 {nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    nns.site.write %s to "model.layers.3.output" at 121 forward {nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32> into tensor<?x64xf32>
  }
}

// -----

// A write through a view: nns.reshape copies into a fresh buffer of the new shape in one loop
// over the flat index (multi-indices by division), checking at run time that the element
// count divides; nns.transpose is a strided view (memref.transpose), no copy.
// CHECK: llvm.mlir.global internal constant @main_130.msg{{[0-9]*}}("{{.*}}cannot reshape a value of shape [?, 64] to [?, 4, 16]: its element count is not a multiple of 64\00")
// CHECK-LABEL: func.func @main_130
// CHECK: arith.remui
// CHECK: memref.alloc
// CHECK: scf.for
// CHECK: arith.divui
// CHECK: memref.load
// CHECK: memref.store
// CHECK: memref.transpose
module attributes {
  nns.target = #nns.target<source_hash = "00", arch = "qwen3", schema_hash = 1,
                dims = #nns.model_dims<hidden = 64, intermediate = 128, layers = 16, heads = 4, kv_heads = 2, head_dim = 16, vocab = 256>,
                modules = {}>,
  nns.traces = [#nns.trace_desc<name = "main", invoke_names = [], flags = [reads_prompt, writes_prompt], frame_bytes = 0, frame_heap_slots = [], params = [], saves = [], sites = []>]} {
  nns.kernel @main_130 trace @main site 130 "model.layers.3.self_attn.o_proj.input" forward access [read, write] {
    %zero = arith.constant dense<0.000000e+00> : tensor<f32>
    %i = arith.constant dense<1> : tensor<i64>
    %h = nns.site.read "model.layers.3.self_attn.o_proj.input" at 130 forward {nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32>
    %v = nns.reshape %h {nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32> -> tensor<?x4x16xf32>
    %t = nns.transpose %v dims 0, 1 {nns.guard = array<i64: 0, 1, 1>} : tensor<?x4x16xf32> -> tensor<4x?x16xf32>
    %s = nns.select_scatter %zero into %t[%i] dim 0 {nns.guard = array<i64: 0, 1, 1>} : tensor<f32>, tensor<4x?x16xf32>, tensor<i64> -> tensor<4x?x16xf32>
    %b = nns.transpose %s dims 0, 1 {nns.guard = array<i64: 0, 1, 1>} : tensor<4x?x16xf32> -> tensor<?x4x16xf32>
    %w = nns.reshape %b {nns.guard = array<i64: 0, 1, 1>} : tensor<?x4x16xf32> -> tensor<?x64xf32>
    nns.site.write %w to "model.layers.3.self_attn.o_proj.input" at 130 forward {nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32> into tensor<?x64xf32>
  }
}

// -----

// A save the scheduling passes did not number is refused, not read as save 0.
module attributes {
  nns.target = #nns.target<source_hash = "00", arch = "llama", schema_hash = 1,
                dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
                modules = {}>,
  nns.traces = [#nns.trace_desc<name = "main", invoke_names = [], flags = [reads_prompt], frame_bytes = 0, frame_heap_slots = [], params = [], saves = [#nns.save_desc<name = "h", type = tensor<?x576xf32>, flags = []>], sites = []>]} {
  // expected-error @+1 {{failed to legalize operation 'nns.kernel'}}
  nns.kernel @main_339 trace @main site 339 "model.layers.12.output" forward access [read] {
    %h = nns.site.read "model.layers.12.output" at 339 forward {nns.guard = array<i64: 0, 1, 1>} : tensor<?x576xf32>
    // expected-error @+1 {{has no 'nns.save_index' (nns-fuse-sites numbers the trace's saves)}}
    nns.save "h", %h {nns.guard = array<i64: 0, 1, 1>} : tensor<?x576xf32>
  }
}

// -----

// What no pattern lowers is reported: here a trace the scheduling passes never fused.
module attributes {
  nns.target = #nns.target<source_hash = "00", arch = "llama", schema_hash = 1,
                dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
                modules = {}>,
  nns.traces = []} {
  // expected-error @+1 {{failed to legalize operation 'nns.trace'}}
  nns.trace @main {
    %h = nns.site.read "model.layers.12.output" at 339 forward : tensor<?x576xf32>
    nns.save "h", %h : tensor<?x576xf32>
  }
}

// -----

// A value of run-time shape is kept in the frame as a heap copy, the previous one freed. A
// failed malloc (device code's heap is 8 MiB by default) fails the request: the slot holds
// null and nothing is copied.
// CHECK: llvm.mlir.global internal constant @keep_121.msg{{[0-9]*}}("{{.*}}: out of heap memory for a value kept for a later site or step\00")
// CHECK-LABEL: func.func @keep_121
// CHECK: %[[OLD:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: memref.dealloc
// CHECK: %[[HEAP:.*]] = memref.alloc(%{{.*}}) : memref<?x64xf32>
// CHECK: %[[ADDRESS:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: %[[PTR:.*]] = llvm.inttoptr %[[ADDRESS]] : i64 to !llvm.ptr
// CHECK-NEXT: llvm.store %[[PTR]], %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK: %[[NONNULL:.*]] = arith.cmpi ne, %[[ADDRESS]], %c0_i64{{.*}} : i64
// CHECK: %[[EMPTY:.*]] = arith.cmpi eq, %{{.*}}, %c0_i64{{.*}} : i64
// CHECK-NEXT: %[[OK:.*]] = arith.ori %[[NONNULL]], %[[EMPTY]] : i1
// CHECK-NEXT: scf.if %[[OK]] {
module attributes {
  nns.target = #nns.target<source_hash = "00", arch = "qwen3", schema_hash = 1,
                dims = #nns.model_dims<hidden = 64, intermediate = 128, layers = 16, heads = 4, kv_heads = 2, head_dim = 16, vocab = 256>,
                modules = {}>,
  nns.traces = [#nns.trace_desc<name = "keep", invoke_names = [], flags = [reads_prompt], frame_bytes = 24, frame_heap_slots = [8], params = [], saves = [], sites = []>]} {
  nns.kernel @keep_121 trace @keep site 121 "model.layers.2.output" forward access [read] {
    %h = nns.site.read "model.layers.2.output" at 121 forward {nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32>
    nns.frame.store %h, 0 {nns.guard = array<i64: 0, 1, 1>} : tensor<?x64xf32>
  }
}
