// RUN: nns-opt %s --nns-assign-sites --split-input-file --verify-diagnostics | FileCheck %s

// Every op gets the latest site among its operands; site ops keep their own; constants and
// params (-1) depend on none; stop goes to the trace's last site event.
// CHECK-LABEL: nns.trace @main
nns.param @dir : tensor<576xf32>
nns.trace @main {
  // CHECK: nns.site.read "model.layers.2.output" at 79 forward {nns.at = 79 : i64}
  %h = nns.site.read "model.layers.2.output" at 79 forward : tensor<?x576xf32>
  // CHECK: nns.get_param @dir {nns.at = -1 : i64}
  %d = nns.get_param @dir : tensor<576xf32>
  // CHECK: nns.matmul {{.*}} {nns.at = 79 : i64}
  %s = nns.matmul %h, %d : tensor<?x576xf32>, tensor<576xf32> -> tensor<?xf32>
  // CHECK: nns.save "s", {{.*}} {nns.at = 79 : i64}
  nns.save "s", %s : tensor<?xf32>
  // CHECK: nns.site.read "model.layers.5.output" at 157 forward {nns.at = 157 : i64}
  %g = nns.site.read "model.layers.5.output" at 157 forward : tensor<?x576xf32>
  // CHECK: nns.stop {nns.at = 157 : i64}
  nns.stop
}

// -----

// A stop in an invoke goes to that invoke's last site event, not the trace's: it ends that
// invoke's prompt only, while later invokes still need later sites; one outside the invokes
// goes to the trace's last site event.
// CHECK-LABEL: nns.trace @steer
nns.trace @steer {
  %h = nns.invoke "source" index 0 {
    %x = nns.site.read "model.layers.2.output" at 79 forward : tensor<?x576xf32>
    // CHECK: nns.stop {nns.at = 79 : i64}
    nns.stop
    nns.yield %x : tensor<?x576xf32>
  } : tensor<?x576xf32>
  nns.invoke "target" index 1 {
    nns.site.write %h to "model.layers.2.output" at 79 forward : tensor<?x576xf32> into tensor<?x576xf32>
    %g = nns.site.read "model.layers.5.output" at 157 forward : tensor<?x576xf32>
    nns.save "g", %g : tensor<?x576xf32>
  }
  // CHECK: nns.stop {nns.at = 157 : i64}
  nns.stop
}

// -----

// A write that needs a value from a later site is rejected.
nns.trace @main {
  // expected-note @+1 {{the value is computed here}}
  %h = nns.site.read "model.layers.5.output" at 157 forward : tensor<?x576xf32>
  // expected-error @+1 {{uses a value that exists only at site event 157, after this site (79) has fired}}
  nns.site.write %h to "model.layers.2.output" at 79 forward : tensor<?x576xf32> into tensor<?x576xf32>
}

// -----

// Work in a run-time `if` branch runs once the condition exists: a save of a site-free value
// goes to the condition's site, not the trace's first; pure site-free values stay at -1.
// CHECK-LABEL: nns.trace @main
nns.param @v : tensor<576xf32>
nns.trace @main {
  %h = nns.site.read "model.layers.2.output" at 79 forward : tensor<?x576xf32>
  nns.cache "model.layers.2.output" at 79 forward : tensor<?x576xf32>
  %g = nns.site.read "model.layers.5.output" at 157 forward : tensor<?x576xf32>
  %s = nns.reduce sum %g dim 0 : tensor<?x576xf32> -> tensor<576xf32>
  %t = nns.reduce sum %s dim 0 : tensor<576xf32> -> tensor<f32>
  %z = arith.constant dense<0.000000e+00> : tensor<f32>
  %c = nns.compare gt %t, %z : tensor<f32>, tensor<f32> -> tensor<i1>
  // CHECK: nns.if
  nns.if %c : tensor<i1> {
    // CHECK: nns.get_param @v {nns.at = -1 : i64}
    %v = nns.get_param @v : tensor<576xf32>
    // CHECK: nns.save "s", {{.*}} {nns.at = 157 : i64}
    nns.save "s", %v : tensor<576xf32>
  // CHECK: } {nns.at = 157 : i64}
  }
}
