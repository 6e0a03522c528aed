// -emit=llvm: the bundle's LLVM IR after O3 for a fixed CPU. The kernel is internal and
// reached only through the manifest; nnsc_bundle_query is the one export; the manifest is a
// private constant laid out as BundleABI.h's nnsc_bundle; the steering loop is vectorized.
// RUN: nns-bundle-emit %nnsc_src_root/test/Target/Bundle/steer.mlir -emit=llvm --cpu=skylake-avx512 | FileCheck %s
// RUN: nns-bundle-emit %nnsc_src_root/test/Target/Bundle/steer.mlir -emit=llvm --cpu=x86-64 --opt-level=2 | FileCheck %s --check-prefix=SSE

// CHECK-DAG: %nnsc_bundle = type { i32, ptr, ptr, i64, i64, i64, i64, i64, i64, i64, i64, i32, ptr, ptr }
// CHECK-DAG: %nnsc_trace_desc = type { ptr, i32, ptr, i32, i64, i32, ptr, i32, ptr, i32, ptr, i32, ptr }
// CHECK-DAG: %nnsc_site_entry = type { i32, ptr, i32, i32, ptr }
// CHECK-DAG: @nnsc_bundle = private unnamed_addr constant %nnsc_bundle { i32 5, ptr @nnsc_source_hash, ptr @nnsc_arch, i64 -1152921504606846974, i64 576, i64 1536, i64 30, i64 9, i64 3, i64 64, i64 49152, i32 1, ptr @nnsc_trace_descs, ptr null }
// CHECK-DAG: @nnsc_trace0.sites = private unnamed_addr constant [1 x %nnsc_site_entry] [%nnsc_site_entry { i32 28, ptr @nnsc_trace0.site0, i32 0, i32 3, ptr @steer }]
// CHECK-DAG: @nnsc_trace0.default0 = private unnamed_addr constant [2304 x i8] c"\00\00\00?\00\00\00?
// CHECK-DAG: define internal {{.*}}i32 @steer(ptr
// CHECK-DAG: fadd <8 x float>
// CHECK-DAG: define {{.*}}ptr @nnsc_bundle_query()
// CHECK-DAG: ret ptr @nnsc_bundle
// CHECK-DAG: "target-cpu"="skylake-avx512"

// SSE: fadd <4 x float>
// SSE: "target-cpu"="x86-64"
