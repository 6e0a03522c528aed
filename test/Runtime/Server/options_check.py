"""nns-serve's start-time options: a persistent edit (--edit) against the same edit in
nns-run, a bundle registered by name (--bundle), --no-programs and --api-key.

Usage: options_check.py NNS_SERVE NNS_RUN NNSC MODEL INPUTS WORKDIR
(INPUTS: test/Integration/Inputs, with the edit-*.nns programs of edit.test.)
"""
import os
import subprocess
import sys

import httpx
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve import Server, run_nns  # noqa: E402

PROMPT = "The capital of France is"


def expect(ok, what):
    if not ok:
        sys.exit(f"FAIL: {what}")


def main():
    nns_serve, nns_run, nnsc, model, inputs, work = sys.argv[1:7]
    os.makedirs(work, exist_ok=True)
    d = torch.randn(576, generator=torch.Generator().manual_seed(0))
    params = os.path.join(work, "d.safetensors")
    save_file({"d": d / d.norm() * 4}, params)
    capture = os.path.join(work, "capture.nnsb")
    subprocess.run([nnsc, os.path.join(inputs, "edit-capture.nns"), "-emit=bundle", "--model",
                    model, "-o", capture], check=True)
    with open(os.path.join(inputs, "edit-combined.nns")) as f:
        combined = f.read()
    ref = run_nns(nns_run, model, [PROMPT], 4, os.path.join(work, "ref"), trace=combined,
                  params={"d": (d / d.norm() * 4)})
    args = ["--model", model, "--edit", os.path.join(inputs, "edit-steer.nns"), "--edit-param",
            f"d=@{params}", "--bundle", f"capture={capture}", "--no-programs", "--api-key", "k3y"]
    with Server(nns_serve, args) as s:
        auth = {"Authorization": "Bearer k3y"}
        http = httpx.Client(base_url=s.url, timeout=120, headers=auth)
        name = http.get("/v1/models").json()["data"][0]["id"]
        body = {"model": name, "prompt": PROMPT, "max_tokens": 4, "temperature": 0,
                "return_token_ids": True}
        r = http.post("/v1/completions", json=dict(body, nns={"bundle": "capture"})).json()
        ids = r["choices"][0]["token_ids"]
        expect(ids == ref[0][0], f"edit + bundle tokens {ids} != the combined program's {ref[0][0]}")
        saves = {k: v for k, v in r["nns"]["saves"].items()}
        expect(sorted(saves) == sorted(ref[0][1]), f"saves {sorted(saves)} != {sorted(ref[0][1])}")
        import base64
        h = torch.frombuffer(bytearray(base64.b64decode(saves["h"]["data"])), dtype=torch.float32)
        expect(torch.equal(h, ref[0][1]["h"].flatten()), "the edited capture differs from nns-run's")
        plain = http.post("/v1/completions", json=body).json()
        expect(plain["choices"][0]["token_ids"] == ref[0][0], "a plain request did not get the edit")
        expect("nns" not in plain, "the edit's saves were returned")
        print("edit: a registered bundle's saves and tokens under --edit equal nns-run's program "
              "with both; plain requests are edited and get no saves")
        r = http.post("/v1/completions", json=dict(body, nns={"program": "trace {}"}))
        expect(r.status_code == 400 and r.json()["error"]["code"] == "programs_disabled",
               f"--no-programs: {r.status_code} {r.text[:200]}")
        r = httpx.post(s.url + "/v1/completions", json=body)
        expect(r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key",
               f"no key: {r.status_code}")
        r = httpx.post(s.url + "/v1/completions", json=body, headers={"Authorization": "Bearer x"})
        expect(r.status_code == 401, f"wrong key: {r.status_code}")
        expect(httpx.get(s.url + "/health").status_code == 200, "/health needs no key")
        print("options: --no-programs refuses source, --api-key refuses missing and wrong keys")

    # Back-pressure: one sequence at a time and one waiting; the rest get 503 + Retry-After.
    with Server(nns_serve, ["--model", model, "--max-num-seqs", "1", "--max-num-batched-tokens",
                            "64", "--max-queued", "1"]) as s:
        name = httpx.get(s.url + "/v1/models").json()["data"][0]["id"]
        body = {"model": name, "prompt": PROMPT, "max_tokens": 40, "temperature": 0,
                "ignore_eos": True}
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            replies = list(pool.map(lambda _: httpx.post(s.url + "/v1/completions", json=body,
                                                         timeout=120), range(6)))
        busy = [r for r in replies if r.status_code == 503]
        done = [r for r in replies if r.status_code == 200]
        expect(busy and done and len(busy) + len(done) == 6,
               f"statuses {[r.status_code for r in replies]}")
        expect(all(r.headers.get("retry-after") == "1" and
                   r.json()["error"]["code"] == "server_busy" for r in busy), busy[0].text)
        expect(s.metrics()['nnsc_requests_total{outcome="rejected_busy"}'] == len(busy),
               "rejected requests not counted")
        print(f"back-pressure: past --max-queued, {len(busy)} of 6 requests got 503 with "
              "Retry-After; the others completed")


if __name__ == "__main__":
    main()
