// The steering kernel for --target=cuda: the same kernel-level IR becomes a gpu.func in a
// gpu.module, goes through nvvm-attach-target (sm_90), convert-gpu-to-nvvm and
// gpu-module-to-binary (format=isa) and travels in the bundle as PTX; the host kernel stays.
// RUN: nns-bundle-emit %s -emit=bundle --target=cuda -o %t.nnsb
// RUN: nns-bundle-info %t.nnsb | FileCheck %s --check-prefix=INFO
// RUN: nns-bundle-info %t.nnsb --ptx | FileCheck %s --check-prefix=PTX

// INFO: ptx: {{[0-9]+}} bytes
// INFO: site 28 'model.layers.0.output' phase=forward access=read,write kernel=yes

// PTX: .target sm_90
// PTX: .address_size 64
// PTX: .visible .entry steer(
// PTX: ld.global.b32
// PTX: add.rn.f32
// PTX: st.{{(global.)?}}b32

!desc2 = !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
!desc1 = !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
!rows = memref<?x?xf32, strided<[?, ?], offset: ?>>
!vec = memref<?xf32, strided<[?], offset: ?>>

module attributes {nns.manifest = #nns.manifest<
  source_hash = "5f1c0ffee0ddba11", arch = "llama", schema_hash = 17293822569102704642,
  dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
  traces = [#nns.trace_desc<name = "", invoke_names = [], flags = [writes_prompt], frame_bytes = 0, frame_heap_slots = [],
    params = [#nns.param_desc<name = "vec", type = tensor<576xf32>, default_value = dense<0.5> : tensor<576xf32>>],
    saves = [],
    sites = [#nns.site_entry<site = 28, path = "model.layers.0.output", phase = forward, access = [read, write], kernel = @steer>]>]>} {
  func.func @steer(%value: !llvm.ptr, %groups: !llvm.ptr, %num_groups: i32, %rt: !llvm.ptr) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0 : i64
    %ok = arith.constant 0 : i32
    %n = arith.index_cast %num_groups : i32 to index
    // nnsc_tensor: data @0, shape @16, strides @48.
    %data = llvm.load %value : !llvm.ptr -> !llvm.ptr
    %hidden_p = llvm.getelementptr inbounds %value[24] : (!llvm.ptr) -> !llvm.ptr, i8
    %hidden = llvm.load %hidden_p : !llvm.ptr -> i64
    %s0_p = llvm.getelementptr inbounds %value[48] : (!llvm.ptr) -> !llvm.ptr, i8
    %s0 = llvm.load %s0_p : !llvm.ptr -> i64
    %s1_p = llvm.getelementptr inbounds %value[56] : (!llvm.ptr) -> !llvm.ptr, i8
    %s1 = llvm.load %s1_p : !llvm.ptr -> i64
    scf.for %g = %c0 to %n step %c1 {
      // nnsc_group (64 bytes): row @0, rows @8, params @48, request @56.
      %gi = arith.index_cast %g : index to i64
      %gsize = arith.constant 64 : i64
      %goff = arith.muli %gi, %gsize : i64
      %group = llvm.getelementptr inbounds %groups[%goff] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      %row = llvm.load %group : !llvm.ptr -> i64
      %rows_p = llvm.getelementptr inbounds %group[8] : (!llvm.ptr) -> !llvm.ptr, i8
      %rows = llvm.load %rows_p : !llvm.ptr -> i64
      %params_p = llvm.getelementptr inbounds %group[48] : (!llvm.ptr) -> !llvm.ptr, i8
      %param = llvm.load %params_p : !llvm.ptr -> !llvm.ptr
      %vdata = llvm.load %param : !llvm.ptr -> !llvm.ptr
      %vsize_p = llvm.getelementptr inbounds %param[16] : (!llvm.ptr) -> !llvm.ptr, i8
      %vsize = llvm.load %vsize_p : !llvm.ptr -> i64
      %vstride_p = llvm.getelementptr inbounds %param[48] : (!llvm.ptr) -> !llvm.ptr, i8
      %vstride = llvm.load %vstride_p : !llvm.ptr -> i64
      %cols = arith.minsi %vsize, %hidden : i64
      %off = arith.muli %row, %s0 : i64
      %r0 = llvm.mlir.undef : !desc2
      %r1 = llvm.insertvalue %data, %r0[0] : !desc2
      %r2 = llvm.insertvalue %data, %r1[1] : !desc2
      %r3 = llvm.insertvalue %off, %r2[2] : !desc2
      %r4 = llvm.insertvalue %rows, %r3[3, 0] : !desc2
      %r5 = llvm.insertvalue %hidden, %r4[3, 1] : !desc2
      %r6 = llvm.insertvalue %s0, %r5[4, 0] : !desc2
      %r7 = llvm.insertvalue %s1, %r6[4, 1] : !desc2
      %view = builtin.unrealized_conversion_cast %r7 : !desc2 to !rows
      %v0 = llvm.mlir.undef : !desc1
      %v1 = llvm.insertvalue %vdata, %v0[0] : !desc1
      %v2 = llvm.insertvalue %vdata, %v1[1] : !desc1
      %v3 = llvm.insertvalue %zero, %v2[2] : !desc1
      %v4 = llvm.insertvalue %vsize, %v3[3, 0] : !desc1
      %v5 = llvm.insertvalue %vstride, %v4[4, 0] : !desc1
      %vec = builtin.unrealized_conversion_cast %v5 : !desc1 to !vec
      %nrows = arith.index_cast %rows : i64 to index
      %ncols = arith.index_cast %cols : i64 to index
      scf.for %i = %c0 to %nrows step %c1 {
        scf.for %j = %c0 to %ncols step %c1 {
          %x = memref.load %view[%i, %j] : !rows
          %v = memref.load %vec[%j] : !vec
          %y = arith.addf %x, %v : f32
          memref.store %y, %view[%i, %j] : !rows
        }
      }
    }
    return %ok : i32
  }
}
