// nns-lower-gpu-to-nvvm: a gpu.func kernel over a strided memref view (as --target=cuda makes
// from kernel-level IR) becomes an NVVM kernel in the LLVM dialect.
// RUN: nns-opt --nns-lower-gpu-to-nvvm %s | FileCheck %s

// CHECK-LABEL: gpu.module @nnsc_kernels
// CHECK:         llvm.func @scale(%{{.*}}: !llvm.ptr, %{{.*}}: i64) attributes {gpu.kernel, nvvm.kernel}
// CHECK:           llvm.fmul %{{.*}}, %{{.*}} : f32
// CHECK-NOT: memref.
// CHECK-NOT: scf.
// CHECK-NOT: gpu.func

!desc = !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
!view = memref<?xf32, strided<[?], offset: ?>>

module attributes {gpu.container_module} {
  gpu.module @nnsc_kernels {
    gpu.func @scale(%data: !llvm.ptr, %n: i64) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0 : i64
      %one = arith.constant 1 : i64
      %two = arith.constant 2.0 : f32
      %d0 = llvm.mlir.undef : !desc
      %d1 = llvm.insertvalue %data, %d0[0] : !desc
      %d2 = llvm.insertvalue %data, %d1[1] : !desc
      %d3 = llvm.insertvalue %zero, %d2[2] : !desc
      %d4 = llvm.insertvalue %n, %d3[3, 0] : !desc
      %d5 = llvm.insertvalue %one, %d4[4, 0] : !desc
      %view = builtin.unrealized_conversion_cast %d5 : !desc to !view
      %end = arith.index_cast %n : i64 to index
      scf.for %i = %c0 to %end step %c1 {
        %x = memref.load %view[%i] : !view
        %y = arith.mulf %x, %two : f32
        memref.store %y, %view[%i] : !view
      }
      gpu.return
    }
  }
}
