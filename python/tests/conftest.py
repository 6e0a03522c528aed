"""Shared fixtures of the nnsc Python tests: one LLM for the whole session (loading is the
slow part), and nns-run, the command-line reference the Python results must equal."""

import contextlib
import json
import os
import re
import subprocess

import nnsc  # first: it chooses the OpenMP wait policy before torch loads
import pytest
from nnsc._extension import BUILD_DIR, DEFAULT_MODEL, TOOLS_DIR
from safetensors.torch import load_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CANONICAL = os.path.join(ROOT, "examples", "canonical")
# Both sides use the same thread count, so they compute the same sums in the same order.
THREADS = 2


@pytest.fixture(scope="session")
def llm():
    return nnsc.LLM(threads=THREADS)


def tool(name):
    path = os.path.join(TOOLS_DIR, name)
    if not os.path.exists(path):
        pytest.fail("%s is not built (%s): build it with ninja -C %s %s"
                    % (name, path, BUILD_DIR, name))
    return path


def nns_run(args, save_dir=None, model=DEFAULT_MODEL):
    """Runs nns-run with `args` (greedy, fp32, THREADS threads) and returns, per request, its
    JSON record and saves ({} without --save-dir)."""
    cmd = [tool("nns-run"), "--model", model, "--threads", str(THREADS), "--quiet",
           "--json"] + list(args)
    if save_dir:
        cmd += ["--save-dir", str(save_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, "nns-run failed: %s\n%s" % (" ".join(cmd), proc.stderr)
    if not save_dir:
        return [(json.loads(line), {}) for line in proc.stdout.splitlines()
                if line.startswith("{")]
    out = []
    i = 0
    while os.path.exists(os.path.join(save_dir, "%d.json" % i)):
        with open(os.path.join(save_dir, "%d.json" % i)) as f:
            record = json.load(f)
        out.append((record, load_file(os.path.join(save_dir, "%d.safetensors" % i))))
        i += 1
    return out


@contextlib.contextmanager
def served(*args, model=DEFAULT_MODEL):
    """Runs nns-serve on `model` (the bundled SmolLM2 by default) on a free loopback port with
    `args` and yields its base URL; stops it on exit."""
    proc = subprocess.Popen([tool("nns-serve"), "--model", model, "--port", "0",
                             "--threads", str(THREADS)] + list(args),
                            stderr=subprocess.PIPE, text=True)
    url = None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        m = re.search(r"serving '.*' on (http://\S+)", line)
        if m:
            url = m.group(1)
            break
    if url is None:
        proc.kill()
        pytest.fail("nns-serve did not start:\n" + "".join(lines))
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
