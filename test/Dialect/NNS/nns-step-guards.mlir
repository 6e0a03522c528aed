// RUN: nns-opt %s --nns-assign-sites --nns-step-guards | FileCheck %s

// Loops become guards on their ops; the loop variable becomes nns.step; ops outside loops
// run at the prefill step only.
// CHECK-LABEL: nns.trace @main
// CHECK-NOT: nns.steps
// CHECK: nns.site.read "model.layers.1.output" {{.*}}nns.guard = array<i64: 0, 1, 1>
// CHECK: %[[STEP:.*]] = nns.step {{.*}}nns.guard = array<i64: 2, 10, 4>
// CHECK: nns.save "s", %[[STEP]] {{.*}}nns.guard = array<i64: 2, 10, 4>
// CHECK: nns.site.read "logits" {{.*}}nns.guard = array<i64: 0, -1, 1>
nns.trace @main {
  %h = nns.site.read "model.layers.1.output" at 53 forward : tensor<?x576xf32>
  nns.steps from 2 to 10 by 4 {
  ^bb0(%step: tensor<i64>):
    %l = nns.site.read "logits" at 786 logits : tensor<49152xf32>
    nns.save "s", %step : tensor<i64>
  }
  nns.steps from 0 by 1 {
  ^bb0(%step: tensor<i64>):
    %l = nns.site.read "logits" at 786 logits : tensor<49152xf32>
  }
}
