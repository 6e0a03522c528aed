"""Calls the kernels of a bundle through BundleABI.h's C structures with ctypes.

A small harness for differential tests: it builds nnsc_tensor/nnsc_group/nnsc_runtime from
torch tensors, records saves, errors, stop and finish, and returns what each kernel did.
"""
import ctypes as C

import torch

MAX_RANK = 4
DTYPES = {torch.float32: 0, torch.int64: 3, torch.bool: 4}
TORCH = {0: torch.float32, 3: torch.int64, 4: torch.bool}


class Tensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("dtype", C.c_int32), ("rank", C.c_int32),
                ("shape", C.c_int64 * MAX_RANK), ("strides", C.c_int64 * MAX_RANK)]


class ParamDesc(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int32), ("rank", C.c_int32),
                ("shape", C.c_int64 * MAX_RANK), ("default_value", C.c_void_p)]


class SaveDesc(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int32), ("rank", C.c_int32),
                ("shape", C.c_int64 * MAX_RANK), ("flags", C.c_uint32)]


KERNEL = C.CFUNCTYPE(C.c_int32, C.c_void_p, C.c_void_p, C.c_int32, C.c_void_p)


class SiteEntry(C.Structure):
    _fields_ = [("site", C.c_int32), ("site_path", C.c_char_p), ("phase", C.c_int32),
                ("access", C.c_uint32), ("kernel", C.c_void_p)]


class TraceDesc(C.Structure):
    _fields_ = [("name", C.c_char_p), ("num_invokes", C.c_int32),
                ("invoke_names", C.POINTER(C.c_char_p)), ("flags", C.c_uint32),
                ("frame_bytes", C.c_int64), ("num_frame_heap_slots", C.c_int32),
                ("frame_heap_slots", C.POINTER(C.c_int64)), ("num_params", C.c_int32),
                ("params", C.POINTER(ParamDesc)), ("num_saves", C.c_int32),
                ("saves", C.POINTER(SaveDesc)), ("num_sites", C.c_int32),
                ("sites", C.POINTER(SiteEntry))]


class Bundle(C.Structure):
    _fields_ = [("abi_version", C.c_uint32), ("source_hash", C.c_char_p), ("arch", C.c_char_p),
                ("schema_hash", C.c_uint64), ("hidden", C.c_int64), ("intermediate", C.c_int64),
                ("layers", C.c_int64), ("heads", C.c_int64), ("kv_heads", C.c_int64),
                ("head_dim", C.c_int64), ("vocab", C.c_int64), ("num_traces", C.c_int32),
                ("traces", C.POINTER(TraceDesc)), ("cuda", C.c_void_p)]


class Group(C.Structure):
    _fields_ = [("row", C.c_int64), ("rows", C.c_int64), ("position", C.c_int64),
                ("step", C.c_int64), ("invoke", C.c_int32), ("frame", C.c_void_p),
                ("params", C.POINTER(Tensor)), ("request", C.c_void_p)]


CALL_MODULE = C.CFUNCTYPE(C.c_int32, C.c_void_p, C.c_int32, C.POINTER(Tensor), C.POINTER(Tensor))
REPORT = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p, C.c_char_p, C.c_int64, C.c_int64)
SAVE = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p, C.c_int32, C.c_int64, C.POINTER(Tensor))
REQ = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p)


class Runtime(C.Structure):
    _fields_ = [("ctx", C.c_void_p), ("call_module", CALL_MODULE), ("report_error", REPORT),
                ("save", SAVE), ("stop", REQ), ("finish", REQ)]


def describe(t):
    """An nnsc_tensor viewing the torch tensor `t` (kept alive by the caller)."""
    d = Tensor()
    d.data = t.data_ptr()
    d.dtype = DTYPES[t.dtype]
    d.rank = t.dim()
    for i in range(t.dim()):
        d.shape[i] = t.shape[i]
        d.strides[i] = t.stride(i)
    return d


def from_desc(d):
    """A copy of the strided tensor an nnsc_tensor describes."""
    dtype = TORCH[d.dtype]
    shape = [d.shape[i] for i in range(d.rank)]
    strides = [d.strides[i] for i in range(d.rank)]
    size = 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if all(shape) else 0
    esize = torch.empty((), dtype=dtype).element_size()
    buf = (C.c_char * max(size * esize, 1)).from_address(d.data) if size else None
    if not size:
        return torch.empty(shape, dtype=dtype)
    flat = torch.frombuffer(bytearray(buf), dtype=dtype)
    return torch.as_strided(flat, shape, strides).clone()


class BundleRunner:
    """Loads a bundle and runs its kernels on torch tensors."""

    def __init__(self, path, modules=None):
        self.lib = C.CDLL(path)
        self.lib.nnsc_bundle_query.restype = C.POINTER(Bundle)
        self.bundle = self.lib.nnsc_bundle_query().contents
        self.modules = modules or {}
        self.saves, self.errors, self.stopped, self.finished = [], [], set(), set()
        self._callbacks = (CALL_MODULE(self._call_module), REPORT(self._report),
                           SAVE(self._save), REQ(lambda c, r: self.stopped.add(r)),
                           REQ(lambda c, r: self.finished.add(r)))
        self.runtime = Runtime(None, *self._callbacks)

    def _call_module(self, ctx, module, inp, out):
        x = from_desc(inp.contents)
        y = self.modules[module](x)
        o = out.contents
        target = torch.as_strided(
            torch.frombuffer((C.c_char * (y.numel() * 4)).from_address(o.data), dtype=torch.float32),
            list(y.shape), [o.strides[i] for i in range(o.rank)])
        target.copy_(y)
        return 0

    def _report(self, ctx, request, message, arg0, arg1):
        # {0} and {1} stand for the numbers (nnsc::errorMessage in the runtime).
        text = message.decode().replace("{0}", str(arg0)).replace("{1}", str(arg1))
        self.errors.append((request, text))

    def _save(self, ctx, request, index, step, value):
        self.saves.append((request, index, step, from_desc(value.contents)))

    def trace(self, index=0):
        return self.bundle.traces[index]

    def run_site(self, trace, site_index, value, groups):
        """Calls one site kernel; `groups` are dicts of Group fields with torch params."""
        entry = trace.sites[site_index]
        keep = []
        array = (Group * len(groups))()
        for g, spec in zip(array, groups):
            params = (Tensor * max(1, len(spec["params"])))()
            for i, p in enumerate(spec["params"]):
                params[i] = describe(p)
            keep.append(params)
            g.row, g.rows, g.position = spec["row"], spec["rows"], 0
            g.step, g.invoke = spec["step"], spec.get("invoke", 0)
            g.frame = C.addressof(spec["frame"])
            g.params = C.cast(params, C.POINTER(Tensor))
            g.request = spec["request"]
        desc = describe(value)
        kernel = KERNEL(entry.kernel)
        return kernel(C.addressof(desc), C.addressof(array), len(groups), C.addressof(self.runtime))
