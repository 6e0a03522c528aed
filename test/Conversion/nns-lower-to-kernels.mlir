// RUN: nns-opt %s --nns-lower-to-kernels --split-input-file --verify-diagnostics | FileCheck %s

// A steering kernel: one func.func of the ABI signature with a loop over the groups, a step
// guard, the site's rows and the param as strided memrefs, a param check that reports an error
// for the request, and the update as scf loops; the manifest is built from nns.traces,
// nns.param and nns.target.
// CHECK: nnsc.manifest = {arch = "llama"
// CHECK-SAME: params = [{dtype = "f32", name = "steer", shape = array<i64: 576>}]
// CHECK-SAME: sites = [{access = ["read", "write"], kernel = @main_339, path = "model.layers.12.output", phase = "forward", site = 339 : i64}]
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
// CHECK-NOT: nns.
module attributes {
  nns.target = {arch = "llama", dims = {head_dim = 64 : i64, heads = 9 : i64, hidden = 576 : i64,
                intermediate = 1536 : i64, kv_heads = 3 : i64, layers = 30 : i64, vocab = 49152 : i64},
                modules = {}, schema_hash = 1 : ui64, source_hash = "00"},
  nns.traces = [{flags = ["reads_prompt", "writes_prompt"], frame_bytes = 0 : i64, invokes = [],
                 name = "main", saves = []}]} {
  nns.param @steer : tensor<576xf32>
  nns.kernel @main_339 trace @main site 339 "model.layers.12.output" forward access ["read", "write"] {
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
  nns.target = {arch = "qwen3", dims = {head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64,
                intermediate = 128 : i64, kv_heads = 2 : i64, layers = 16 : i64, vocab = 256 : i64},
                modules = {}, schema_hash = 1 : ui64, source_hash = "00"},
  nns.traces = [{flags = ["reads_prompt", "writes_prompt"], frame_bytes = 0 : i64, invokes = [],
                 name = "main", saves = []}]} {
  nns.param @v : tensor<64xf32>
  nns.param @a : tensor<f32>
  nns.kernel @main_121 trace @main site 121 "model.layers.3.output" forward access ["read", "write"] {
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
