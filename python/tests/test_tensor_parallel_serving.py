"""nns-serve --tensor-parallel-size 3 (docs/Distributed.md, "Serving"): rank 0 serves HTTP and
sends each admitted request and abort to the other two ranks before the step that needs it.
Program requests (capture, steering, logit lens, a head-sharded site read and written,
multi-invoke patching, streaming) give nnsc.LLM's tokens on one rank and its saves within the
tensor-parallel tolerance; a rank killed mid-request ends the request with an error naming the
rank, after which /health and every request say so (503) and stopping the server leaves no
rank behind."""

import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import nnsc
import pytest
import torch

from conftest import CANONICAL, DEFAULT_MODEL, served, tool

PROMPTS = ["The capital of France is", "Once upon a time, in a small village,"]
# q_proj.output is split by heads over the ranks: read whole, and written (a head zeroed)
# through every rank's shard.
SHARDED = ("trace { for step in steps {\n"
           "  q = layers[5].self_attn.q_proj.output[-1].save()\n"
           "  layers[7].self_attn.q_proj.output.view(-1, 9, 64)[:, 2] = 0\n"
           "  l = logits.save() } }\n")
# The tensor-parallel tolerance: the all-reduces sum the ranks' partial products in another
# order than one rank's product (docs/Distributed.md).
RTOL, ATOL = 1e-3, 1e-3


@pytest.fixture(scope="module")
def tp_client():
    with served("--tensor-parallel-size", "3", "--threads", "1") as url:
        yield nnsc.Client(url)


def assert_results_close(got, expected):
    for x, y in zip(got, expected):
        assert x.token_ids == y.token_ids
        assert sorted(x.saves) == sorted(y.saves)
        for name in y.saves:
            torch.testing.assert_close(x.saves[name], y.saves[name], rtol=RTOL, atol=ATOL,
                                       msg=name)


@pytest.mark.parametrize("program", ["01-capture.nns", "04-logit-lens.nns", "sharded"])
def test_program_requests_equal_one_rank(tp_client, llm, program):
    source = SHARDED if program == "sharded" else os.path.join(CANONICAL, program)
    a = tp_client.generate(PROMPTS, source, max_tokens=3, use_tqdm=False)
    b = llm.generate(PROMPTS, source, max_tokens=3, use_tqdm=False)
    assert all(r.saves for r in b)
    assert_results_close(a, b)


def test_steering_and_patching_equal_one_rank(tp_client, llm):
    steer = torch.randn(576, generator=torch.Generator().manual_seed(0))
    path = os.path.join(CANONICAL, "02-steering.nns")
    a = tp_client.generate(PROMPTS, path, {"steer": steer}, max_tokens=4, use_tqdm=False)
    b = llm.generate(PROMPTS, path, {"steer": steer}, max_tokens=4, use_tqdm=False)
    assert_results_close(a, b)
    patch = os.path.join(CANONICAL, "11-patching.nns")
    pair = [["The Eiffel Tower is in the city of", "The Colosseum is in the city of"]]
    params = {"tok_a": 6342, "tok_b": 7042}
    a = tp_client.generate(pair, patch, params, max_tokens=2, use_tqdm=False)
    b = llm.generate(pair, patch, params, max_tokens=2, use_tqdm=False)
    assert_results_close(a, b)


def test_streaming_and_plain_requests(tp_client, llm):
    request = urllib.request.Request(
        tp_client.base_url + "/v1/completions", headers={"Content-Type": "application/json"},
        data=json.dumps({"model": tp_client.model, "prompt": PROMPTS[0], "max_tokens": 6,
                         "stream": True}).encode())
    pieces = []
    with urllib.request.urlopen(request, timeout=120) as response:
        for line in response:
            line = line.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                pieces.append(json.loads(line[6:])["choices"][0]["text"])
    [whole] = llm.generate([PROMPTS[0]], max_tokens=6, use_tqdm=False)
    assert "".join(pieces) == whole.text
    [plain] = tp_client.generate([PROMPTS[1]], max_tokens=5, use_tqdm=False)
    assert plain.token_ids == llm.generate([PROMPTS[1]], max_tokens=5, use_tqdm=False)[0].token_ids


def test_a_program_that_does_not_compile_is_refused_on_rank_zero(tp_client):
    with pytest.raises(nnsc.CompileError):
        tp_client.generate(PROMPTS[0], "trace { layers[99].output.save() }", max_tokens=2,
                           use_tqdm=False)
    # The other ranks never saw it: the next request runs on all three.
    assert tp_client.generate(PROMPTS[0], max_tokens=2, use_tqdm=False)[0].token_ids


def post(url, body, timeout=120):
    request = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                         text=True).stdout
    return [int(p) for p in out.split()]


def test_a_killed_rank_ends_requests_with_an_error_naming_it():
    proc = subprocess.Popen([tool("nns-serve"), "--model", DEFAULT_MODEL, "--port", "0",
                             "--threads", "1", "--tensor-parallel-size", "3"],
                            stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in proc.stderr:
            m = re.search(r"serving '.*' on (http://\S+)", line)
            if m:
                url = m.group(1)
                break
        assert url, "nns-serve did not start"
        threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
        model = json.loads(urllib.request.urlopen(url + "/v1/models").read())["data"][0]["id"]
        ranks = children(proc.pid)
        assert len(ranks) == 2
        result = {}
        long = threading.Thread(target=lambda: result.update(zip(
            ("status", "body"), post(url, {"model": model, "prompt": PROMPTS[0],
                                           "max_tokens": 400, "ignore_eos": True}))))
        long.start()
        time.sleep(3)  # the request is decoding on all three ranks
        os.kill(ranks[1], signal.SIGKILL)  # rank 2 (spawned second)
        long.join(timeout=120)
        assert not long.is_alive(), "the request hangs after a rank died"
        assert "rank 2" in result["body"], result
        with pytest.raises(urllib.error.HTTPError) as health:
            urllib.request.urlopen(url + "/health")
        assert health.value.code == 503
        assert "rank 2" in health.value.read().decode()
        status, body = post(url, {"model": model, "prompt": "Hi", "max_tokens": 2})
        assert status == 503 and "rank 2" in body and "rank_failed" in body
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert proc.returncode is not None
    for pid in ranks:
        assert not os.path.exists("/proc/%d" % pid) or \
            open("/proc/%d/stat" % pid).read().split()[2] == "Z"


def test_metrics_count_what_rank_zero_sent(tp_client):
    tp_client.generate(PROMPTS[0], os.path.join(CANONICAL, "01-capture.nns"), max_tokens=2,
                       use_tqdm=False)
    text = urllib.request.urlopen(tp_client.base_url + "/metrics").read().decode()
    values = dict(re.findall(r"^(nnsc_tensor_parallel_\S+) (\d+)$", text, re.M))
    assert int(values["nnsc_tensor_parallel_messages_total"]) > 0
    assert int(values['nnsc_tensor_parallel_bytes_total{part="programs"}']) > 0
    assert int(values['nnsc_tensor_parallel_bytes_total{part="requests"}']) > 0
