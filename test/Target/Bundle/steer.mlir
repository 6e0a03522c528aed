// Steering in kernel-level IR: `layers[0].output[:] += vec` with a defaulted param. The site
// tensor's rows of each group and the param are viewed as strided memrefs built from the
// nnsc_tensor fields (docs/Compiler.md lists the byte offsets); a param of the wrong size is
// reported for that request through rt->report_error and its rows are left alone.
// RUN: nns-bundle-emit %s -emit=bundle -o %t.nnsb
// RUN: nns-bundle-info %t.nnsb | FileCheck %s

// CHECK:      abi_version: 5
// CHECK-NEXT: source_hash: 5f1c0ffee0ddba11
// CHECK-NEXT: arch: llama
// CHECK-NEXT: schema_hash: 17293822569102704642
// CHECK-NEXT: dims: hidden=576 intermediate=1536 layers=30 heads=9 kv_heads=3 head_dim=64 vocab=49152
// CHECK-NEXT: ptx: none
// CHECK-NEXT: traces: 1
// CHECK-NEXT: trace 0 '' invokes=0 flags=writes_prompt frame_bytes=0
// CHECK-NEXT:   param 0 'vec' f32[576] default=[0.5, 0.5, 0.5, 0.5, ...]
// CHECK-NEXT:   site 28 'model.layers.0.output' phase=forward access=read,write kernel=yes
// CHECK-NOT: {{.}}

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
  llvm.mlir.global internal constant @steer_bad_param("steer: param 'vec' does not match the hidden size\00")

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
      %fits = arith.cmpi eq, %vsize, %hidden : i64
      scf.if %fits {
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
        %ncols = arith.index_cast %hidden : i64 to index
        scf.for %i = %c0 to %nrows step %c1 {
          scf.for %j = %c0 to %ncols step %c1 {
            %x = memref.load %view[%i, %j] : !rows
            %v = memref.load %vec[%j] : !vec
            %y = arith.addf %x, %v : f32
            memref.store %y, %view[%i, %j] : !rows
          }
        }
      } else {
        // rt->report_error(rt->ctx, group->request, message, 0, 0): no numbers in the message
        %ctx = llvm.load %rt : !llvm.ptr -> !llvm.ptr
        %fn_p = llvm.getelementptr inbounds %rt[16] : (!llvm.ptr) -> !llvm.ptr, i8
        %fn = llvm.load %fn_p : !llvm.ptr -> !llvm.ptr
        %req_p = llvm.getelementptr inbounds %group[56] : (!llvm.ptr) -> !llvm.ptr, i8
        %req = llvm.load %req_p : !llvm.ptr -> !llvm.ptr
        %msg = llvm.mlir.addressof @steer_bad_param : !llvm.ptr
        %none = llvm.mlir.constant(0 : i64) : i64
        llvm.call %fn(%ctx, %req, %msg, %none, %none)
            : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> ()
      }
    }
    return %ok : i32
  }
}
