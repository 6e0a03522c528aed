// Device code cannot call the runtime's host callbacks: --target=cuda refuses such a kernel
// at the call, with the kernel's name.
// RUN: nns-bundle-emit %s -emit=llvm --target=cuda -verify-diagnostics -o /dev/null

module attributes {nnsc.manifest = {
  source_hash = "00", arch = "llama", schema_hash = 1 : ui64,
  dims = {hidden = 576, intermediate = 1536, layers = 30, heads = 9, kv_heads = 3,
          head_dim = 64, vocab = 49152},
  traces = [{
    name = "", num_invokes = 0, invoke_names = [], flags = [], frame_bytes = 0,
    params = [], saves = [],
    sites = [{site = 27, path = "model.layers.0.output", phase = "forward", access = ["read"],
              kernel = @finish_all}]
  }]
}} {
  func.func @finish_all(%value: !llvm.ptr, %groups: !llvm.ptr, %num_groups: i32, %rt: !llvm.ptr) -> i32 {
    %ok = arith.constant 0 : i32
    %ctx = llvm.load %rt : !llvm.ptr -> !llvm.ptr
    %fn_p = llvm.getelementptr inbounds %rt[40] : (!llvm.ptr) -> !llvm.ptr, i8
    %fn = llvm.load %fn_p : !llvm.ptr -> !llvm.ptr
    %req_p = llvm.getelementptr inbounds %groups[56] : (!llvm.ptr) -> !llvm.ptr, i8
    %req = llvm.load %req_p : !llvm.ptr -> !llvm.ptr
    // expected-error @+1 {{kernel 'finish_all' makes a call, which --target=cuda cannot compile: device code cannot reach runtime callbacks or host functions}}
    llvm.call %fn(%ctx, %req) : !llvm.ptr, (!llvm.ptr, !llvm.ptr) -> ()
    return %ok : i32
  }
}
