// A kernel that suspends at a module call keeps its stack buffers in the status's scratch
// memory, whose size is fixed at compile time: a stack buffer of run-time size is refused.
// RUN: nns-bundle-emit %s -emit=llvm --target=cuda -verify-diagnostics -o /dev/null

module attributes {nns.manifest = #nns.manifest<
  source_hash = "00", arch = "llama", schema_hash = 1,
  dims = #nns.model_dims<hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3, head_dim = 64, vocab = 49152>,
  traces = [#nns.trace_desc<name = "", invoke_names = [], flags = [], frame_bytes = 0, frame_heap_slots = [],
    params = [],
    saves = [],
    sites = [#nns.site_entry<site = 28, path = "model.layers.0.output", phase = forward, access = [read], kernel = @dynamic_stack>]>]>} {
  func.func @dynamic_stack(%value: !llvm.ptr, %groups: !llvm.ptr, %num_groups: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    %module = arith.constant 3 : i32
    %n = arith.index_cast %num_groups : i32 to index
    // expected-error @+1 {{kernel 'dynamic_stack' has a stack buffer of run-time size across a module call, which --target=cuda cannot keep between launches}}
    %buffer = memref.alloca(%n) : memref<?xf32>
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %buffer[%c0] : memref<?xf32>
    %ctx = llvm.load %rt : !llvm.ptr -> !llvm.ptr
    %call_p = llvm.getelementptr inbounds %rt[8] : (!llvm.ptr) -> !llvm.ptr, i8
    %call = llvm.load %call_p : !llvm.ptr -> !llvm.ptr
    %status = llvm.call %call(%ctx, %module, %value, %value)
        : !llvm.ptr, (!llvm.ptr, i32, !llvm.ptr, !llvm.ptr) -> i32
    return %status : i32
  }
}
