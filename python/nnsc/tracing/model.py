"""LanguageModel: NNsight's entry point over an in-process nnsc engine."""

from ..llm import LLM
from .context import Tracer
from .envoy import Envoy, build_tree
from .errors import TraceError


class LanguageModel(Envoy):
    """`model = LanguageModel(path=None, **llm_options)`: an `nnsc.LLM` (the bundled SmolLM2
    by default; options as `nnsc.LLM`'s; or an `nnsc.LLM` already loaded, to share its
    engine) seen as nnsight's LanguageModel. The envoy tree is
    the Hugging Face module tree (`model.model.layers[3].mlp`), built from the model's sites.

    `with model.trace(prompts):` runs the prompt pass; `with model.generate(prompts,
    max_new_tokens=N) as tracer:` generates. The code inside is recorded, compiled to nns and
    run when the block ends (docs/Python.md, "NNsight code")."""

    def __init__(self, path=None, **llm_options):
        llm = path if isinstance(path, LLM) and not llm_options else LLM(path, **llm_options)
        sites = {site.path: site for site in llm.sites()}
        Envoy.__init__(self, self, "", {}, {})
        object.__setattr__(self, "llm", llm)
        object.__setattr__(self, "_site_info", sites)
        object.__setattr__(self, "_tracer_stack", [])
        # `with` line (file, line) -> {recording key: (plans, programs)} (Tracer._plans).
        object.__setattr__(self, "_programs_at", {})
        self._children.update(build_tree(self, sites))

    @property
    def tokenizer(self):
        return self.llm.tokenizer

    def trace(self, prompts=None, **kwargs):
        """The prompt pass over `prompts` (a prompt or a list: text or token ids)."""
        if kwargs:
            raise TypeError("model.trace takes prompts only, got %s" % ", ".join(kwargs))
        return Tracer(self, prompts, generating=False)

    def generate(self, prompts=None, max_new_tokens=16, do_sample=False, temperature=None,
                 top_k=None, top_p=None, seed=None, min_new_tokens=None, pad_token_id=None):
        """Generation of `max_new_tokens` tokens; greedy unless `do_sample`.
        `min_new_tokens=max_new_tokens` generates them all, end-of-sequence or not (the engine's
        ignore_eos); `pad_token_id` is accepted and unused: nnsc does not pad prompts."""
        sampling = {"temperature": 0.0} if not do_sample else {
            k: v for k, v in dict(temperature=1.0 if temperature is None else temperature,
                                  top_k=top_k, top_p=top_p, seed=seed).items()
            if v is not None}
        if min_new_tokens:
            if min_new_tokens < max_new_tokens:
                raise TraceError("min_new_tokens=%d below max_new_tokens=%d"
                                 % (min_new_tokens, max_new_tokens),
                                 "the engine stops at the end-of-sequence token or ignores "
                                 "it: give min_new_tokens=max_new_tokens, or leave it out")
            sampling["ignore_eos"] = True
        return Tracer(self, prompts, generating=True, max_new_tokens=int(max_new_tokens),
                      sampling=sampling)

    def edit(self, *args, **kwargs):
        """NNsight's persistent edit: not in nnsc.LanguageModel (docs/Python.md, "NNsight
        code")."""
        raise TraceError("model.edit() is not in nnsc.LanguageModel",
                         "write the edit's interventions in each trace, where the model reaches "
                         "those modules; or bind the edit, written as .nns, to every request: "
                         "nns-run --edit FILE.nns, nns-serve --edit FILE.nns")

    def _enter(self, tracer):
        if self._tracer_stack:
            raise TraceError("a trace inside another trace", "end the first block before "
                             "starting the next; use tracer.invoke for several prompts")
        self._tracer_stack.append(tracer)

    def _exit(self, tracer):
        self._tracer_stack.remove(tracer)

    def _active_tracer(self, what):
        if not self._tracer_stack:
            raise TraceError("%s outside a trace" % what,
                             "use it inside `with model.trace(...)` or "
                             "`with model.generate(...)`")
        return self._tracer_stack[-1]

    def __repr__(self):
        return "nnsc.LanguageModel(%s)" % self.llm.model_path
