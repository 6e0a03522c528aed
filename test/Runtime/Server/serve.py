"""Starts nns-serve on a free loopback port for a test, and runs nns-run for references.

Used by server_check.py and load_check.py: `with Server(nns_serve, args) as s: s.url ...`.
"""
import json
import os
import re
import subprocess
import tempfile
import time

import httpx
from safetensors.torch import load_file, save_file


class Server:
    def __init__(self, binary, args=(), env=None):
        self.binary = binary
        self.args = list(args)
        self.env = dict(os.environ, **(env or {}))
        self.proc = None
        self.port = None
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)

    def __enter__(self):
        self.proc = subprocess.Popen([self.binary, "--port", "0", *self.args],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nns-serve exited {self.proc.returncode}:\n{self.output()}")
            match = re.search(r"on http://[0-9.]+:(\d+)", self.output())
            if match:
                self.port = int(match.group(1))
                return self
            time.sleep(0.2)
        raise RuntimeError("nns-serve did not start within 120 s:\n" + self.output())

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.unlink(self.log.name)

    def output(self):
        with open(self.log.name) as f:
            return f.read()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def metrics(self):
        """{series (with labels): value} of GET /metrics."""
        text = httpx.get(self.url + "/metrics").text
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values


def run_nns(nns_run, model, prompts, max_tokens, work, trace=None, params=None, chat=False):
    """nns-run on `prompts` (text, or lists of ids): (per request: ids, saves dict)."""
    os.makedirs(work, exist_ok=True)
    cmd = [nns_run, "--model", model, "--temperature", "0", "--max-tokens", str(max_tokens),
           "--quiet"]
    for p in prompts:
        cmd += ["--prompt-ids", ",".join(map(str, p))] if isinstance(p, list) else ["--prompt", p]
    if chat:
        cmd.append("--chat")
    if trace is not None:
        path = os.path.join(work, "program.nns")
        with open(path, "w") as f:
            f.write(trace)
        cmd += ["--trace", path, "--save-dir", os.path.join(work, "out")]
        tensors = {}
        for name, value in (params or {}).items():
            if hasattr(value, "shape") and len(value.shape) > 0:
                tensors[name] = value.float().contiguous()
                cmd += ["--param", f"{name}=@{os.path.join(work, 'params.safetensors')}:{name}"]
            else:
                cmd += ["--param", f"{name}={value}"]
        if tensors:
            save_file(tensors, os.path.join(work, "params.safetensors"))
    else:
        cmd.append("--json")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nns-run failed: {proc.stderr[-2000:]}")
    if trace is None:
        return [(json.loads(line)["ids"], {}) for line in proc.stdout.splitlines()]
    results = []
    out = os.path.join(work, "out")
    i = 0
    while os.path.exists(os.path.join(out, f"{i}.json")):
        with open(os.path.join(out, f"{i}.json")) as f:
            meta = json.load(f)
        ids = [inv["ids"] for inv in meta["invokes"]] if "invokes" in meta else meta["ids"]
        results.append((ids, load_file(os.path.join(out, f"{i}.safetensors"))))
        i += 1
    return results
