"""Normalizing generate's arguments, shared by LLM and Client: prompts into requests (a list of
prompts per request, one per invoke) and params into one {name: value} per request."""

import numbers

import numpy as np
import torch


def _is_token_ids(value):
    return (isinstance(value, (list, tuple)) and len(value) > 0
            and all(isinstance(t, numbers.Integral) and not isinstance(t, bool) for t in value))


def _one_prompt(value, where):
    """A prompt: a string, or token ids (a list of ints, a 1-D integer tensor or array)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (torch.Tensor, np.ndarray)):
        if value.ndim != 1 or value.dtype in (torch.float32, torch.float64, np.float32, np.float64):
            raise TypeError("%s: token ids must be a 1-D integer tensor, got %s of shape %s"
                            % (where, value.dtype, tuple(value.shape)))
        value = value.tolist()
    if _is_token_ids(value):
        return [int(t) for t in value]
    if isinstance(value, (list, tuple)) and len(value) == 0:
        raise ValueError("%s: empty prompt" % where)
    raise TypeError("%s: a prompt is a string or a list of token ids, got %s"
                    % (where, type(value).__name__))


def normalize_prompts(prompts, invokes):
    """Requests as lists of prompts, `invokes` each (None: as given, a request being one prompt
    or a list of prompts). One prompt (a string or token ids) is one request; otherwise
    `prompts` is a list with one entry per request, itself a list of prompts when the trace has
    invokes."""
    if isinstance(prompts, str) or _is_token_ids(prompts):
        prompts = [prompts]
    if not isinstance(prompts, (list, tuple)):
        raise TypeError("prompts must be a string, token ids or a list of them, got %s"
                        % type(prompts).__name__)
    if len(prompts) == 0:
        raise ValueError("no prompts")
    requests = []
    for i, request in enumerate(prompts):
        single = (isinstance(request, (str, torch.Tensor, np.ndarray)) or _is_token_ids(request)
                  or not isinstance(request, (list, tuple)))
        if invokes == 1 or (invokes is None and single):
            requests.append([_one_prompt(request, "prompt %d" % i)])
            continue
        if single:
            raise ValueError("request %d: the trace has %d invokes and takes a list of %d prompts "
                             "per request, one per invoke (e.g. [[clean, corrupt], ...])"
                             % (i, invokes, invokes))
        requests.append([_one_prompt(p, "request %d, prompt %d" % (i, k))
                         for k, p in enumerate(request)])
    return requests


def param_tensor(name, value):
    """A CPU tensor of a param value: a torch.Tensor, a numpy array, a Python number or bool,
    or a (nested) list of numbers."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().contiguous()
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError("param '%s': a numpy array of %s is not a number type"
                            % (name, value.dtype))
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, (bool, numbers.Number, list, tuple)):
        try:
            return torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError) as e:
            raise TypeError("param '%s': %s" % (name, e)) from None
    raise TypeError("param '%s': expected a torch.Tensor, a numpy array, a number or a list, "
                    "got %s" % (name, type(value).__name__))


def token_id_list(token_ids):
    """Token ids to decode as a list of ints: an int, a list of ints, or an integer tensor or
    array of any shape (flattened: a save of argmax ids, a 0-d one included)."""
    if isinstance(token_ids, (torch.Tensor, np.ndarray)):
        if token_ids.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64) or (
                isinstance(token_ids, np.ndarray) and token_ids.dtype.kind == "f"):
            raise TypeError("token ids must be integers, got a tensor of %s" % token_ids.dtype)
        return [int(t) for t in token_ids.reshape(-1).tolist()]
    if isinstance(token_ids, numbers.Integral) and not isinstance(token_ids, bool):
        return [int(token_ids)]
    if isinstance(token_ids, (list, tuple)) and (len(token_ids) == 0 or _is_token_ids(token_ids)):
        return [int(t) for t in token_ids]
    raise TypeError("token ids must be an int, a list of ints or an integer tensor, got %s"
                    % type(token_ids).__name__)


def normalize_params(params, count):
    """One {name: value} per request: `params` is None, one dict for every request, or a list of
    `count` dicts."""
    if params is None:
        return [{} for _ in range(count)]
    if isinstance(params, dict):
        return [params] * count
    if isinstance(params, (list, tuple)):
        if len(params) != count:
            raise ValueError("params is a list of %d dicts but there are %d requests"
                             % (len(params), count))
        for i, p in enumerate(params):
            if not isinstance(p, dict):
                raise TypeError("params[%d] must be a dict, got %s" % (i, type(p).__name__))
        return list(params)
    raise TypeError("params must be a dict (for every request) or a list of dicts (one per "
                    "request), got %s" % type(params).__name__)
