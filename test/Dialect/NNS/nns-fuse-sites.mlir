// RUN: nns-opt %s --nns-assign-sites --nns-step-guards --nns-order-invokes --nns-allocate-frame --nns-fuse-sites | FileCheck %s

// One kernel per site in firing order; values crossing sites go through the frame; constants
// and params are recomputed in each kernel that needs them; the trace's manifest facts move
// to nns.traces.
// CHECK: nns.traces = [{flags = ["reads_prompt", "writes_prompt"], frame_bytes = 2304 : i64, invokes = [], name = "main", saves = [{name = "top", per_step = true, type = tensor<i64>}]}]
// CHECK-NOT: nns.trace @
// CHECK-LABEL: nns.kernel @main_79 trace @main site 79 "model.layers.2.output" forward access ["read"]
// CHECK: %[[M1:.*]] = arith.constant
// CHECK: %[[H:.*]] = nns.site.read "model.layers.2.output"
// CHECK: %[[LAST:.*]] = nns.select %[[H]][%[[M1]]]
// CHECK: nns.frame.store %[[LAST]], 0 {{.*}}: tensor<576xf32>
// CHECK-LABEL: nns.kernel @main_157 trace @main site 157 "model.layers.5.output" forward access ["write"]
// CHECK: %[[V:.*]] = nns.frame.load 0 {{.*}}: tensor<576xf32>
// CHECK: nns.site.write %[[V]] to "model.layers.5.output"
// CHECK-LABEL: nns.kernel @main_786 trace @main site 786 "logits" logits access ["read"]
// CHECK: nns.save "top", {{.*}}nns.save_index = 0 : i64
nns.trace @main {
  %h = nns.site.read "model.layers.2.output" at 79 forward : tensor<?x576xf32>
  %m1 = arith.constant dense<-1> : tensor<i64>
  %last = nns.select %h[%m1] dim 0 : tensor<?x576xf32>, tensor<i64> -> tensor<576xf32>
  nns.site.write %last to "model.layers.5.output" at 157 forward : tensor<576xf32> into tensor<?x576xf32>
  nns.steps from 0 to 3 by 1 {
  ^bb0(%step: tensor<i64>):
    %l = nns.site.read "logits" at 786 logits : tensor<49152xf32>
    %t = nns.reduce argmax %l dim 0 : tensor<49152xf32> -> tensor<i64>
    nns.save "top", %t : tensor<i64>
  }
}
