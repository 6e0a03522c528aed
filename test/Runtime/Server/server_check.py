"""nns-serve end to end, through the official `openai` client where it applies.

Usage: server_check.py NNS_SERVE NNS_RUN MODEL SRC_ROOT WORKDIR

Every reference is nns-run on the same model (itself checked against transformers and nnsight
by the parity suite): plain greedy tokens, a steering program's tokens and saves, the canonical
capture, logit-lens and patching saves. Then streaming, chat, isolation of concurrent
requests, saves behind handles, bad requests of every kind (each followed by a plain request
that must still succeed) and a client that disconnects mid-stream. Prints one line per check.
"""
import base64
import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import time

import httpx
import torch
from openai import OpenAI, BadRequestError, NotFoundError
from safetensors.torch import load as load_safetensors
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve import Server, run_nns  # noqa: E402

PROMPT = "The capital of France is"
STEER = """param steer: f32[hidden]
param alpha: f32 = 4.0
trace {
    h = layers[12].output[-1].save()
    for step in steps { layers[12].output += alpha * steer }
}
"""
PER_STEP = "trace { for step in steps[0:3] { top = logits.argmax().save() } }"


def tensor(obj):
    """The two lines of docs/Server.md: a JSON save to a torch tensor."""
    data = bytearray(base64.b64decode(obj["data"]))
    return torch.frombuffer(data, dtype=getattr(torch, obj["dtype"])).reshape(obj["shape"])


def saves_of(body):
    nns = body.get("nns") or {}
    if "saves" in nns:
        return {k: tensor(v) for k, v in nns["saves"].items()}
    if "saves_safetensors" in nns:
        return load_safetensors(base64.b64decode(nns["saves_safetensors"]))
    return {}


def same_saves(a, b, tol=0.0):
    if sorted(a) != sorted(b):
        return False
    return all(a[k].shape == b[k].shape and torch.allclose(a[k].float(), b[k].float(), atol=tol,
                                                          rtol=tol) for k in a)


def expect(ok, what):
    if not ok:
        sys.exit(f"FAIL: {what}")


class Checks:
    def __init__(self, server, nns_run, model, src, work):
        self.s = server
        self.nns_run, self.model, self.src, self.work = nns_run, model, src, work
        self.client = OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
        self.name = self.client.models.list().data[0].id
        self.http = httpx.Client(base_url=server.url, timeout=120)

    def complete(self, prompt, max_tokens, nns=None, **extra):
        body = {"return_token_ids": True, **extra}
        if nns:
            body["nns"] = nns
        r = self.client.completions.create(model=self.name, prompt=prompt, max_tokens=max_tokens,
                                           temperature=0, extra_body=body)
        return r.model_dump()

    def post(self, path, body, **kw):
        return self.http.post(path, json=body, **kw)

    def plain(self):
        ref = run_nns(self.nns_run, self.model, [PROMPT], 12, os.path.join(self.work, "plain"))
        got = self.complete(PROMPT, 12)
        expect(got["choices"][0]["token_ids"] == ref[0][0],
               f"plain tokens {got['choices'][0]['token_ids']} != nns-run {ref[0][0]}")
        expect(got["usage"]["completion_tokens"] == 12, "usage")
        # A stop string cuts the text where it starts and ends the request.
        text = got["choices"][0]["text"]
        stop = text[len(text) // 2:len(text) // 2 + 2]
        cut = self.complete(PROMPT, 12, stop=[stop])["choices"][0]
        expect(cut["text"] == text[:text.index(stop)] and cut["finish_reason"] == "stop",
               f"stop {stop!r}: {cut['text']!r} ({cut['finish_reason']}) from {text!r}")
        print("plain: greedy completion equals nns-run's tokens; a stop string cuts it")
        return ref[0][0]

    def logprobs(self):
        """Log-probabilities of the sampled tokens and the top 3, against log_softmax of
        nns-run's logits for the same prompt (--dump-logits)."""
        work = os.path.join(self.work, "logprobs")
        os.makedirs(work, exist_ok=True)
        dump = os.path.join(work, "logits.safetensors")
        subprocess.run([self.nns_run, "--model", self.model, "--prompt", PROMPT, "--max-tokens", "6",
                        "--temperature", "0", "--quiet", "--dump-logits", dump],
                       check=True, capture_output=True)
        ref = torch.log_softmax(load_file(dump)["logits.0"].double(), -1)
        got = self.complete(PROMPT, 6, logprobs=3)["choices"][0]
        lp = got["logprobs"]
        expect(len(lp["token_logprobs"]) == 6 and len(lp["top_logprobs"]) == 6, f"logprobs {lp}")
        for step, token in enumerate(got["token_ids"]):
            expect(abs(lp["token_logprobs"][step] - float(ref[step, token])) < 1e-4,
                   f"step {step}: logprob {lp['token_logprobs'][step]} vs {float(ref[step, token])}")
            values = sorted(lp["top_logprobs"][step].values(), reverse=True)
            want = ref[step].topk(3).values.tolist()
            expect(len(values) == 3 and all(abs(a - b) < 1e-4 for a, b in zip(values, want)),
                   f"step {step}: top {values} vs {want}")
        chat = self.client.chat.completions.create(
            model=self.name, max_tokens=3, temperature=0, logprobs=True, top_logprobs=2,
            messages=[{"role": "user", "content": "Hi"}]).choices[0].logprobs.content
        expect(len(chat) == 3 and all(len(t.top_logprobs) == 2 and t.logprob <= 0 for t in chat),
               f"chat logprobs {chat}")
        print("logprobs: sampled and top-3 log-probabilities equal log_softmax of nns-run's "
              "logits; chat logprobs in OpenAI's shape")

    def steering(self, plain_ids):
        steer = torch.randn(576, generator=torch.Generator().manual_seed(0))
        steer = 8 * steer / steer.norm()
        ref = run_nns(self.nns_run, self.model, [PROMPT], 12, os.path.join(self.work, "steer"),
                      trace=STEER, params={"steer": steer, "alpha": 2.0})
        got = self.complete(PROMPT, 12, {"program": STEER,
                                         "params": {"steer": steer.tolist(), "alpha": 2.0}})
        ids = got["choices"][0]["token_ids"]
        expect(ids == ref[0][0], f"steered tokens {ids} != nns-run {ref[0][0]}")
        expect(ids != plain_ids, "steering did not change the tokens")
        expect(same_saves(saves_of(got), ref[0][1]), "steering saves differ from nns-run's")
        # The same params as a base64 tensor object.
        obj = {"dtype": "float32", "shape": [576],
               "data": base64.b64encode(steer.numpy().tobytes()).decode()}
        got2 = self.complete(PROMPT, 12, {"program": STEER, "params": {"steer": obj, "alpha": 2}})
        expect(got2["choices"][0]["token_ids"] == ids, "base64 params give other tokens")
        print("steering: tokens and saves equal nns-run --trace with the same params")

    def canonical(self):
        for file, prompts, params in [
                ("01-capture.nns", [PROMPT], {}),
                ("04-logit-lens.nns", [PROMPT], {}),
                ("11-patching.nns", ["The capital of France is the city of",
                                     "The capital of Italy is the city of"],
                 {"tok_a": 7042, "tok_b": 8010})]:
            with open(os.path.join(self.src, "examples", "canonical", file)) as f:
                source = f.read()
            ref = run_nns(self.nns_run, self.model, prompts, 3,
                          os.path.join(self.work, file), trace=source, params=params)
            got = self.complete(prompts if len(prompts) > 1 else prompts[0], 3,
                                {"program": source, "params": params})
            expect(same_saves(saves_of(got), ref[0][1]), f"{file}: saves differ from nns-run's")
            ids = [c["token_ids"] for c in got["choices"]]
            want = ref[0][0] if len(prompts) > 1 else [ref[0][0]]
            expect(ids == want, f"{file}: tokens {ids} != nns-run {want}")
            # Each choice of a multi-invoke request names its invoke; argmax ids are int64.
            invokes = [c.get("invoke") for c in got["choices"]]
            expect(invokes == (["clean", "corrupt"] if len(prompts) > 1 else [None]),
                   f"{file}: invokes {invokes}")
            if file == "04-logit-lens.nns":
                expect(got["nns"]["saves"]["l0"]["dtype"] == "int64", "argmax save dtype")
        print("canonical: capture, logit lens and patching saves equal nns-run's; choices name "
              "their invokes")

    def streaming(self):
        whole = self.complete(PROMPT, 10, {"program": PER_STEP})
        text, chunks, step_saves_early = "", 0, False
        final = None
        stream = self.client.completions.create(
            model=self.name, prompt=PROMPT, max_tokens=10, temperature=0, stream=True,
            stream_options={"include_usage": True}, extra_body={"nns": {"program": PER_STEP}})
        saves = {}
        for chunk in stream:
            c = chunk.model_dump()
            chunks += 1
            for choice in c["choices"]:
                text += choice["text"]
                if choice["finish_reason"]:
                    final = choice["finish_reason"]
            got = saves_of(c)
            if "top.0" in got and final is None:
                step_saves_early = True
            saves.update(got)
        expect(text == whole["choices"][0]["text"], f"streamed {text!r} != {whole['choices'][0]['text']!r}")
        expect(final == whole["choices"][0]["finish_reason"], "finish reasons differ")
        expect(same_saves(saves, saves_of(whole)), "streamed saves differ")
        expect(step_saves_early, "per-step saves did not arrive before the end")
        print(f"streaming: {chunks} chunks join to the non-streamed text and saves; per-step saves arrive with their step")

    def chat(self):
        question = "What is the capital of France?"
        ref = run_nns(self.nns_run, self.model, [question], 8, os.path.join(self.work, "chat"),
                      chat=True)
        r = self.client.chat.completions.create(model=self.name, max_tokens=8, temperature=0,
                                                messages=[{"role": "user", "content": question}],
                                                extra_body={"return_token_ids": True})
        c = r.model_dump()["choices"][0]
        expect(c["token_ids"] == ref[0][0], f"chat tokens {c['token_ids']} != nns-run --chat {ref[0][0]}")
        streamed = "".join(ch.choices[0].delta.content or "" for ch in self.client.chat.completions.create(
            model=self.name, max_tokens=8, temperature=0, stream=True,
            messages=[{"role": "user", "content": question}]) if ch.choices)
        expect(streamed == c["message"]["content"], "streamed chat text differs")
        print("chat: the chat template's tokens equal nns-run --chat; streamed chat equals whole")

    def isolation(self):
        steer = torch.randn(576, generator=torch.Generator().manual_seed(1))
        jobs = []
        for i in range(12):
            kind = i % 4
            prompt = ["The capital of France is", "Alice went to the market and",
                      "The Eiffel Tower is in", "My favourite food is"][i % 4]
            if kind == 0:
                jobs.append((prompt, None))
            elif kind == 1:
                jobs.append((prompt, {"program": STEER, "params": {"steer": (steer * (i + 1)).tolist(),
                                                                   "alpha": 1.0}}))
            elif kind == 2:
                jobs.append((prompt, {"program": "trace { cache(layers[*].output) }"}))
            else:
                jobs.append((prompt, {"program": PER_STEP}))
        alone = [self.complete(p, 8, n) for p, n in jobs]
        with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
            together = list(pool.map(lambda j: self.complete(j[0], 8, j[1]), jobs))
        for a, t in zip(alone, together):
            expect(a["choices"][0]["token_ids"] == t["choices"][0]["token_ids"],
                   "a request got other tokens next to others than alone")
            expect(same_saves(saves_of(a), saves_of(t), tol=1e-4),
                   "a request got other saves next to others than alone")
        print(f"isolation: {len(jobs)} concurrent requests (plain, steered with different params, "
              "captures) each equal their result alone")

    def handles(self):
        nns = {"program": "trace { cache(layers[*].output) }", "saves_transport": "handle"}
        got = self.complete(PROMPT, 2, nns)
        h = got["nns"]["saves_handle"]
        blob = self.http.get(h["url"])
        expect(blob.status_code == 200, f"GET {h['url']}: {blob.status_code}")
        from_handle = load_safetensors(blob.content)
        inline = saves_of(self.complete(PROMPT, 2, {"program": nns["program"],
                                                   "saves_transport": "inline"}))
        expect(same_saves(from_handle, inline), "saves behind a handle differ from inline saves")
        expect(len(from_handle) == 30, f"{len(from_handle)} layers saved")
        # Above --inline-save-bytes, "auto" switches to a handle by itself.
        auto = self.complete(PROMPT, 2, {"program": nns["program"]})
        expect("saves_handle" in auto["nns"], "large saves went inline")
        missing = self.http.get("/v1/nns/saves/" + "0" * 32)
        expect(missing.status_code == 404 and "expired" in missing.json()["error"]["message"],
               "unknown handle")
        st = self.complete(PROMPT, 2, {"program": "trace { h = layers[3].output[-1].save() }",
                                       "saves_format": "safetensors"})
        expect(list(saves_of(st)) == ["h"], "safetensors saves format")
        print("handles: large saves behind a handle (one safetensors file) equal inline saves; unknown handles get 404")

    def bad_requests(self):
        m = self.name
        cases = [
            ("malformed JSON", b'{"model": "x", "prompt": ', 400, "not valid JSON"),
            ("wrong field type", {"model": m, "prompt": PROMPT, "max_tokens": "ten"}, 400,
             "'max_tokens' must be an integer"),
            ("n > 1", {"model": m, "prompt": PROMPT, "n": 2}, 400, "'n' must be 1"),
            ("unknown model", {"model": "gpt-9", "prompt": PROMPT}, 404, "does not exist"),
            ("syntax error", {"model": m, "prompt": PROMPT,
                              "nns": {"program": "trace { h = layers[3.output }"}}, 400,
             "program.nns:1:"),
            ("shape error", {"model": m, "prompt": PROMPT,
                             "nns": {"program": "param d: f32[7]\ntrace { x = (layers[2].output @ d).save() }"}},
             400, "program.nns:2:"),
            ("order error", {"model": m, "prompt": PROMPT,
                             "nns": {"program": "trace { a = layers[5].output.save(); b = layers[2].output.save() }"}},
             400, "program.nns:1:"),
            ("param of the wrong shape", {"model": m, "prompt": PROMPT,
                                          "nns": {"program": STEER, "params": {"steer": [1.0, 2.0]}}},
             400, "param 'steer' is f32[576]"),
            ("missing param", {"model": m, "prompt": PROMPT, "nns": {"program": STEER}}, 400,
             "param 'steer' (f32[576]) has no default"),
            ("prompt longer than the context", {"model": m, "prompt": [1] * 3000}, 400,
             "context is 2048 tokens"),
            ("unknown bundle", {"model": m, "prompt": PROMPT, "nns": {"bundle": "nope"}}, 400,
             "no bundle 'nope'"),
            ("program and bundle", {"model": m, "prompt": PROMPT,
                                    "nns": {"program": "trace {}", "bundle": "x"}}, 400, "exactly one"),
            ("invokes without their prompts", {"model": m, "prompt": PROMPT,
                                               "nns": {"program": open(os.path.join(
                                                   self.src, "examples/canonical/11-patching.nns")).read(),
                                                   "params": {"tok_a": 1, "tok_b": 2}}}, 400,
             "one prompt per invoke"),
            ("logprobs out of range", {"model": m, "prompt": PROMPT, "logprobs": 30}, 400,
             "'logprobs' must be in [0, 20]"),
            ("body too large", {"model": m, "prompt": "x" * (17 << 20)}, 413, "larger than the limit"),
            ("unknown route", None, 404, "no route"),
        ]
        for what, body, status, needle in cases:
            if body is None:
                r = self.http.post("/v1/nothing", json={})
            elif isinstance(body, bytes):
                r = self.http.post("/v1/completions", content=body,
                                   headers={"Content-Type": "application/json"})
            else:
                r = self.post("/v1/completions", body)
            err = r.json().get("error", {})
            expect(r.status_code == status and needle in err.get("message", ""),
                   f"{what}: got {r.status_code} {r.text[:300]}")
            expect(set(err) == {"message", "type", "param", "code"}, f"{what}: error body {err}")
            after = self.complete(PROMPT, 2)
            expect(after["choices"][0]["finish_reason"] == "length", f"plain request after {what}")
        # A program that fails at run time (row 6 of a 5-token prompt) ends with its error...
        r = self.post("/v1/completions", {"model": m, "prompt": PROMPT, "max_tokens": 3,
                                          "nns": {"program": "trace { h = layers[1].output[6].save() }"}})
        expect(r.status_code == 400 and "failed while running" in r.json()["error"]["message"],
               f"run-time failure: {r.status_code} {r.text[:300]}")
        # ... and does not disturb a plain request running next to it.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            bad = pool.submit(self.post, "/v1/completions", {
                "model": m, "prompt": PROMPT, "max_tokens": 6,
                "nns": {"program": "trace { h = layers[1].output[6].save() }"}})
            good = pool.submit(self.complete, PROMPT, 12)
            expect(bad.result().status_code == 400, "run-time failure next to a plain request")
            expect(good.result()["choices"][0]["token_ids"] == self.complete(PROMPT, 12)["choices"][0]["token_ids"],
                   "a plain request next to a failing one changed")
        print(f"bad requests: {len(cases) + 1} kinds each get their 4xx and message in OpenAI's error body; a plain request after each succeeds")

    def disconnect(self):
        before = self.s.metrics()
        body = json.dumps({"model": self.name, "prompt": PROMPT, "max_tokens": 1500,
                           "temperature": 0, "ignore_eos": True, "stream": True})
        sock = socket.create_connection(("127.0.0.1", self.s.port))
        sock.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
        received = b""
        while received.count(b"data:") < 3:
            received += sock.recv(4096)
        running = self.s.metrics()["nnsc_kv_blocks_used"]
        sock.close()
        deadline = time.time() + 30
        while time.time() < deadline:
            m = self.s.metrics()
            if m['nnsc_requests_total{outcome="aborted"}'] > before['nnsc_requests_total{outcome="aborted"}'] \
                    and m["nnsc_kv_blocks_used"] == 0 and m["nnsc_num_requests_running"] == 0:
                break
            time.sleep(0.2)
        else:
            expect(False, f"the disconnected request was not aborted: {self.s.metrics()}")
        expect(running > 0, "the streaming request held no KV blocks")
        after = self.complete(PROMPT, 2)
        expect(after["choices"][0]["finish_reason"] == "length", "plain request after a disconnect")
        print(f"disconnect: the request of a client gone mid-stream is aborted and its {int(running)} KV blocks freed; the engine goes on")

    def metrics(self):
        m = self.s.metrics()
        expect(m['nnsc_compile_cache_total{result="hit"}'] > 0, "no compile-cache hit")
        expect(m["nnsc_engine_step_seconds_count"] > 0, "no engine steps counted")
        expect(m["nnsc_generation_tokens_total"] > 0, "no generated tokens counted")
        print("metrics: requests, tokens, KV blocks, step latency and compile cache are reported")


def main():
    nns_serve, nns_run, model, src, work = sys.argv[1:6]
    with Server(nns_serve, ["--model", model, "--inline-save-bytes", "65536"]) as server:
        c = Checks(server, nns_run, model, src, work)
        plain = c.plain()
        c.logprobs()
        c.steering(plain)
        c.canonical()
        c.streaming()
        c.chat()
        c.isolation()
        c.handles()
        c.bad_requests()
        c.disconnect()
        c.metrics()


if __name__ == "__main__":
    main()
