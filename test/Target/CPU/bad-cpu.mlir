// An unknown --cpu is refused with the name and the triple.
// RUN: not nns-bundle-emit %nnsc_src_root/test/Target/Bundle/steer.mlir -emit=llvm --cpu=pentium9000 -o /dev/null 2>&1 | FileCheck %s
// RUN: not nns-bundle-emit %nnsc_src_root/test/Target/Bundle/steer.mlir -emit=llvm --opt-level=1 -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not nns-bundle-emit %nnsc_src_root/test/Target/Bundle/steer.mlir -emit=bundle 2>&1 | FileCheck %s --check-prefix=OUT

// CHECK: error: unknown CPU 'pentium9000' for x86_64
// OPT: error: --opt-level must be 2 or 3, got 1
// OUT: error: -emit=bundle writes a shared object: give it a file with -o
