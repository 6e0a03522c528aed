//===- DeviceRuntime.cpp - device functions behind the ABI callbacks ------===//
//
// The functions a device kernel calls instead of the nnsc_runtime callbacks. They append
// nnsc_cuda_event records to the nnsc_cuda_status the kernel receives, copying save values and
// module inputs into the status's sink, for the host to replay after the launch. Written in
// upstream dialects so that they lower with the kernels; every offset comes from ABILayout.h.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Target/CUDA/DeviceRuntime.h"

#include "nnsc/Target/Bundle/ABILayout.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace nnsc::cuda {
namespace {

/// Placeholders: {0}-{4} nnsc_tensor dtype, rank, shape, strides, size; {5}-{10}
/// nnsc_cuda_event index, request, step, value, output, size; {11}-{19} nnsc_cuda_status
/// num_events, event_capacity, events, sink, sink_bytes, sink_used, module_output,
/// module_status, resume; {20}-{25} the event kinds error, save, stop, finish, call_module,
/// skip; {26} nnsc_cuda_event error_args.
constexpr const char *kSource = R"mlir(
// Bytes per element of an nnsc_dtype: f32 4, bf16 2, f16 2, i64 8, bool 1.
func.func private @nnsc_cuda_dtype_size(%dtype: i32) -> i64 {{
  %c0 = arith.constant 0 : i32
  %c3 = arith.constant 3 : i32
  %c4 = arith.constant 4 : i32
  %b1 = arith.constant 1 : i64
  %b2 = arith.constant 2 : i64
  %b4 = arith.constant 4 : i64
  %b8 = arith.constant 8 : i64
  %is_f32 = arith.cmpi eq, %dtype, %c0 : i32
  %is_i64 = arith.cmpi eq, %dtype, %c3 : i32
  %is_bool = arith.cmpi eq, %dtype, %c4 : i32
  %s0 = arith.select %is_bool, %b1, %b2 : i64
  %s1 = arith.select %is_i64, %b8, %s0 : i64
  %s2 = arith.select %is_f32, %b4, %s1 : i64
  return %s2 : i64
}

// Size of dimension %d of an nnsc_tensor; 1 at and beyond its rank.
func.func private @nnsc_cuda_dim(%t: !llvm.ptr, %d: i64, %field: i64) -> i64 {{
  %one = arith.constant 1 : i64
  %rank_p = llvm.getelementptr inbounds %t[{1}] : (!llvm.ptr) -> !llvm.ptr, i8
  %rank32 = llvm.load %rank_p : !llvm.ptr -> i32
  %rank = arith.extsi %rank32 : i32 to i64
  %eight = arith.constant 8 : i64
  %off0 = arith.muli %d, %eight : i64
  %off = arith.addi %off0, %field : i64
  %p = llvm.getelementptr inbounds %t[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i8
  %v = llvm.load %p : !llvm.ptr -> i64
  %in = arith.cmpi slt, %d, %rank : i64
  %r = arith.select %in, %v, %one : i64
  return %r : i64
}

// Copies the elements of the strided tensor %t to the contiguous buffer %buf (%pack) or back.
func.func private @nnsc_cuda_copy(%t: !llvm.ptr, %buf: !llvm.ptr, %pack: i1) {{
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %shape = arith.constant {2} : i64
  %strides = arith.constant {3} : i64
  %d1 = arith.constant 1 : i64
  %d2 = arith.constant 2 : i64
  %d3 = arith.constant 3 : i64
  %dtype_p = llvm.getelementptr inbounds %t[{0}] : (!llvm.ptr) -> !llvm.ptr, i8
  %dtype = llvm.load %dtype_p : !llvm.ptr -> i32
  %es = func.call @nnsc_cuda_dtype_size(%dtype) : (i32) -> i64
  %data = llvm.load %t : !llvm.ptr -> !llvm.ptr
  %n0 = func.call @nnsc_cuda_dim(%t, %z, %shape) : (!llvm.ptr, i64, i64) -> i64
  %n1 = func.call @nnsc_cuda_dim(%t, %d1, %shape) : (!llvm.ptr, i64, i64) -> i64
  %n2 = func.call @nnsc_cuda_dim(%t, %d2, %shape) : (!llvm.ptr, i64, i64) -> i64
  %n3 = func.call @nnsc_cuda_dim(%t, %d3, %shape) : (!llvm.ptr, i64, i64) -> i64
  %s0 = func.call @nnsc_cuda_dim(%t, %z, %strides) : (!llvm.ptr, i64, i64) -> i64
  %s1 = func.call @nnsc_cuda_dim(%t, %d1, %strides) : (!llvm.ptr, i64, i64) -> i64
  %s2 = func.call @nnsc_cuda_dim(%t, %d2, %strides) : (!llvm.ptr, i64, i64) -> i64
  %s3 = func.call @nnsc_cuda_dim(%t, %d3, %strides) : (!llvm.ptr, i64, i64) -> i64
  scf.for %i0 = %z to %n0 step %one : i64 {{
    scf.for %i1 = %z to %n1 step %one : i64 {{
      scf.for %i2 = %z to %n2 step %one : i64 {{
        scf.for %i3 = %z to %n3 step %one : i64 {{
          %l0 = arith.muli %i0, %n1 : i64
          %l1 = arith.addi %l0, %i1 : i64
          %l2 = arith.muli %l1, %n2 : i64
          %l3 = arith.addi %l2, %i2 : i64
          %l4 = arith.muli %l3, %n3 : i64
          %lin = arith.addi %l4, %i3 : i64
          %o0 = arith.muli %i0, %s0 : i64
          %o1 = arith.muli %i1, %s1 : i64
          %o2 = arith.muli %i2, %s2 : i64
          %o3 = arith.muli %i3, %s3 : i64
          %o01 = arith.addi %o0, %o1 : i64
          %o23 = arith.addi %o2, %o3 : i64
          %off = arith.addi %o01, %o23 : i64
          %tb = arith.muli %off, %es : i64
          %bb = arith.muli %lin, %es : i64
          %tp = llvm.getelementptr %data[%tb] : (!llvm.ptr, i64) -> !llvm.ptr, i8
          %bp = llvm.getelementptr %buf[%bb] : (!llvm.ptr, i64) -> !llvm.ptr, i8
          %from = arith.select %pack, %tp, %bp : !llvm.ptr
          %to = arith.select %pack, %bp, %tp : !llvm.ptr
          scf.for %b = %z to %es step %one : i64 {{
            %fp = llvm.getelementptr %from[%b] : (!llvm.ptr, i64) -> !llvm.ptr, i8
            %x = llvm.load %fp : !llvm.ptr -> i8
            %dp = llvm.getelementptr %to[%b] : (!llvm.ptr, i64) -> !llvm.ptr, i8
            llvm.store %x, %dp : i8, !llvm.ptr
          }
        }
      }
    }
  }
  return
}

// Writes into %dst an nnsc_tensor with %t's dtype, rank and shape, contiguous, over %data.
// Returns its size in bytes.
func.func private @nnsc_cuda_describe(%dst: !llvm.ptr, %t: !llvm.ptr, %data: !llvm.ptr) -> i64 {{
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %four = arith.constant 4 : i64
  %eight = arith.constant 8 : i64
  %shape = arith.constant {2} : i64
  %strides = arith.constant {3} : i64
  llvm.store %data, %dst : !llvm.ptr, !llvm.ptr
  %dtype_p = llvm.getelementptr inbounds %t[{0}] : (!llvm.ptr) -> !llvm.ptr, i8
  %dtype = llvm.load %dtype_p : !llvm.ptr -> i32
  %ddtype_p = llvm.getelementptr inbounds %dst[{0}] : (!llvm.ptr) -> !llvm.ptr, i8
  llvm.store %dtype, %ddtype_p : i32, !llvm.ptr
  %rank_p = llvm.getelementptr inbounds %t[{1}] : (!llvm.ptr) -> !llvm.ptr, i8
  %rank = llvm.load %rank_p : !llvm.ptr -> i32
  %drank_p = llvm.getelementptr inbounds %dst[{1}] : (!llvm.ptr) -> !llvm.ptr, i8
  llvm.store %rank, %drank_p : i32, !llvm.ptr
  %numel = scf.for %k = %z to %four step %one iter_args(%stride = %one) -> (i64) : i64 {{
    %three = arith.constant 3 : i64
    %d = arith.subi %three, %k : i64
    %n = func.call @nnsc_cuda_dim(%t, %d, %shape) : (!llvm.ptr, i64, i64) -> i64
    %o = arith.muli %d, %eight : i64
    %so = arith.addi %o, %shape : i64
    %to = arith.addi %o, %strides : i64
    %sp = llvm.getelementptr %dst[%so] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %tp = llvm.getelementptr %dst[%to] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %n, %sp : i64, !llvm.ptr
    llvm.store %stride, %tp : i64, !llvm.ptr
    %next = arith.muli %stride, %n : i64
    scf.yield %next : i64
  }
  %es = func.call @nnsc_cuda_dtype_size(%dtype) : (i32) -> i64
  %bytes = arith.muli %numel, %es : i64
  return %bytes : i64
}

// Appends an event; null when the event buffer is full (num_events still counts it).
func.func private @nnsc_cuda_event(%status: !llvm.ptr, %kind: i32, %index: i32,
                                   %request: !llvm.ptr, %step: i64) -> !llvm.ptr {{
  %one = arith.constant 1 : i64
  %size = arith.constant {10} : i64
  %count_p = llvm.getelementptr inbounds %status[{11}] : (!llvm.ptr) -> !llvm.ptr, i8
  %n = llvm.load %count_p : !llvm.ptr -> i64
  %next = arith.addi %n, %one : i64
  llvm.store %next, %count_p : i64, !llvm.ptr
  %cap_p = llvm.getelementptr inbounds %status[{12}] : (!llvm.ptr) -> !llvm.ptr, i8
  %cap = llvm.load %cap_p : !llvm.ptr -> i64
  %full = arith.cmpi sge, %n, %cap : i64
  %event = scf.if %full -> !llvm.ptr {{
    %null = llvm.mlir.zero : !llvm.ptr
    scf.yield %null : !llvm.ptr
  } else {{
    %events_p = llvm.getelementptr inbounds %status[{13}] : (!llvm.ptr) -> !llvm.ptr, i8
    %events = llvm.load %events_p : !llvm.ptr -> !llvm.ptr
    %off = arith.muli %n, %size : i64
    %e = llvm.getelementptr %events[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %kind, %e : i32, !llvm.ptr
    %index_p = llvm.getelementptr inbounds %e[{5}] : (!llvm.ptr) -> !llvm.ptr, i8
    llvm.store %index, %index_p : i32, !llvm.ptr
    %request_p = llvm.getelementptr inbounds %e[{6}] : (!llvm.ptr) -> !llvm.ptr, i8
    llvm.store %request, %request_p : !llvm.ptr, !llvm.ptr
    %step_p = llvm.getelementptr inbounds %e[{7}] : (!llvm.ptr) -> !llvm.ptr, i8
    llvm.store %step, %step_p : i64, !llvm.ptr
    scf.yield %e : !llvm.ptr
  }
  return %event : !llvm.ptr
}

// Copies %t into the sink, contiguous, and describes it at %dst; data is null when the sink
// is full.
func.func private @nnsc_cuda_record(%status: !llvm.ptr, %dst: !llvm.ptr, %t: !llvm.ptr) {{
  %null = llvm.mlir.zero : !llvm.ptr
  %fifteen = arith.constant 15 : i64
  %mask = arith.constant -16 : i64
  %bytes = func.call @nnsc_cuda_describe(%dst, %t, %null) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i64
  %used_p = llvm.getelementptr inbounds %status[{16}] : (!llvm.ptr) -> !llvm.ptr, i8
  %used = llvm.load %used_p : !llvm.ptr -> i64
  %cap_p = llvm.getelementptr inbounds %status[{15}] : (!llvm.ptr) -> !llvm.ptr, i8
  %cap = llvm.load %cap_p : !llvm.ptr -> i64
  %padded = arith.addi %bytes, %fifteen : i64
  %aligned = arith.andi %padded, %mask : i64
  %end = arith.addi %used, %aligned : i64
  %fits = arith.cmpi sle, %end, %cap : i64
  scf.if %fits {{
    llvm.store %end, %used_p : i64, !llvm.ptr
    %sink_p = llvm.getelementptr inbounds %status[{14}] : (!llvm.ptr) -> !llvm.ptr, i8
    %sink = llvm.load %sink_p : !llvm.ptr -> !llvm.ptr
    %data = llvm.getelementptr %sink[%used] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %data, %dst : !llvm.ptr, !llvm.ptr
    %true = arith.constant true
    func.call @nnsc_cuda_copy(%t, %data, %true) : (!llvm.ptr, !llvm.ptr, i1) -> ()
  }
  return
}

func.func private @nnsc_cuda_report_error(%status: !llvm.ptr, %request: !llvm.ptr,
                                          %message: i32, %arg0: i64, %arg1: i64) {{
  %kind = arith.constant {20} : i32
  %z = arith.constant 0 : i64
  %null = llvm.mlir.zero : !llvm.ptr
  %e = func.call @nnsc_cuda_event(%status, %kind, %message, %request, %z)
      : (!llvm.ptr, i32, i32, !llvm.ptr, i64) -> !llvm.ptr
  %ok = llvm.icmp "ne" %e, %null : !llvm.ptr
  scf.if %ok {{
    %args_p = llvm.getelementptr inbounds %e[{26}] : (!llvm.ptr) -> !llvm.ptr, i8
    llvm.store %arg0, %args_p : i64, !llvm.ptr
    %arg1_p = llvm.getelementptr inbounds %args_p[8] : (!llvm.ptr) -> !llvm.ptr, i8
    llvm.store %arg1, %arg1_p : i64, !llvm.ptr
  }
  return
}

func.func private @nnsc_cuda_save(%status: !llvm.ptr, %request: !llvm.ptr, %index: i32,
                                  %step: i64, %t: !llvm.ptr) {{
  %kind = arith.constant {21} : i32
  %null = llvm.mlir.zero : !llvm.ptr
  %e = func.call @nnsc_cuda_event(%status, %kind, %index, %request, %step)
      : (!llvm.ptr, i32, i32, !llvm.ptr, i64) -> !llvm.ptr
  %ok = llvm.icmp "ne" %e, %null : !llvm.ptr
  scf.if %ok {{
    %value = llvm.getelementptr inbounds %e[{8}] : (!llvm.ptr) -> !llvm.ptr, i8
    func.call @nnsc_cuda_record(%status, %value, %t) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
  }
  return
}

func.func private @nnsc_cuda_stop(%status: !llvm.ptr, %request: !llvm.ptr) {{
  %kind = arith.constant {22} : i32
  %z32 = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %e = func.call @nnsc_cuda_event(%status, %kind, %z32, %request, %z)
      : (!llvm.ptr, i32, i32, !llvm.ptr, i64) -> !llvm.ptr
  return
}

func.func private @nnsc_cuda_finish(%status: !llvm.ptr, %request: !llvm.ptr) {{
  %kind = arith.constant {23} : i32
  %z32 = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %e = func.call @nnsc_cuda_event(%status, %kind, %z32, %request, %z)
      : (!llvm.ptr, i32, i32, !llvm.ptr, i64) -> !llvm.ptr
  return
}

func.func private @nnsc_cuda_skip(%status: !llvm.ptr, %request: !llvm.ptr) {{
  %kind = arith.constant {25} : i32
  %z32 = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %e = func.call @nnsc_cuda_event(%status, %kind, %z32, %request, %z)
      : (!llvm.ptr, i32, i32, !llvm.ptr, i64) -> !llvm.ptr
  return
}

// Records the module call; the kernel suspends right after it (docs/BundleABI.md).
func.func private @nnsc_cuda_call_module(%status: !llvm.ptr, %module: i32, %input: !llvm.ptr,
                                         %output: !llvm.ptr) {{
  %kind = arith.constant {24} : i32
  %null = llvm.mlir.zero : !llvm.ptr
  %z = arith.constant 0 : i64
  %e = func.call @nnsc_cuda_event(%status, %kind, %module, %null, %z)
      : (!llvm.ptr, i32, i32, !llvm.ptr, i64) -> !llvm.ptr
  %ok = llvm.icmp "ne" %e, %null : !llvm.ptr
  scf.if %ok {{
    %value = llvm.getelementptr inbounds %e[{8}] : (!llvm.ptr) -> !llvm.ptr, i8
    func.call @nnsc_cuda_record(%status, %value, %input) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
    %out = llvm.getelementptr inbounds %e[{9}] : (!llvm.ptr) -> !llvm.ptr, i8
    %bytes = func.call @nnsc_cuda_describe(%out, %output, %null)
        : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i64
  }
  return
}

// After resuming: the host's output of the module call into the kernel's buffer, and its status.
func.func private @nnsc_cuda_module_result(%status: !llvm.ptr, %output: !llvm.ptr) -> i32 {{
  %result_p = llvm.getelementptr inbounds %status[{17}] : (!llvm.ptr) -> !llvm.ptr, i8
  %result = llvm.load %result_p : !llvm.ptr -> !llvm.ptr
  %false = arith.constant false
  func.call @nnsc_cuda_copy(%output, %result, %false) : (!llvm.ptr, !llvm.ptr, i1) -> ()
  %status_p = llvm.getelementptr inbounds %status[{18}] : (!llvm.ptr) -> !llvm.ptr, i8
  %code = llvm.load %status_p : !llvm.ptr -> i32
  return %code : i32
}
)mlir";

} // namespace

LogicalResult addDeviceRuntime(Block &body, MLIRContext *context) {
  namespace t = abi::tensor;
  namespace e = abi::cuda_event;
  namespace s = abi::cuda_status;
  auto kind = [](abi::CUDAEvent k) { return static_cast<int32_t>(k); };
  std::string source = llvm::formatv(
      kSource, t::kDtype, t::kRank, t::kShape, t::kStrides, t::kSize, e::kIndex, e::kRequest,
      e::kStep, e::kValue, e::kOutput, e::kSize, s::kNumEvents, s::kEventCapacity, s::kEvents,
      s::kSink, s::kSinkBytes, s::kSinkUsed, s::kModuleOutput, s::kModuleStatus, s::kResume,
      kind(abi::CUDAEvent::Error), kind(abi::CUDAEvent::Save), kind(abi::CUDAEvent::Stop),
      kind(abi::CUDAEvent::Finish), kind(abi::CUDAEvent::CallModule), kind(abi::CUDAEvent::Skip),
      e::kErrorArgs);
  return parseSourceString(source, &body, ParserConfig(context));
}

void internalizeDeviceRuntime(Operation *gpuModule) {
  for (auto func :
       llvm::make_early_inc_range(gpuModule->getRegion(0).front().getOps<LLVM::LLVMFuncOp>())) {
    StringRef name = func.getName();
    if (name.starts_with("_mlir_ciface_nnsc_cuda_") &&
        SymbolTable::symbolKnownUseEmpty(func, gpuModule)) {
      func.erase();
      continue;
    }
    if (name.starts_with("nnsc_cuda_")) {
      func.setLinkage(LLVM::Linkage::Internal);
      func->removeAttr("llvm.emit_c_interface");
      func->removeAttr(SymbolTable::getVisibilityAttrName());
    }
  }
}

} // namespace nnsc::cuda
