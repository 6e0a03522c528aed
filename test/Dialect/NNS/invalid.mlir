// RUN: nns-opt %s -split-input-file -verify-diagnostics

nns.trace @bad_accessor {
  // expected-error @+1 {{'nns.site.read' op site 'model.layers.8.outptu' has accessor 'outptu'; expected 'output', 'input' or 'pattern'}}
  %h = nns.site.read "model.layers.8.outptu" at 245 forward : tensor<?x576xf32>
}

// -----

nns.trace @pattern_of_mlp {
  // expected-error @+1 {{'nns.site.read' op site 'model.layers.8.mlp.pattern': only self-attention modules have a 'pattern'}}
  %p = nns.site.read "model.layers.8.mlp.pattern" at 245 forward : tensor<9x?x?xf32>
}

// -----

nns.trace @not_a_path {
  // expected-error @+1 {{'nns.site.read' op site 'embed' is not a dotted module path ending in an accessor}}
  %h = nns.site.read "embed" at 1 forward : tensor<?x576xf32>
}

// -----

nns.trace @empty_component {
  // expected-error @+1 {{'nns.site.read' op site 'model..output' is not a dotted module path ending in an accessor}}
  %h = nns.site.read "model..output" at 1 forward : tensor<?x576xf32>
}

// -----

nns.trace @wrong_phase {
  // expected-error @+1 {{site 'logits' fires in phase 'logits', not 'forward'}}
  %l = nns.site.read "logits" at 934 forward : tensor<49152xf32>
}

// -----

nns.trace @module_site_phase {
  // expected-error @+1 {{module site 'model.norm.output' fires in phase 'forward'}}
  %l = nns.site.read "model.norm.output" at 930 logits : tensor<?x576xf32>
}

// -----

nns.trace @negative_order {
  // expected-error @+1 {{site order must be non-negative}}
  %l = nns.site.read "model.norm.output" at -1 forward : tensor<?x576xf32>
}

// -----

nns.trace @empty_save_name {
  %h = nns.site.read "lm_head.output" at 932 forward : tensor<?x49152xf32>
  // expected-error @+1 {{'nns.save' op save name must not be empty}}
  nns.save "", %h : tensor<?x49152xf32>
}

// -----

nns.trace @write_result {
  %c = arith.constant dense<0> : tensor<i64>
  // expected-error @+1 {{site 'result' is read-only}}
  nns.site.write %c to "result" at 936 result : tensor<i64> into tensor<?xi64>
}

// -----

nns.trace @write_shape {
  %v = arith.constant dense<0.0> : tensor<4x576xf32>
  // expected-error @+1 {{value of type 'tensor<4x576xf32>' does not broadcast to 'tensor<?x576xf32>'}}
  nns.site.write %v to "model.layers.3.output" at 100 forward : tensor<4x576xf32> into tensor<?x576xf32>
}

// -----

nns.trace @update_element_type {
  %v = arith.constant dense<0> : tensor<i64>
  // expected-error @+1 {{value has element type 'i64' but the destination has 'f32'}}
  nns.site.update add %v to "model.layers.3.output" at 100 forward : tensor<i64> into tensor<?x576xf32>
}

// -----

nns.trace @skip_order {
  %v = nns.site.read "model.layers.6.output" at 190 forward : tensor<?x576xf32>
  // expected-error @+1 {{input site order 250 must precede the output site order 220}}
  nns.skip "model.layers.7" at 250 to 220, %v : tensor<?x576xf32> into tensor<?x576xf32>
}

// -----

nns.param @p : tensor<?xf32>
// expected-error @-1 {{param type 'tensor<?xf32>' must have a static shape}}

// -----

// expected-error @+1 {{default value of type 'tensor<f32>' does not match the param type 'tensor<576xf32>'}}
nns.param @p : tensor<576xf32> = dense<1.0> : tensor<f32>

// -----

nns.param @p : tensor<576xf32>
nns.trace @bad_param_type {
  // expected-error @+1 {{type 'tensor<f32>' does not match param 'p' of type 'tensor<576xf32>'}}
  %p = nns.get_param @p : tensor<f32>
}

// -----

nns.trace @unknown_param {
  // expected-error @+1 {{'q' does not name an 'nns.param'}}
  %p = nns.get_param @q : tensor<f32>
}

// -----

nns.trace @invoke_index {
  // expected-error @+1 {{index 1 does not match its position 0 among the trace's invokes}}
  nns.invoke "a" index 1 {
  }
}

// -----

nns.trace @invoke_yield {
  %c = arith.constant dense<0.0> : tensor<f32>
  // expected-error @+1 {{yields 0 values whose types do not match its results}}
  %r = nns.invoke "a" index 0 {
    nns.yield
  } : tensor<f32>
}

// -----

nns.trace @steps_range {
  // expected-error @+1 {{stop step 2 must be greater than the start step 5}}
  nns.steps from 5 to 2 by 1 {
  ^bb0(%step: tensor<i64>):
  }
}

// -----

nns.trace @steps_stride {
  // expected-error @+1 {{stride must be positive}}
  nns.steps from 0 by 0 {
  ^bb0(%step: tensor<i64>):
  }
}

// -----

nns.trace @steps_arg {
  // expected-error @+1 {{body must take the step index as one tensor<i64> argument}}
  nns.steps from 0 by 1 {
  }
}

// -----

nns.trace @if_results {
  %c = arith.constant dense<true> : tensor<i1>
  %a = arith.constant dense<1.0> : tensor<f32>
  // expected-error @+1 {{with results needs an else region}}
  %r = nns.if %c : tensor<i1> {
    nns.yield %a : tensor<f32>
  } -> tensor<f32>
}

// -----

nns.trace @binary_types {
  %a = arith.constant dense<1.0> : tensor<f32>
  %b = arith.constant dense<1> : tensor<i64>
  // expected-error @+1 {{operands must have the same element type}}
  %r = nns.binary add %a, %b : tensor<f32>, tensor<i64> -> tensor<f32>
}

// -----

nns.trace @binary_logical {
  %a = arith.constant dense<1.0> : tensor<f32>
  // expected-error @+1 {{'and' needs i1 operands}}
  %r = nns.binary and %a, %a : tensor<f32>, tensor<f32> -> tensor<f32>
}

// -----

nns.trace @binary_shape {
  %a = arith.constant dense<1.0> : tensor<4xf32>
  %b = arith.constant dense<1.0> : tensor<5xf32>
  // expected-error @+1 {{operand shapes do not broadcast}}
  %r = nns.binary add %a, %b : tensor<4xf32>, tensor<5xf32> -> tensor<4xf32>
}

// -----

nns.trace @binary_result {
  %a = arith.constant dense<1.0> : tensor<4xf32>
  // expected-error @+1 {{result type 'tensor<5xf32>' does not have the broadcast shape}}
  %r = nns.binary add %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<5xf32>
}

// -----

nns.trace @compare_result {
  %a = arith.constant dense<1.0> : tensor<4xf32>
  // expected-error @+1 {{result must have element type i1}}
  %r = nns.compare lt %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
}

// -----

nns.trace @unary_float {
  %a = arith.constant dense<1> : tensor<4xi64>
  // expected-error @+1 {{'exp' needs an f32 operand}}
  %r = nns.unary exp %a : tensor<4xi64>
}

// -----

nns.trace @reduce_dim {
  %a = arith.constant dense<1.0> : tensor<4xf32>
  // expected-error @+1 {{dimension 1 is out of range for rank 1}}
  %r = nns.reduce sum %a dim 1 : tensor<4xf32> -> tensor<f32>
}

// -----

nns.trace @reduce_arg_type {
  %a = arith.constant dense<1.0> : tensor<4xf32>
  // expected-error @+1 {{result type must be 'tensor<i64>'}}
  %r = nns.reduce argmax %a dim 0 : tensor<4xf32> -> tensor<f32>
}

// -----

nns.trace @matmul_contract {
  %a = arith.constant dense<1.0> : tensor<3x4xf32>
  %b = arith.constant dense<1.0> : tensor<5xf32>
  // expected-error @+1 {{contracted dimensions differ: 4 and 5}}
  %r = nns.matmul %a, %b : tensor<3x4xf32>, tensor<5xf32> -> tensor<3xf32>
}

// -----

nns.trace @topk_k {
  %a = arith.constant dense<1.0> : tensor<4xf32>
  // expected-error @+1 {{k = 5 exceeds the last dimension 4}}
  %r = nns.topk %a k 5 : tensor<4xf32> -> tensor<5xf32>
}

// -----

nns.trace @select_range {
  %a = arith.constant dense<1.0> : tensor<4xf32>
  %i = arith.constant dense<4> : tensor<i64>
  // expected-error @+1 {{index 4 is out of range for dimension 0 of size 4}}
  %r = nns.select %a[%i] dim 0 : tensor<4xf32>, tensor<i64> -> tensor<f32>
}

// -----

nns.trace @slice_type {
  %a = arith.constant dense<1.0> : tensor<10xf32>
  // expected-error @+1 {{result type must be 'tensor<3xf32>'}}
  %r = nns.slice %a dim 0 from -3 by 1 : tensor<10xf32> -> tensor<10xf32>
}

// -----

nns.trace @scatter_value {
  %a = arith.constant dense<1.0> : tensor<4x8xf32>
  %v = arith.constant dense<1.0> : tensor<4xf32>
  %i = arith.constant dense<0> : tensor<i64>
  // expected-error @+1 {{value of type 'tensor<4xf32>' does not broadcast to 'tensor<8xf32>'}}
  %r = nns.select_scatter %v into %a[%i] dim 0 : tensor<4xf32>, tensor<4x8xf32>, tensor<i64> -> tensor<4x8xf32>
}

// -----

nns.trace @cast_shape {
  %a = arith.constant dense<1> : tensor<4xi64>
  // expected-error @+1 {{must keep the shape}}
  %r = nns.cast %a : tensor<4xi64> to tensor<f32>
}

// -----

nns.trace @broadcast_like {
  %a = arith.constant dense<1.0> : tensor<3xf32>
  %b = arith.constant dense<1.0> : tensor<4x5xf32>
  // expected-error @+1 {{input of type 'tensor<3xf32>' does not broadcast to 'tensor<4x5xf32>'}}
  %r = nns.broadcast %a like %b : tensor<3xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
}

// -----

nns.trace @yield_parent {
  // expected-error @+1 {{'nns.yield' op expects parent op to be one of 'nns.invoke, nns.if, nns.steps'}}
  nns.yield
}

// -----

nns.trace @reshape_count {
  %a = arith.constant dense<1.0> : tensor<6xf32>
  // expected-error @+1 {{'nns.reshape' op cannot reshape 'tensor<6xf32>' (6 elements) to 'tensor<4xf32>' (4 elements)}}
  %r = nns.reshape %a : tensor<6xf32> -> tensor<4xf32>
}

// -----

nns.trace @reshape_element_type {
  %a = arith.constant dense<1.0> : tensor<6xf32>
  // expected-error @+1 {{'nns.reshape' op must keep the element type}}
  %r = nns.reshape %a : tensor<6xf32> -> tensor<6xi64>
}

// -----

nns.trace @reshape_needs_dynamic {
  %h = nns.site.read "model.layers.8.output" at 245 forward : tensor<?x576xf32>
  // expected-error @+1 {{'nns.reshape' op result 'tensor<9x64xf32>' needs a dynamic size to hold 'tensor<?x576xf32>'}}
  %r = nns.reshape %h : tensor<?x576xf32> -> tensor<9x64xf32>
}

// -----

nns.trace @reshape_static_to_dynamic {
  %a = arith.constant dense<1.0> : tensor<6xf32>
  // expected-error @+1 {{'nns.reshape' op cannot reshape 'tensor<6xf32>' to 'tensor<?x4xf32>'}}
  %r = nns.reshape %a : tensor<6xf32> -> tensor<?x4xf32>
}

// -----

nns.trace @reshape_dynamic_correspondence {
  %h = nns.site.read "model.layers.8.output" at 245 forward : tensor<?x576xf32>
  %t = nns.transpose %h dims 0, 1 : tensor<?x576xf32> -> tensor<576x?xf32>
  %o = nns.matmul %h, %t : tensor<?x576xf32>, tensor<576x?xf32> -> tensor<?x?xf32>
  // expected-error @+1 {{'nns.reshape' op with several dynamic sizes the dynamic sizes must correspond and the static sizes have equal products; got 'tensor<?x?xf32>' to 'tensor<?x2x?xf32>'}}
  %r = nns.reshape %o : tensor<?x?xf32> -> tensor<?x2x?xf32>
}

// -----

nns.trace @transpose_dim {
  %a = arith.constant dense<1.0> : tensor<2x3xf32>
  // expected-error @+1 {{'nns.transpose' op dimension 2 is out of range for rank 2}}
  %r = nns.transpose %a dims 0, 2 : tensor<2x3xf32> -> tensor<3x2xf32>
}

// -----

nns.trace @transpose_type {
  %a = arith.constant dense<1.0> : tensor<2x3xf32>
  // expected-error @+1 {{'nns.transpose' op result type must be 'tensor<3x2xf32>'}}
  %r = nns.transpose %a dims 0, 1 : tensor<2x3xf32> -> tensor<2x3xf32>
}

// -----

// The attributes the passes exchange are declared (NNSDialect.td) and checked for their type.
nns.trace @undeclared_attribute {
  // expected-error @+1 {{unknown attribute 'nns.gaurd' (the nns dialect declares its attributes in NNSDialect.td)}}
  %a = arith.constant {nns.gaurd = array<i64: 0, 1, 1>} dense<1.0> : tensor<f32>
}

// -----

nns.trace @attribute_of_another_type {
  // expected-error @+1 {{attribute 'nns.at' must be mlir::IntegerAttr, got "model.layers.1.output"}}
  %a = arith.constant {nns.at = "model.layers.1.output"} dense<1.0> : tensor<f32>
}

// -----

// expected-error @+1 {{attribute 'nns.traces' must be mlir::ArrayAttr, got {name = "main"}}}
module attributes {nns.traces = {name = "main"}} {
}

// -----

// expected-error @+1 {{attribute 'nns.traces' must list #nns.trace_desc, got {name = "main"}}}
module attributes {nns.traces = [{name = "main"}]} {
}

// -----

// expected-error @+1 {{attribute 'nns.manifest' must be nnsc::nns::ManifestAttr, got {traces = []}}}
module attributes {nns.manifest = {traces = []}} {
}

// -----

// expected-error @+1 {{site index -1 of 'model.layers.2.output' is negative}}
nns.kernel @negative_site trace @main site -1 "model.layers.2.output" forward access [read] {
  %s = nns.step : tensor<i64>
}

// -----

// expected-error @+1 {{site 79 ('model.layers.2.output') must read, write or skip}}
nns.kernel @no_access trace @main site 79 "model.layers.2.output" forward access [] {
  %s = nns.step : tensor<i64>
}

// -----

// expected-error @+1 {{site 79 access lists 'write' twice}}
nns.kernel @twice trace @main site 79 "model.layers.2.output" forward access [write, read, write] {
  %s = nns.step : tensor<i64>
}

// -----

// expected-error @+1 {{unknown access 'peek' (expected read, write or skip)}}
nns.kernel @unknown trace @main site 79 "model.layers.2.output" forward access [read, peek] {
  %s = nns.step : tensor<i64>
}
