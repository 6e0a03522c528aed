"""Builds one of test/Target/Bundle's kernel-level bundles for the model a test runs.

Usage: build_bundle.py NNS_BUNDLE_EMIT NNS_RUN MODEL IN.mlir OUT.nnsb [FROM=>TO ...]

The hand-written manifests carry a placeholder schema_hash; it becomes MODEL's (as
`nns-run --print-schema-hash` reports it), then each FROM text of the file is replaced by TO
(dimensions and sites of a tiny model), and nns-bundle-emit compiles the result.
"""
import re
import subprocess
import sys

emit, nns_run, model, source, out = sys.argv[1:6]
schema_hash = subprocess.run([nns_run, "--model", model, "--print-schema-hash", "--quiet"],
                             check=True, capture_output=True, text=True).stdout.strip()
text = open(source).read()
text = re.sub(r"schema_hash = [0-9]+", f"schema_hash = {schema_hash}", text)
for pair in sys.argv[6:]:
    frm, to = pair.split("=>", 1)
    if frm not in text:
        sys.exit(f"build_bundle.py: '{frm}' is not in {source}")
    text = text.replace(frm, to)
subprocess.run([emit, "-", "-emit=bundle", "-o", out], input=text, check=True, text=True)
