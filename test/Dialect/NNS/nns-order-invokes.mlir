// RUN: nns-opt %s --nns-assign-sites --nns-step-guards --nns-order-invokes --split-input-file --verify-diagnostics | FileCheck %s

// Invoke bodies are inlined with their index; the result is replaced by the yielded value.
// CHECK-LABEL: nns.trace @patch
// CHECK-SAME: nns.invokes = ["clean", "corrupt"]
// CHECK-NOT: nns.invoke "
// CHECK: %[[H:.*]] = nns.select {{.*}}nns.invoke = 0 : i64
// CHECK: nns.select_scatter %[[H]] into {{.*}}nns.invoke = 1 : i64
nns.trace @patch {
  %0 = nns.invoke "clean" index 0 {
    %h = nns.site.read "model.layers.6.output" at 183 forward : tensor<?x576xf32>
    %i = arith.constant dense<5> : tensor<i64>
    %r = nns.select %h[%i] dim 0 : tensor<?x576xf32>, tensor<i64> -> tensor<576xf32>
    nns.yield %r : tensor<576xf32>
  } : tensor<576xf32>
  nns.invoke "corrupt" index 1 {
    %h = nns.site.read "model.layers.6.output" at 183 forward : tensor<?x576xf32>
    %i = arith.constant dense<5> : tensor<i64>
    %w = nns.select_scatter %0 into %h[%i] dim 0 : tensor<576xf32>, tensor<?x576xf32>, tensor<i64> -> tensor<?x576xf32>
    nns.site.write %w to "model.layers.6.output" at 183 forward : tensor<?x576xf32> into tensor<?x576xf32>
    nns.yield
  }
}

// -----

// A later invoke cannot use, at layer 2, what an earlier one computes at layer 6 of the same
// forward pass.
nns.trace @late {
  %0 = nns.invoke "clean" index 0 {
    // expected-note @+1 {{the value is computed here}}
    %h = nns.site.read "model.layers.6.output" at 183 forward : tensor<?x576xf32>
    nns.yield %h : tensor<?x576xf32>
  } : tensor<?x576xf32>
  nns.invoke "corrupt" index 1 {
    // expected-error @+1 {{uses a value that exists only at site event 183, after this site (79) has fired}}
    nns.site.write %0 to "model.layers.2.output" at 79 forward : tensor<?x576xf32> into tensor<?x576xf32>
    nns.yield
  }
}
