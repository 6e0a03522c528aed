"""Shared fixtures of the nnsc Python tests: one LLM for the whole session (loading is the
slow part), and nns-run, the command-line reference the Python results must equal."""

import contextlib
import json
import os
import re
import subprocess

import nnsc  # first: it chooses the OpenMP wait policy before torch loads
import pytest
import torch
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


# --- NNsight code (test_nnsight_code*.py): the same program through nnsight and nnsc ----------

GGUF = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
FRANCE = "The capital of France is the city of"
ITALY = "The capital of Italy is the city of"
SPAIN = "The capital of Spain is the city of"
ALICE = "Alice went to the market and bought"
# The parity tolerance (docs/Parity.md): absolute, relative to the row's largest value, relative.
RTOL, ATOL, ROW_TOL = 1e-3, 1e-3, 1e-5


def unit(seed, scale=1.0):
    """A random direction of the residual stream (576 wide), `scale` long."""
    v = torch.randn(576, generator=torch.Generator().manual_seed(seed))
    return scale * v / v.norm()


@pytest.fixture(scope="module")
def nnsight_model():
    """nnsight 0.8.1 on transformers' conversion of the bundled GGUF, as parity.py loads it."""
    import sys
    import warnings
    pytest.importorskip("nnsight")
    sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
    from reference import load_gguf_reference
    from nnsight import LanguageModel
    model, tokenizer = load_gguf_reference(GGUF)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nnsight's note that LanguageModel has a new name
        return LanguageModel(model, tokenizer=tokenizer)


@pytest.fixture(scope="module")
def nnsc_model(llm):
    """The same code's model: nnsc.LanguageModel over the session's engine."""
    return nnsc.LanguageModel(llm)


def assert_saves_close(got, expected):
    """A program's saves by name, as nnsc ran it, against nnsight's: the same names, each within
    the parity tolerance (assert_close)."""
    assert sorted(got) == sorted(expected)
    for name in expected:
        assert_close(got[name], expected[name], name)


def assert_close(got, ref, name):
    """`got` equals nnsight's `ref` (tensors, or lists and tuples of them) within the parity
    tolerance; integer tensors exactly."""
    if isinstance(ref, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(ref), name
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_close(g, r, "%s[%d]" % (name, i))
        return
    ref = torch.as_tensor(ref).detach().cpu()
    assert isinstance(got, torch.Tensor), "%s: %r is not a tensor" % (name, got)
    assert list(got.shape) == list(ref.shape), \
        "%s: shape %s != nnsight's %s" % (name, list(got.shape), list(ref.shape))
    if not ref.is_floating_point():
        assert torch.equal(got.long(), ref.long()), "%s: %s != nnsight's %s" % (name, got, ref)
        return
    got, ref = got.float(), ref.float()
    scale = ref.abs().amax(-1, keepdim=True) if ref.dim() else ref.abs()
    bound = ATOL + ROW_TOL * scale + RTOL * ref.abs()
    excess = (got - ref).abs() - bound
    assert not bool((excess > 0).any()), "%s differs from nnsight by up to %.3e" % (
        name, float((got - ref).abs().max()))
