// RUN: nns-opt %s | nns-opt | FileCheck %s
// RUN: nns-opt %s --mlir-print-op-generic | nns-opt | FileCheck %s
// Every nns op, printed and parsed back in both the custom and the generic form.

// CHECK: nns.param @alpha : tensor<f32> = dense<4.000000e+00> : tensor<f32>
// CHECK: nns.param @steer : tensor<576xf32>
// CHECK: nns.param @tok : tensor<i64>
// CHECK-LABEL: nns.trace @all
// CHECK: %{{[0-9]+}} = nns.get_param @alpha : tensor<f32>
// CHECK: %{{[0-9]+}} = nns.get_param @steer : tensor<576xf32>
// CHECK: %{{[a-z0-9_]+}} = arith.constant dense<-1> : tensor<i64>
// CHECK: %{{[0-9]+}} = nns.site.read "model.layers.8.output" at 245 forward : tensor<?x576xf32>
// CHECK: %{{[0-9]+}} = nns.select %{{[0-9]+}}[%{{[a-z0-9_]+}}] dim 0 : tensor<?x576xf32>, tensor<i64> -> tensor<576xf32>
// CHECK: %{{[0-9]+}} = nns.slice %{{[0-9]+}} dim 1 from 100 to 200 by 1 : tensor<?x576xf32> -> tensor<?x100xf32>
// CHECK: %{{[0-9]+}} = nns.slice %{{[0-9]+}} dim 0 from -3 by 1 : tensor<?x576xf32> -> tensor<?x576xf32>
// CHECK: %{{[0-9]+}} = nns.binary mul %{{[0-9]+}}, %{{[0-9]+}} : tensor<f32>, tensor<576xf32> -> tensor<576xf32>
// CHECK: %{{[0-9]+}} = nns.binary add %{{[0-9]+}}, %{{[0-9]+}} : tensor<?x576xf32>, tensor<576xf32> -> tensor<?x576xf32>
// CHECK: %{{[0-9]+}} = nns.matmul %{{[0-9]+}}, %{{[0-9]+}} : tensor<?x576xf32>, tensor<576xf32> -> tensor<?xf32>
// CHECK: %{{[0-9]+}} = nns.compare gt %{{[0-9]+}}, %{{[0-9]+}} : tensor<?xf32>, tensor<f32> -> tensor<?xi1>
// CHECK: %{{[0-9]+}} = nns.unary not %{{[0-9]+}} : tensor<?xi1>
// CHECK: %{{[0-9]+}} = nns.reduce sum %{{[0-9]+}} dim 1 : tensor<?x576xf32> -> tensor<?xf32>
// CHECK: %{{[0-9]+}} = nns.reduce argmax %{{[0-9]+}} dim 0 : tensor<576xf32> -> tensor<i64>
// CHECK: %{{[0-9]+}} = nns.softmax %{{[0-9]+}} dim 0 log : tensor<576xf32>
// CHECK: %{{[0-9]+}} = nns.where %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} : tensor<?xi1>, tensor<?xf32>, tensor<f32> -> tensor<?xf32>
// CHECK: %{{[0-9]+}} = nns.topk %{{[0-9]+}} k 5 : tensor<576xf32> -> tensor<5xf32>
// CHECK: %{{[0-9]+}} = nns.cast %{{[0-9]+}} : tensor<i64> to tensor<f32>
// CHECK: %{{[0-9]+}} = nns.broadcast %{{[0-9]+}} like %{{[0-9]+}} : tensor<f32>, tensor<?x576xf32> -> tensor<?x576xf32>
// CHECK: %{{[0-9]+}} = nns.select_scatter %{{[0-9]+}} into %{{[0-9]+}}[%{{[a-z0-9_]+}}] dim 0 : tensor<576xf32>, tensor<?x576xf32>, tensor<i64> -> tensor<?x576xf32>
// CHECK: %{{[0-9]+}} = nns.slice_scatter %{{[0-9]+}} into %{{[0-9]+}} dim 1 from 0 to 8 by 1 : tensor<f32>, tensor<?x576xf32> -> tensor<?x576xf32>
// CHECK: %{{[0-9]+}} = nns.call_module "model.norm"(%{{[0-9]+}}) : (tensor<576xf32>) -> tensor<576xf32>
// CHECK: %{{[0-9]+}} = nns.reshape %{{[0-9]+}} : tensor<?x576xf32> -> tensor<?x9x64xf32>
// CHECK: %{{[0-9]+}} = nns.reshape %{{[0-9]+}} : tensor<?x576xf32> -> tensor<?xf32>
// CHECK: %{{[0-9]+}} = nns.reshape %{{[0-9]+}} : tensor<576xf32> -> tensor<1x576x1xf32>
// CHECK: %{{[0-9]+}} = nns.transpose %{{[0-9]+}} dims 0, 1 : tensor<?x576xf32> -> tensor<576x?xf32>
// CHECK: nns.site.write %{{[0-9]+}} to "model.layers.8.output" at 245 forward : tensor<?x576xf32> into tensor<?x576xf32>
// CHECK: nns.site.update add %{{[0-9]+}} to "model.layers.12.output" at 377 forward : tensor<576xf32> into tensor<?x576xf32>
// CHECK: nns.skip "model.layers.13" at 378 to 408, %{{[0-9]+}} : tensor<?x576xf32> into tensor<?x576xf32>
// CHECK: nns.cache "model.layers.20.output" at 625 forward : tensor<?x576xf32>
// CHECK: nns.save "h", %{{[0-9]+}} : tensor<576xf32>
// CHECK: %{{[a-z0-9_]+}} = arith.constant dense<true> : tensor<i1>
// CHECK: %{{[0-9]+}} = nns.if %{{[a-z0-9_]+}} : tensor<i1> {
// CHECK: nns.yield %{{[0-9]+}} : tensor<f32>
// CHECK: nns.yield %{{[0-9]+}} : tensor<f32>
// CHECK: nns.if %{{[a-z0-9_]+}} : tensor<i1> {
// CHECK: nns.finish
// CHECK: nns.steps from 0 to 5 by 1 {
// CHECK: ^bb0(%{{[a-z0-9_]+}}: tensor<i64>):
// CHECK: %{{[0-9]+}} = nns.site.read "logits" at 934 logits : tensor<49152xf32>
// CHECK: nns.save "step", %{{[a-z0-9_]+}} : tensor<i64>
// CHECK: nns.steps from 1 by 2 {
// CHECK: ^bb0(%{{[a-z0-9_]+}}: tensor<i64>):
// CHECK: nns.stop
// CHECK-LABEL: nns.trace @patch
// CHECK: %{{[0-9]+}} = nns.invoke "clean" index 0 {
// CHECK: %{{[0-9]+}} = nns.site.read "model.layers.6.output" at 190 forward : tensor<?x576xf32>
// CHECK: nns.yield %{{[0-9]+}} : tensor<?x576xf32>
// CHECK: nns.invoke "corrupt" index 1 {
// CHECK: nns.site.write %{{[0-9]+}} to "model.layers.6.output" at 190 forward : tensor<?x576xf32> into tensor<?x576xf32>

nns.param @alpha : tensor<f32> = dense<4.000000e+00> : tensor<f32>
nns.param @steer : tensor<576xf32>
nns.param @tok : tensor<i64>

nns.trace @all {
  %a = nns.get_param @alpha : tensor<f32>
  %s = nns.get_param @steer : tensor<576xf32>
  %m1 = arith.constant dense<-1> : tensor<i64>
  %h = nns.site.read "model.layers.8.output" at 245 forward : tensor<?x576xf32>
  %last = nns.select %h[%m1] dim 0 : tensor<?x576xf32>, tensor<i64> -> tensor<576xf32>
  %sl = nns.slice %h dim 1 from 100 to 200 by 1 : tensor<?x576xf32> -> tensor<?x100xf32>
  %tail = nns.slice %h dim 0 from -3 by 1 : tensor<?x576xf32> -> tensor<?x576xf32>
  %as = nns.binary mul %a, %s : tensor<f32>, tensor<576xf32> -> tensor<576xf32>
  %sum = nns.binary add %h, %as : tensor<?x576xf32>, tensor<576xf32> -> tensor<?x576xf32>
  %sc = nns.matmul %h, %s : tensor<?x576xf32>, tensor<576xf32> -> tensor<?xf32>
  %c = nns.compare gt %sc, %a : tensor<?xf32>, tensor<f32> -> tensor<?xi1>
  %n = nns.unary not %c : tensor<?xi1>
  %r = nns.reduce sum %h dim 1 : tensor<?x576xf32> -> tensor<?xf32>
  %am = nns.reduce argmax %last dim 0 : tensor<576xf32> -> tensor<i64>
  %sm = nns.softmax %last dim 0 log : tensor<576xf32>
  %w = nns.where %c, %sc, %a : tensor<?xi1>, tensor<?xf32>, tensor<f32> -> tensor<?xf32>
  %t = nns.topk %last k 5 : tensor<576xf32> -> tensor<5xf32>
  %f = nns.cast %am : tensor<i64> to tensor<f32>
  %z = nns.broadcast %a like %h : tensor<f32>, tensor<?x576xf32> -> tensor<?x576xf32>
  %ss = nns.select_scatter %last into %h[%m1] dim 0 : tensor<576xf32>, tensor<?x576xf32>, tensor<i64> -> tensor<?x576xf32>
  %ls = nns.slice_scatter %a into %h dim 1 from 0 to 8 by 1 : tensor<f32>, tensor<?x576xf32> -> tensor<?x576xf32>
  %cm = nns.call_module "model.norm"(%last) : (tensor<576xf32>) -> tensor<576xf32>
  %rs = nns.reshape %h : tensor<?x576xf32> -> tensor<?x9x64xf32>
  %fl = nns.reshape %h : tensor<?x576xf32> -> tensor<?xf32>
  %us = nns.reshape %last : tensor<576xf32> -> tensor<1x576x1xf32>
  %tr = nns.transpose %h dims 0, 1 : tensor<?x576xf32> -> tensor<576x?xf32>
  nns.site.write %ss to "model.layers.8.output" at 245 forward : tensor<?x576xf32> into tensor<?x576xf32>
  nns.site.update add %as to "model.layers.12.output" at 377 forward : tensor<576xf32> into tensor<?x576xf32>
  nns.skip "model.layers.13" at 378 to 408, %sum : tensor<?x576xf32> into tensor<?x576xf32>
  nns.cache "model.layers.20.output" at 625 forward : tensor<?x576xf32>
  nns.save "h", %last : tensor<576xf32>
  %cs = arith.constant dense<true> : tensor<i1>
  %y = nns.if %cs : tensor<i1> {
    nns.yield %a : tensor<f32>
  } else {
    nns.yield %f : tensor<f32>
  } -> tensor<f32>
  nns.if %cs : tensor<i1> {
    nns.finish
  }
  nns.steps from 0 to 5 by 1 {
  ^bb0(%step: tensor<i64>):
    %l = nns.site.read "logits" at 934 logits : tensor<49152xf32>
    nns.save "step", %step : tensor<i64>
  }
  nns.steps from 1 by 2 {
  ^bb0(%step: tensor<i64>):
    nns.stop
  }
}

nns.trace @patch {
  %h = nns.invoke "clean" index 0 {
    %x = nns.site.read "model.layers.6.output" at 190 forward : tensor<?x576xf32>
    nns.yield %x : tensor<?x576xf32>
  } : tensor<?x576xf32>
  nns.invoke "corrupt" index 1 {
    nns.site.write %h to "model.layers.6.output" at 190 forward : tensor<?x576xf32> into tensor<?x576xf32>
  }
}
