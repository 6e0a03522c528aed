// Last-token capture in kernel-level IR: at layers[3].output, each group's last row is handed
// to rt->save as save 0 ('h', one per generation step) through an nnsc_tensor built on the
// kernel's stack. A second trace exercises the rest of the manifest: invokes, frame, flags,
// scalar and bool params with and without defaults, a [T, hidden] save, several sites.
// RUN: nns-bundle-emit %s -emit=bundle -o %t.nnsb
// RUN: nns-bundle-info %t.nnsb | FileCheck %s

// CHECK:      traces: 2
// CHECK-NEXT: trace 0 'lens' invokes=0 flags=reads_prompt frame_bytes=0
// CHECK-NEXT:   save 0 'h' f32[576] per_step
// CHECK-NEXT:   site 109 'model.layers.3.output' phase=forward access=read kernel=yes
// CHECK-NEXT: trace 1 'patch' invokes=2 flags=reads_prompt,writes_prompt,stops frame_bytes=2304
// CHECK-NEXT:   invoke 0 'clean'
// CHECK-NEXT:   invoke 1 'corrupt'
// CHECK-NEXT:   param 0 'k' i64[] default=[7]
// CHECK-NEXT:   param 1 'on' bool[3] default=[true, false, true]
// CHECK-NEXT:   param 2 'scale' f32[] default=required
// CHECK-NEXT:   save 0 'all' f32[T, 576]
// CHECK-NEXT:   site 28 'model.layers.0.output' phase=forward access=read kernel=yes
// CHECK-NEXT:   site 109 'model.layers.3.output' phase=forward access=write,skip kernel=yes
// CHECK-NEXT:   site 816 'logits' phase=logits access=read kernel=yes
// CHECK-NOT: {{.}}

module attributes {nns.manifest = #nns.manifest<
  source_hash = "9e3d", arch = "llama", schema_hash = 17293822569102704642,
  dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
  traces = [#nns.trace_desc<name = "lens", invoke_names = [], flags = [reads_prompt], frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [#nns.save_desc<name = "h", type = tensor<576xf32>, flags = [per_step]>],
    sites = [#nns.site_entry<site = 109, path = "model.layers.3.output", phase = forward, access = [read], kernel = @capture_last>]>,
            #nns.trace_desc<name = "patch", invoke_names = ["clean", "corrupt"], flags = [reads_prompt, writes_prompt, stops], frame_bytes = 2304, frame_heap_slots = [],
    params = [#nns.param_desc<name = "k", type = tensor<i64>, default_value = dense<7> : tensor<i64>>,
              #nns.param_desc<name = "on", type = tensor<3xi1>, default_value = dense<[true, false, true]> : tensor<3xi1>>,
              #nns.param_desc<name = "scale", type = tensor<f32>>],
    saves = [#nns.save_desc<name = "all", type = tensor<?x576xf32>, flags = []>],
    sites = [#nns.site_entry<site = 28, path = "model.layers.0.output", phase = forward, access = [read], kernel = @capture_last>,
             #nns.site_entry<site = 109, path = "model.layers.3.output", phase = forward, access = [write, skip], kernel = @capture_last>,
             #nns.site_entry<site = 816, path = "logits", phase = logits, access = [read], kernel = @capture_last>]>]>} {
  func.func @capture_last(%value: !llvm.ptr, %groups: !llvm.ptr, %num_groups: i32, %rt: !llvm.ptr) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ok = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %zero = arith.constant 0 : i64
    %f32_size = arith.constant 4 : i64
    %save_index = arith.constant 0 : i32
    %rank = arith.constant 1 : i32
    %dtype_f32 = arith.constant 0 : i32
    // The nnsc_tensor handed to rt->save: data @0, dtype @8, rank @12, shape @16, strides @48.
    %slot = llvm.alloca %one x !llvm.array<80 x i8> {alignment = 8 : i64} : (i64) -> !llvm.ptr
    %data = llvm.load %value : !llvm.ptr -> !llvm.ptr
    %hidden_p = llvm.getelementptr inbounds %value[24] : (!llvm.ptr) -> !llvm.ptr, i8
    %hidden = llvm.load %hidden_p : !llvm.ptr -> i64
    %s0_p = llvm.getelementptr inbounds %value[48] : (!llvm.ptr) -> !llvm.ptr, i8
    %s0 = llvm.load %s0_p : !llvm.ptr -> i64
    %s1_p = llvm.getelementptr inbounds %value[56] : (!llvm.ptr) -> !llvm.ptr, i8
    %s1 = llvm.load %s1_p : !llvm.ptr -> i64
    %dtype_p = llvm.getelementptr inbounds %slot[8] : (!llvm.ptr) -> !llvm.ptr, i8
    llvm.store %dtype_f32, %dtype_p : i32, !llvm.ptr
    %rank_p = llvm.getelementptr inbounds %slot[12] : (!llvm.ptr) -> !llvm.ptr, i8
    llvm.store %rank, %rank_p : i32, !llvm.ptr
    %shape_p = llvm.getelementptr inbounds %slot[16] : (!llvm.ptr) -> !llvm.ptr, i8
    llvm.store %hidden, %shape_p : i64, !llvm.ptr
    %stride_p = llvm.getelementptr inbounds %slot[48] : (!llvm.ptr) -> !llvm.ptr, i8
    llvm.store %s1, %stride_p : i64, !llvm.ptr
    // nnsc_runtime: ctx @0, save @24.
    %ctx = llvm.load %rt : !llvm.ptr -> !llvm.ptr
    %save_p = llvm.getelementptr inbounds %rt[24] : (!llvm.ptr) -> !llvm.ptr, i8
    %save = llvm.load %save_p : !llvm.ptr -> !llvm.ptr
    %n = arith.index_cast %num_groups : i32 to index
    scf.for %g = %c0 to %n step %c1 {
      // nnsc_group (64 bytes): row @0, rows @8, step @24, request @56.
      %gi = arith.index_cast %g : index to i64
      %gsize = arith.constant 64 : i64
      %goff = arith.muli %gi, %gsize : i64
      %group = llvm.getelementptr inbounds %groups[%goff] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      %row = llvm.load %group : !llvm.ptr -> i64
      %rows_p = llvm.getelementptr inbounds %group[8] : (!llvm.ptr) -> !llvm.ptr, i8
      %rows = llvm.load %rows_p : !llvm.ptr -> i64
      %step_p = llvm.getelementptr inbounds %group[24] : (!llvm.ptr) -> !llvm.ptr, i8
      %step = llvm.load %step_p : !llvm.ptr -> i64
      %req_p = llvm.getelementptr inbounds %group[56] : (!llvm.ptr) -> !llvm.ptr, i8
      %req = llvm.load %req_p : !llvm.ptr -> !llvm.ptr
      %nonempty = arith.cmpi sgt, %rows, %zero : i64
      scf.if %nonempty {
        %end = arith.addi %row, %rows : i64
        %last = arith.subi %end, %one : i64
        %elems = arith.muli %last, %s0 : i64
        %bytes = arith.muli %elems, %f32_size : i64
        %row_data = llvm.getelementptr inbounds %data[%bytes] : (!llvm.ptr, i64) -> !llvm.ptr, i8
        llvm.store %row_data, %slot : !llvm.ptr, !llvm.ptr
        llvm.call %save(%ctx, %req, %save_index, %step, %slot) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i32, i64, !llvm.ptr) -> ()
      }
    }
    return %ok : i32
  }
}
