// Device code reaches the runtime only through the recorded callbacks of nnsc_runtime: any
// other call (a host function, a pointer that is not a runtime callback) is refused with the
// kernel's name.
// RUN: nns-bundle-emit %s -emit=llvm --target=cuda -split-input-file -verify-diagnostics -o /dev/null

module attributes {nns.manifest = #nns.manifest<
  source_hash = "00", arch = "llama", schema_hash = 1,
  dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
  traces = [#nns.trace_desc<name = "", invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [],
    sites = [#nns.site_entry<site = 28, path = "model.layers.0.output", phase = forward, access = [read], kernel = @host_call>]>]>} {
  llvm.func @host_helper(!llvm.ptr)
  func.func @host_call(%value: !llvm.ptr, %groups: !llvm.ptr, %num_groups: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    // expected-error @+1 {{kernel 'host_call' makes a call that is not a runtime callback, which --target=cuda cannot compile: device code cannot reach host functions}}
    llvm.call @host_helper(%value) : (!llvm.ptr) -> ()
    return %ok : i32
  }
}

// -----

module attributes {nns.manifest = #nns.manifest<
  source_hash = "00", arch = "llama", schema_hash = 1,
  dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
  traces = [#nns.trace_desc<name = "", invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [],
    sites = [#nns.site_entry<site = 28, path = "model.layers.0.output", phase = forward, access = [read], kernel = @group_pointer>]>]>} {
  func.func @group_pointer(%value: !llvm.ptr, %groups: !llvm.ptr, %num_groups: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    // A pointer from the group's frame, not from nnsc_runtime.
    %frame_p = llvm.getelementptr inbounds %groups[40] : (!llvm.ptr) -> !llvm.ptr, i8
    %fn = llvm.load %frame_p : !llvm.ptr -> !llvm.ptr
    // expected-error @+1 {{kernel 'group_pointer' makes a call that is not a runtime callback}}
    llvm.call %fn(%value) : !llvm.ptr, (!llvm.ptr) -> ()
    return %ok : i32
  }
}
