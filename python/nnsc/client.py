"""Client: the same generate API, served by an `nns-serve` over HTTP (docs/Server.md).

Each request is one POST /v1/completions with the program's source (the server compiles and
caches it) and params under `nns`; requests go out concurrently so the server batches them.
Saves come back as safetensors (inline, or behind a handle that is fetched)."""

import base64
import concurrent.futures
import json
import os
import urllib.error
import urllib.request

import torch

from .errors import CompileError, ServerError
from .program import Program
from .requests import normalize_params, normalize_prompts, param_tensor, token_id_list
from .result import Completion, Result, Saves

_DTYPE_NAMES = {torch.float32: "float32", torch.float64: "float64", torch.bfloat16: "bfloat16",
                torch.float16: "float16", torch.int64: "int64", torch.int32: "int32",
                torch.bool: "bool"}


def _param_json(name, value):
    t = param_tensor(name, value)
    if t.dtype not in _DTYPE_NAMES:
        t = t.to(torch.float32 if t.is_floating_point() else torch.int64)
    # reshape(-1): a 0-d tensor cannot be viewed as bytes.
    data = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return {"dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape),
            "data": base64.b64encode(data).decode()}


class Client:
    """A client of an nns-serve at `base_url` ("http://127.0.0.1:8000"), with its API key if it
    was started with --api-key."""

    def __init__(self, base_url, api_key=None, timeout=600.0, max_concurrency=32):
        base_url = base_url.rstrip("/")
        self.base_url = base_url[:-3] if base_url.endswith("/v1") else base_url
        self.api_key = api_key
        self.timeout = timeout
        self.max_concurrency = max_concurrency
        models = self._request("GET", "/v1/models")["data"]
        self.model = models[0]["id"]
        self.max_model_len = models[0].get("max_model_len")
        self.tokenizer = ClientTokenizer(self)

    def _request(self, method, path, body=None, raw=False):
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers,
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                payload = r.read()
        except urllib.error.HTTPError as e:
            payload = e.read()
            try:
                err = json.loads(payload)["error"]
            except (ValueError, KeyError, TypeError):
                raise ServerError(e.code, None, payload.decode(errors="replace")) from None
            raise _error(e.code, err) from None
        return payload if raw else json.loads(payload)

    def generate(self, prompts, program=None, params=None, *, trace=None, bundle=None,
                 max_tokens=None, temperature=None, top_k=None, top_p=None, seed=None,
                 ignore_eos=None, stop_token_ids=None, batch_invariant=None, use_tqdm=True):
        """As LLM.generate. `program` is .nns source, a path to a .nns file or a Program
        compiled from source; `bundle` names a bundle registered with nns-serve --bundle.
        With a multi-invoke program, pass a list of prompts per request; the server checks
        the count against the trace's invokes."""
        source = self._source(program)
        if source is not None and bundle is not None:
            raise ValueError("give either program or bundle, not both")
        requests = normalize_prompts(prompts, None)
        params = normalize_params(params, len(requests))
        bodies = []
        for i, (request, given) in enumerate(zip(requests, params)):
            body = {"model": self.model, "prompt": request[0] if len(request) == 1 else request,
                    "return_token_ids": True}
            # A field not given is left to the server, whose defaults are every door's.
            for name, value, kind in (("max_tokens", max_tokens, int),
                                      ("temperature", temperature, float),
                                      ("top_p", top_p, float), ("top_k", top_k, int),
                                      ("ignore_eos", ignore_eos, bool),
                                      ("batch_invariant", batch_invariant, bool)):
                if value is not None:
                    body[name] = kind(value)
            if seed is not None:
                body["seed"] = int(seed)
            if stop_token_ids:
                body["stop_token_ids"] = [int(t) for t in stop_token_ids]
            if source is not None or bundle is not None:
                nns = {"program": source} if source is not None else {"bundle": bundle}
                if trace:
                    nns["trace"] = trace
                if given:
                    nns["params"] = {k: _param_json(k, v) for k, v in given.items()}
                nns["saves_format"] = "safetensors"
                body["nns"] = nns
            elif given:
                raise ValueError("params are given but there is no program to take them")
            bodies.append(body)
        return self._run(requests, bodies, use_tqdm)

    def _source(self, program):
        if program is None:
            return None
        if isinstance(program, Program):
            if program.source is None:
                raise ValueError("nns-serve compiles programs itself and takes no bundle files; "
                                 "send the .nns source, or register the bundle with nns-serve "
                                 "--bundle NAME=FILE and pass bundle=NAME")
            return program.source
        path = os.fspath(program) if isinstance(program, os.PathLike) else program
        if not isinstance(path, str):
            raise TypeError("program must be .nns source, a path or a Program, got %s"
                            % type(program).__name__)
        if "\n" not in path and path.endswith(".nnsb"):
            return self._source(Program(path))
        if "\n" not in path and path.endswith(".nns") and os.path.exists(path):
            with open(path) as f:
                return f.read()
        return path

    def _run(self, requests, bodies, use_tqdm):
        bar = None
        if use_tqdm:
            from tqdm.auto import tqdm
            bar = tqdm(total=len(bodies), desc="Processed prompts", unit="req",
                       dynamic_ncols=True)
        pool = concurrent.futures.ThreadPoolExecutor(min(self.max_concurrency, len(bodies)))
        try:
            futures = [pool.submit(self._one, i, r, b) for i, (r, b) in
                       enumerate(zip(requests, bodies))]
            if bar is not None:
                for _ in concurrent.futures.as_completed(futures):
                    bar.update(1)
            return [f.result() for f in futures]
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            if bar is not None:
                bar.close()

    def _one(self, index, prompts, body):
        try:
            response = self._request("POST", "/v1/completions", body)
            error = None
        except _ProgramFailed as e:
            return Result(index=index, outputs=[], finish_reason="error", error=e.message)
        except (ValueError, CompileError) as e:
            raise type(e)("request %d: %s" % (index, e)) from None
        outputs = []
        for k, choice in enumerate(sorted(response["choices"], key=lambda c: c["index"])):
            outputs.append(Completion(
                prompt=prompts[k] if isinstance(prompts[k], str) else None,
                prompt_token_ids=choice.get("prompt_token_ids") or [],
                token_ids=choice.get("token_ids") or [], text=choice.get("text"),
                finish_reason=choice.get("finish_reason"), invoke=choice.get("invoke")))
        return Result(index=index, outputs=outputs, finish_reason=outputs[-1].finish_reason,
                      error=error, _saves=self._saves(response.get("nns") or {}))

    def _saves(self, nns):
        from safetensors.torch import load
        if "saves_safetensors" in nns:
            return Saves(load(base64.b64decode(nns["saves_safetensors"])))
        if "saves_handle" in nns:
            url = nns["saves_handle"]["url"]
            path = url[len(self.base_url):] if url.startswith("http") else url
            return Saves(load(self._request("GET", path, raw=True)))
        return Saves()


class ClientTokenizer:
    """The served model's tokenizer, through nns-serve's POST /v1/nns/tokenize and
    /v1/nns/detokenize: the same encode/decode as LLM.tokenizer."""

    def __init__(self, client):
        self._client = client

    def encode(self, text, add_special_tokens=True):
        if not isinstance(text, str):
            raise TypeError("encode takes a string, got %s" % type(text).__name__)
        return self._client._request("POST", "/v1/nns/tokenize", {
            "text": text, "add_special_tokens": bool(add_special_tokens)})["ids"]

    def decode(self, token_ids, skip_special_tokens=True):
        """The text of `token_ids`: an int, a list of ints or an integer tensor (a save of
        argmax ids, flattened)."""
        return self._client._request("POST", "/v1/nns/detokenize", {
            "ids": token_id_list(token_ids),
            "skip_special_tokens": bool(skip_special_tokens)})["text"]


class _ProgramFailed(Exception):
    def __init__(self, message):
        super().__init__(message)
        self.message = message


def _error(status, err):
    """The exception for an OpenAI error body: a program that fails while running belongs on its
    Result; compile errors, bad values and server refusals are raised."""
    code, message = err.get("code"), err.get("message", "")
    if code == "program_failed":
        return _ProgramFailed(message)
    if code == "compile_error":
        return CompileError(message)
    if status == 400:
        return ValueError(message)
    return ServerError(status, code, message)

