// nns-lower-to-llvm: kernel-level IR (func/scf/arith/memref/llvm) becomes LLVM dialect only.
// The memref views built from the nnsc_tensor fields fold into address arithmetic: no memref,
// scf, arith or unrealized casts remain, and the kernel keeps the ABI's C signature.
// RUN: nns-opt --nns-lower-to-llvm %nnsc_src_root/test/Target/Bundle/steer.mlir | FileCheck %s
// RUN: nns-bundle-emit %nnsc_src_root/test/Target/Bundle/steer.mlir -emit=llvm-dialect | FileCheck %s

// CHECK-LABEL: llvm.func @steer(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i32, %{{.*}}: !llvm.ptr) -> i32
// CHECK:         %[[DATA:.*]] = llvm.load %arg0 : !llvm.ptr -> !llvm.ptr
// CHECK:         llvm.getelementptr %[[DATA]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK:         llvm.call %{{.*}}(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> ()
// CHECK:         llvm.return %{{.*}} : i32
// CHECK-NOT: memref.
// CHECK-NOT: scf.
// CHECK-NOT: arith.
// CHECK-NOT: unrealized_conversion_cast
