// RUN: nns-opt %s | nns-opt | FileCheck %s
// RUN: nns-opt %s --mlir-print-op-generic | nns-opt | FileCheck %s

// CHECK-LABEL: nns.trace @capture
// CHECK: %[[H:.*]] = nns.site.read "model.layers.8.output" : tensor<?x576xf32>
// CHECK: nns.save "h", %[[H]] : tensor<?x576xf32>
nns.trace @capture {
  %h = nns.site.read "model.layers.8.output" : tensor<?x576xf32>
  nns.save "h", %h : tensor<?x576xf32>
}

// CHECK-LABEL: nns.trace @special_sites
// CHECK: nns.site.read "logits" : tensor<49152xf32>
// CHECK: nns.site.read "samples" : tensor<i64>
// CHECK: nns.site.read "model.layers.0.mlp.input" : tensor<?x576xf32>
nns.trace @special_sites {
  %l = nns.site.read "logits" : tensor<49152xf32>
  %s = nns.site.read "samples" : tensor<i64>
  %x = nns.site.read "model.layers.0.mlp.input" : tensor<?x576xf32>
}
