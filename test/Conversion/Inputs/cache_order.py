"""Checks that cache() records the site's final value (docs/Language.md: after this program's
writes there), running the bundle of random-xfail-cache-order.nns through the C ABI.
Usage: cache_order.py BUNDLE
"""
import ctypes as C
import sys

import torch

from bundle_ctypes import BundleRunner

r = BundleRunner(sys.argv[1])
v = torch.randn(64)
x = torch.randn(4, 64)
want = x[1:3] + v
r.run_site(r.trace(), 0, x, [dict(row=1, rows=2, step=0, params=[v],
                                  frame=C.create_string_buffer(64), request=1)])
cached = r.saves[0][3]
print("cache records the final value" if torch.allclose(cached, want) else
      "FAIL cache recorded the value before the write")
