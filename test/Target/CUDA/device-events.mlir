// --target=cuda on a kernel that uses every runtime callback: the device copy records them as
// nnsc_cuda_event records (no indirect calls remain), report_error's text becomes an index
// into the bundle's CUDA messages, and the kernel suspends at its module call: it spills what
// crosses the call (the group loop's state, the request, the step) to scratch, sets status.resume to 1 and returns; a
// launch with status.resume = 1 clears it and continues after the call.
// REQUIRES: nvcc
// RUN: nns-bundle-emit %s -emit=bundle --target=cuda -o %t.nnsb
// RUN: nns-bundle-info %t.nnsb | FileCheck %s --check-prefix=INFO
// RUN: nns-bundle-info %t.nnsb --ptx > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_90 %t.ptx -o %t.cubin

// INFO:      cuda: chip=sm_90 kernels=1 messages=2
// INFO-NEXT:   cuda kernel 0 'events' scratch_bytes={{[1-9][0-9]*}} module_calls=1
// INFO-NEXT:   cuda message 0 'no rows'
// INFO-NEXT:   cuda message 1 'module failed'
// INFO:        site 28 'model.layers.0.output' phase=forward access=read,write kernel=yes

// PTX-NOT:   prototype
// PTX:       .visible .entry events(
// The dispatch on status.resume (offset 0 of the status, the fourth parameter).
// PTX:       ld.param.b64 [[RTP:%rd[0-9]+]], [events_param_3];
// PTX:       cvta.to.global.u64 [[RT:%rd[0-9]+]], [[RTP]];
// PTX:       ld.global.b32 [[RESUME:%r[0-9]+]], {{\[}}[[RT]]{{\]}};
// PTX-NEXT:  setp.eq.b32 {{%p[0-9]+}}, [[RESUME]], 1;
// Resumed: status.resume = 0, then the spilled values come back from scratch.
// PTX:       st.global.b32 {{\[}}[[RT]]{{\]}}, 0;
// Suspended at the call: status.resume = 1.
// PTX:       st.global.b32 {{\[}}[[RT]]{{\]}}, 1;
// PTX-NOT:   prototype

module attributes {nns.manifest = #nns.manifest<
  source_hash = "e7e7", arch = "llama", schema_hash = 17293822569102704642,
  dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
  traces = [#nns.trace_desc<name = "", invoke_names = [], flags = [reads_prompt, writes_prompt], frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [#nns.save_desc<name = "h", type = tensor<?x576xf32>, flags = []>],
    sites = [#nns.site_entry<site = 28, path = "model.layers.0.output", phase = forward, access = [read, write], kernel = @events>]>]>} {
  llvm.mlir.global internal constant @events.msg0("no rows\00") {addr_space = 0 : i32}
  llvm.mlir.global internal constant @events.msg1("module failed\00") {addr_space = 0 : i32}

  // Per group: an empty group reports an error; otherwise the site tensor goes through
  // module 5 in place, is saved, and the request stops and finishes.
  func.func @events(%value: !llvm.ptr, %groups: !llvm.ptr, %num_groups: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    %zero = arith.constant 0 : i64
    %module = arith.constant 5 : i32
    %save_index = arith.constant 0 : i32
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %gsize = arith.constant 64 : i64
    %n = arith.index_cast %num_groups : i32 to index
    // nnsc_runtime: ctx @0, call_module @8, report_error @16, save @24, stop @32, finish @40.
    %ctx = llvm.load %rt : !llvm.ptr -> !llvm.ptr
    scf.for %g = %c0 to %n step %c1 {
      %gi = arith.index_cast %g : index to i64
      %goff = arith.muli %gi, %gsize : i64
      %group = llvm.getelementptr inbounds %groups[%goff] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      // nnsc_group: rows @8, step @24, request @56.
      %rows_p = llvm.getelementptr inbounds %group[8] : (!llvm.ptr) -> !llvm.ptr, i8
      %rows = llvm.load %rows_p : !llvm.ptr -> i64
      %step_p = llvm.getelementptr inbounds %group[24] : (!llvm.ptr) -> !llvm.ptr, i8
      %step = llvm.load %step_p : !llvm.ptr -> i64
      %req_p = llvm.getelementptr inbounds %group[56] : (!llvm.ptr) -> !llvm.ptr, i8
      %req = llvm.load %req_p : !llvm.ptr -> !llvm.ptr
      %empty = arith.cmpi eq, %rows, %zero : i64
      scf.if %empty {
        %err_p = llvm.getelementptr inbounds %rt[16] : (!llvm.ptr) -> !llvm.ptr, i8
        %err = llvm.load %err_p : !llvm.ptr -> !llvm.ptr
        %msg = llvm.mlir.addressof @events.msg0 : !llvm.ptr
        llvm.call %err(%ctx, %req, %msg, %rows, %zero)
            : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> ()
      } else {
        %call_p = llvm.getelementptr inbounds %rt[8] : (!llvm.ptr) -> !llvm.ptr, i8
        %call = llvm.load %call_p : !llvm.ptr -> !llvm.ptr
        %status = llvm.call %call(%ctx, %module, %value, %value)
            : !llvm.ptr, (!llvm.ptr, i32, !llvm.ptr, !llvm.ptr) -> i32
        %failed = arith.cmpi ne, %status, %ok : i32
        scf.if %failed {
          %err_p = llvm.getelementptr inbounds %rt[16] : (!llvm.ptr) -> !llvm.ptr, i8
          %err = llvm.load %err_p : !llvm.ptr -> !llvm.ptr
          %msg = llvm.mlir.addressof @events.msg1 : !llvm.ptr
          llvm.call %err(%ctx, %req, %msg, %step, %rows)
              : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> ()
        } else {
          %save_p = llvm.getelementptr inbounds %rt[24] : (!llvm.ptr) -> !llvm.ptr, i8
          %save = llvm.load %save_p : !llvm.ptr -> !llvm.ptr
          llvm.call %save(%ctx, %req, %save_index, %step, %value)
              : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i32, i64, !llvm.ptr) -> ()
          %stop_p = llvm.getelementptr inbounds %rt[32] : (!llvm.ptr) -> !llvm.ptr, i8
          %stop = llvm.load %stop_p : !llvm.ptr -> !llvm.ptr
          llvm.call %stop(%ctx, %req) : !llvm.ptr, (!llvm.ptr, !llvm.ptr) -> ()
          %finish_p = llvm.getelementptr inbounds %rt[40] : (!llvm.ptr) -> !llvm.ptr, i8
          %finish = llvm.load %finish_p : !llvm.ptr -> !llvm.ptr
          llvm.call %finish(%ctx, %req) : !llvm.ptr, (!llvm.ptr, !llvm.ptr) -> ()
        }
      }
    }
    return %ok : i32
  }
}
