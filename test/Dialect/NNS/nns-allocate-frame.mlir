// RUN: nns-opt %s --split-input-file --nns-assign-sites --nns-step-guards --nns-order-invokes --nns-allocate-frame | FileCheck %s

// Values used at a later site or another step guard get 8-byte aligned slots: the step the
// value was stored at (8 bytes), then the value; T-shaped values take a pointer and a row count
// (16 bytes), and the trace lists where those pointers are (nns.frame_heap: the runtime frees
// the heap copies at request end); values used where they are made take none.
// CHECK-LABEL: nns.trace @main
// CHECK-SAME: nns.frame_bytes = 2352 : i64, nns.frame_heap = array<i64: 8>
// CHECK: nns.site.read "model.layers.1.output" {{.*}}nns.frame = array<i64: 0>
// CHECK: %[[LAST:.*]] = nns.select {{.*}}nns.frame = array<i64: 24>
// CHECK: %[[SUM:.*]] = nns.reduce sum {{.*}}nns.frame = array<i64: 2336>
// CHECK-NOT: nns.frame =
nns.trace @main {
  %h = nns.site.read "model.layers.1.output" at 53 forward : tensor<?x576xf32>
  %m1 = arith.constant dense<-1> : tensor<i64>
  %last = nns.select %h[%m1] dim 0 : tensor<?x576xf32>, tensor<i64> -> tensor<576xf32>
  %sum = nns.reduce sum %last dim 0 : tensor<576xf32> -> tensor<f32>
  nns.site.write %h to "model.layers.3.output" at 105 forward : tensor<?x576xf32> into tensor<?x576xf32>
  nns.steps from 1 by 1 {
  ^bb0(%step: tensor<i64>):
    nns.site.update add %last to "model.layers.1.output" at 53 forward : tensor<576xf32> into tensor<?x576xf32>
    nns.save "s", %sum : tensor<f32>
  }
}

// -----

// A use at the same site and guard after an op of another guard is in another run of the
// site's kernel (another group loop): the value gets a slot too.
// CHECK-LABEL: nns.trace @main
// CHECK-SAME: nns.frame_bytes = 24 : i64, nns.frame_heap = array<i64: 8>
// CHECK: nns.site.read "model.layers.5.input" {{.*}}nns.frame = array<i64: 0>
// CHECK-NOT: nns.frame =
nns.trace @main {
  %h = nns.site.read "model.layers.5.input" at 152 forward : tensor<?x576xf32>
  nns.steps from 0 to 3 by 1 {
  ^bb0(%step: tensor<i64>):
    nns.save "s", %step : tensor<i64>
  }
  %m = nns.binary min %h, %h : tensor<?x576xf32>, tensor<?x576xf32> -> tensor<?x576xf32>
  nns.save "m", %m : tensor<?x576xf32>
}

// -----

// Without an op of another guard in between, the same use needs no slot.
// CHECK-LABEL: nns.trace @main
// CHECK-SAME: nns.frame_bytes = 0 : i64, nns.frame_heap = array<i64>
// CHECK-NOT: nns.frame =
nns.trace @main {
  %h = nns.site.read "model.layers.5.input" at 152 forward : tensor<?x576xf32>
  %m = nns.binary min %h, %h : tensor<?x576xf32>, tensor<?x576xf32> -> tensor<?x576xf32>
  nns.save "m", %m : tensor<?x576xf32>
  nns.steps from 0 to 3 by 1 {
  ^bb0(%step: tensor<i64>):
    nns.save "s", %step : tensor<i64>
  }
}
