// RUN: nns-opt %s --split-input-file --nns-assign-sites --nns-step-guards --nns-order-invokes --nns-allocate-frame --nns-fuse-sites | FileCheck %s

// One kernel per site in firing order; values crossing sites go through the frame; constants
// and params are recomputed in each kernel that needs them; the trace's manifest facts move
// to nns.traces.
// CHECK: nns.traces = [#nns.trace_desc<name = "main", invoke_names = [], flags = [reads_prompt, writes_prompt], frame_bytes = 2312, frame_heap_slots = [], params = [], saves = [#nns.save_desc<name = "top", type = tensor<i64>, flags = [per_step]>], sites = []>]
// CHECK-NOT: nns.trace @
// CHECK-LABEL: nns.kernel @main_79 trace @main site 79 "model.layers.2.output" forward access [read]
// CHECK: %[[M1:.*]] = arith.constant
// CHECK: %[[H:.*]] = nns.site.read "model.layers.2.output"
// CHECK: %[[LAST:.*]] = nns.select %[[H]][%[[M1]]]
// CHECK: nns.frame.store %[[LAST]], 0 {{.*}}: tensor<576xf32>
// CHECK-LABEL: nns.kernel @main_157 trace @main site 157 "model.layers.5.output" forward access [write]
// CHECK: %[[V:.*]] = nns.frame.load 0 {{.*}}: tensor<576xf32>
// CHECK: nns.site.write %[[V]] to "model.layers.5.output"
// CHECK-LABEL: nns.kernel @main_786 trace @main site 786 "logits" logits access [read]
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

// -----

// Each use of a frame value gets a load of its own run: the save after the loop does not use
// the loop's load (another group loop, another guard).
// CHECK-LABEL: nns.kernel @main_211
// CHECK: %[[X:.*]] = nns.select
// CHECK: nns.frame.store %[[X]], 0 {nns.guard = array<i64: 0, 1, 1>}
// CHECK: %[[L:.*]] = nns.frame.load 0 {nns.guard = array<i64: 0, -1, 1>, nns.stored_guard = array<i64: 0, 1, 1>}
// CHECK: nns.binary add %[[L]]
// CHECK: %[[AFTER:.*]] = nns.frame.load 0 {nns.guard = array<i64: 0, 1, 1>, nns.stored_guard = array<i64: 0, 1, 1>}
// CHECK: nns.save "x", %[[AFTER]]
nns.trace @main {
  %h = nns.site.read "model.layers.6.output" at 211 forward : tensor<?x576xf32>
  %m1 = arith.constant dense<-1> : tensor<i64>
  %x = nns.select %h[%m1] dim 0 : tensor<?x576xf32>, tensor<i64> -> tensor<576xf32>
  nns.steps from 0 by 1 {
  ^bb0(%step: tensor<i64>):
    %one = arith.constant dense<1.0> : tensor<f32>
    %y = nns.binary add %x, %one : tensor<576xf32>, tensor<f32> -> tensor<576xf32>
    nns.save "y", %y : tensor<576xf32>
  }
  nns.save "x", %x : tensor<576xf32>
}

// -----

// A steps loop between a value and its use at the same site and guard splits the kernel into
// runs (one group loop each): the use reads the value back from the frame.
// CHECK-LABEL: nns.kernel @main_152
// CHECK: %[[H:.*]] = nns.site.read "model.layers.5.input"
// CHECK: nns.frame.store %[[H]], 0 {nns.guard = array<i64: 0, 1, 1>}
// CHECK: nns.save "s"
// CHECK: %[[L:.*]] = nns.frame.load 0 {nns.guard = array<i64: 0, 1, 1>, nns.stored_guard = array<i64: 0, 1, 1>}
// CHECK: nns.binary min %[[L]], %[[L]]
nns.trace @main {
  %h = nns.site.read "model.layers.5.input" at 152 forward : tensor<?x576xf32>
  nns.steps from 0 to 3 by 1 {
  ^bb0(%step: tensor<i64>):
    nns.save "s", %step : tensor<i64>
  }
  %m = nns.binary min %h, %h : tensor<?x576xf32>, tensor<?x576xf32> -> tensor<?x576xf32>
  nns.site.write %m to "model.layers.12.mlp.output" at 390 forward : tensor<?x576xf32> into tensor<?x576xf32>
}

// -----

// Two loops using one earlier value each load it under their own guard.
// CHECK-LABEL: nns.kernel @main_91
// CHECK: %[[A:.*]] = nns.frame.load 0 {nns.guard = array<i64: 2, -1, 2>, nns.stored_guard = array<i64: 0, 1, 1>}
// CHECK: nns.binary sub %[[A]]
// CHECK: %[[B:.*]] = nns.frame.load 0 {nns.guard = array<i64: 1, -1, 1>, nns.stored_guard = array<i64: 0, 1, 1>}
// CHECK: nns.unary abs %[[B]]
nns.param @v : tensor<576xf32>
nns.trace @main {
  %h = nns.site.read "model.layers.2.output" at 91 forward : tensor<?x576xf32>
  %x = nns.reduce mean %h dim 0 : tensor<?x576xf32> -> tensor<576xf32>
  nns.steps from 2 by 2 {
  ^bb0(%step: tensor<i64>):
    %v = nns.get_param @v : tensor<576xf32>
    %d = nns.binary sub %x, %v : tensor<576xf32>, tensor<576xf32> -> tensor<576xf32>
    nns.save "d", %d : tensor<576xf32>
  }
  nns.steps from 1 by 1 {
  ^bb0(%step: tensor<i64>):
    %a = nns.unary abs %x : tensor<576xf32>
    nns.save "a", %a : tensor<576xf32>
  }
}

// -----

// A cache records the value the model continues with: it goes after the writes of its site.
// CHECK-LABEL: nns.kernel @main_105
// CHECK: nns.site.update add
// CHECK-NEXT: nns.cache "model.layers.3.output"
nns.param @v : tensor<576xf32>
nns.trace @main {
  nns.cache "model.layers.3.output" at 105 forward : tensor<?x576xf32>
  %v = nns.get_param @v : tensor<576xf32>
  nns.site.update add %v to "model.layers.3.output" at 105 forward : tensor<576xf32> into tensor<?x576xf32>
}

// -----

// Ops after a run-time `if` stay after it, not in its branch: the site touched again and a
// cache (random-after-if.nns, random-cache-after-if.nns); a later site's kernel has no `if`.
// CHECK-LABEL: nns.kernel @main_105
// CHECK: nns.if %{{.*}} : tensor<i1> {
// CHECK-NEXT: nns.site.update add
// CHECK-NEXT: nns.save "s"
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: nns.site.update add
// CHECK-NEXT: nns.cache "model.layers.3.output"
// CHECK-NEXT: {{^ *}}}
// CHECK-LABEL: nns.kernel @main_133
// CHECK-NOT: nns.if
// CHECK: nns.site.update add
// CHECK-NEXT: {{^ *}}}
nns.param @v : tensor<576xf32>
nns.param @a : tensor<f32>
nns.trace @main {
  %a = nns.get_param @a : tensor<f32>
  %half = arith.constant dense<5.000000e-01> : tensor<f32>
  %c = nns.compare gt %a, %half : tensor<f32>, tensor<f32> -> tensor<i1>
  nns.if %c : tensor<i1> {
    %v = nns.get_param @v : tensor<576xf32>
    nns.site.update add %v to "model.layers.3.output" at 105 forward : tensor<576xf32> into tensor<?x576xf32>
    nns.save "s", %v : tensor<576xf32>
  }
  %v = nns.get_param @v : tensor<576xf32>
  nns.site.update add %v to "model.layers.3.output" at 105 forward : tensor<576xf32> into tensor<?x576xf32>
  nns.cache "model.layers.3.output" at 105 forward : tensor<?x576xf32>
  nns.site.update add %v to "model.layers.4.output" at 133 forward : tensor<576xf32> into tensor<?x576xf32>
}

// -----

// A branch that touches no site runs at the trace's first site, before the ops that follow
// it there (random-if-params-only.nns).
// CHECK-LABEL: nns.kernel @main_133
// CHECK: nns.if %{{.*}} : tensor<i1> {
// CHECK-NEXT: nns.save "s"
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: nns.site.update add
// CHECK-NEXT: {{^ *}}}
nns.param @v : tensor<576xf32>
nns.param @a : tensor<f32>
nns.trace @main {
  %a = nns.get_param @a : tensor<f32>
  %half = arith.constant dense<5.000000e-01> : tensor<f32>
  %c = nns.compare gt %a, %half : tensor<f32>, tensor<f32> -> tensor<i1>
  nns.if %c : tensor<i1> {
    %v = nns.get_param @v : tensor<576xf32>
    nns.save "s", %v : tensor<576xf32>
  }
  %v = nns.get_param @v : tensor<576xf32>
  nns.site.update add %v to "model.layers.4.output" at 133 forward : tensor<576xf32> into tensor<?x576xf32>
}

// -----

// A load of another invoke's value names that invoke, for the error when it was never computed
// (its invoke failed earlier in the same kernel call).
// CHECK-LABEL: nns.kernel @patch_183
// CHECK: %[[R:.*]] = nns.select {{.*}}nns.invoke = 0 : i64
// CHECK: nns.frame.store %[[R]], 0 {nns.guard = array<i64: 0, 1, 1>, nns.invoke = 0 : i64}
// CHECK: %[[L:.*]] = nns.frame.load 0 {nns.guard = array<i64: 0, 1, 1>, nns.invoke = 1 : i64, nns.stored_guard = array<i64: 0, 1, 1>, nns.stored_invoke = "clean"}
// CHECK: nns.select_scatter %[[L]] into
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

// A save in a loop over step 0 alone has the guard of the statements outside loops but is
// still saved per step (`s.0`), unlike the save outside the loop
// (random-xfail-step0-loop-save.nns).
// CHECK: saves = [#nns.save_desc<name = "s", type = tensor<576xf32>, flags = [per_step]>, #nns.save_desc<name = "t", type = tensor<576xf32>, flags = []>]
nns.trace @main {
  %h = nns.site.read "model.layers.1.output" at 53 forward : tensor<?x576xf32>
  %m1 = arith.constant dense<-1> : tensor<i64>
  %x = nns.select %h[%m1] dim 0 : tensor<?x576xf32>, tensor<i64> -> tensor<576xf32>
  nns.steps from 0 to 1 by 1 {
  ^bb0(%step: tensor<i64>):
    nns.save "s", %x : tensor<576xf32>
  }
  nns.save "t", %x : tensor<576xf32>
}
