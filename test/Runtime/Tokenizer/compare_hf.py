"""Compares nns-tokenize with Hugging Face `tokenizers`/`transformers` on a generated corpus.

  compare_hf.py smollm2 TOOL MODEL.gguf WORKDIR   the SmolLM2 GGUF and the tokenizer.json
                                                  transformers converts it to
  compare_hf.py trained TOOL WORKDIR              tiny tokenizers trained here: Llama 3 and
                                                  Qwen2 regexes, GPT-2 with prefix space,
                                                  SentencePiece-style BPE with byte fallback
  compare_hf.py chat TOOL MODEL.gguf WORKDIR      the chat template against apply_chat_template
  compare_hf.py gemma3 TOOL MODEL.gguf WORKDIR   the Gemma 3 GGUF (SentencePiece, no merges)
                                                  against the transformers tokenizer of the
                                                  same file (converted once, test/lib/reference.py)

For every line the ids must be identical, decode (with and without special tokens) must be
identical, and the streaming decoder's pieces must be valid UTF-8 that concatenate to the
decoded text. Prints one summary line per tokenizer; exits non-zero on any difference.
"""

import json
import os
import subprocess
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

from tokenizers import (Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers,
                        processors, trainers)

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
REPLACEMENT = "\u2581"


def run_tool(tool, source_args, lines, work, name):
    path = os.path.join(work, name + ".jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    out = subprocess.run([tool] + source_args + ["--lines", path, "--add-special"],
                         check=True, capture_output=True, text=True, encoding="utf-8")
    # Only "\n" ends a record: the JSON may hold U+2028 or U+0085 unescaped.
    return [json.loads(l) for l in out.stdout.split("\n") if l]


def has_split_character(ref, ids):
    """True if some token boundary falls inside a character (a prefix decodes to U+FFFD)."""
    return any(ref.decode(ids[:i], skip_special_tokens=False).endswith("\ufffd")
               for i in range(1, len(ids)))


def compare(name, tool, source_args, ref, lines, work, bos_text=None):
    """With `bos_text`, decode(encode(x)) must be exactly `bos_text` + x on every line."""
    results = run_tool(tool, source_args, lines, work, name)
    assert len(results) == len(lines), f"{name}: {len(results)} results for {len(lines)} lines"
    failures = []
    tokens = roundtrip = ref_roundtrip = roundtrip_skip = ref_roundtrip_skip = split_lines = 0
    for line, got in zip(lines, results):
        want = ref.encode(line, add_special_tokens=True).ids
        tokens += len(want)
        text = ref.decode(want, skip_special_tokens=False)
        text_skip = ref.decode(want, skip_special_tokens=True)
        problems = []
        if got["ids"] != want:
            problems.append(f"ids {got['ids']} != {want}")
        if got["text"] != text:
            problems.append(f"decode {got['text']!r} != {text!r}")
        if got["text_skip"] != text_skip:
            problems.append(f"decode(skip) {got['text_skip']!r} != {text_skip!r}")
        if not got["stream_valid"] or "".join(got["stream"]) != got["text"]:
            problems.append(f"stream {got['stream']!r} does not spell {got['text']!r}")
        if "\ufffd" not in got["text"] and any("\ufffd" in p for p in got["stream"]):
            problems.append(f"stream emitted a partial character: {got['stream']!r}")
        if bos_text is not None and got["text"] != bos_text + line:
            problems.append(f"decode(encode(x)) {got['text']!r} != {bos_text + line!r}")
        if problems:
            failures.append((line, problems))
        roundtrip += got["text"] == (bos_text or "") + line
        ref_roundtrip += text == (bos_text or "") + line
        roundtrip_skip += got["text_skip"] == line
        ref_roundtrip_skip += text_skip == line
        split_lines += has_split_character(ref, want)
    for line, problems in failures[:10]:
        print(f"{name}: MISMATCH on {line!r}", file=sys.stderr)
        for p in problems:
            print(f"    {p}", file=sys.stderr)
    print(f"{name}: {len(lines)} lines, {tokens} tokens, {len(failures)} mismatches; "
          f"decode(encode(x)) == x on {roundtrip} lines (Hugging Face: {ref_roundtrip}), "
          f"skipping special tokens on {roundtrip_skip} (Hugging Face: {ref_roundtrip_skip}); "
          f"{split_lines} lines split a character across tokens")
    return not failures


def smollm2(tool, model, work):
    from transformers import AutoTokenizer
    os.symlink(os.path.abspath(model), os.path.join(work, "model.gguf"))
    hf = AutoTokenizer.from_pretrained(work, gguf_file="model.gguf")
    saved = os.path.join(work, "converted")
    hf.save_pretrained(saved)
    json_path = os.path.join(saved, "tokenizer.json")
    converted = Tokenizer.from_file(json_path)
    # tokenizer.ggml.pre = "smollm" stands for the pre-tokenizer of SmolLM2's own
    # tokenizer.json (single digits, then the GPT-2 regex), which transformers' GGUF
    # conversion does not reproduce; that is the reference for the GGUF route.
    spec = json.loads(converted.to_str())
    spec["pre_tokenizer"] = json.loads(pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]).__getstate__())
    original = Tokenizer.from_str(json.dumps(spec))
    lines = corpus.corpus()
    differ = sum(converted.encode(l).ids != original.encode(l).ids for l in lines)
    print(f"smollm2: transformers' GGUF conversion differs from the 'smollm' pre-tokenizer "
          f"on {differ} lines")
    ok = compare("smollm2-gguf", tool, ["--gguf", model], original, lines, work)
    ok &= compare("smollm2-tokenizer.json", tool, ["--json", json_path], converted, lines, work)
    return ok


def train(tokenizer, vocab_size, special, lines, **kwargs):
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special,
                                  show_progress=False, **kwargs)
    tokenizer.train_from_iterator(lines, trainer)
    return tokenizer


def with_byte_fallback(tokenizer):
    """Adds <0x00>..<0xFF> to the model vocabulary and turns byte fallback on."""
    spec = json.loads(tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    spec["model"]["byte_fallback"] = True
    spec["model"]["fuse_unk"] = True
    return Tokenizer.from_str(json.dumps(spec))


def trained(tool, work):
    train_lines = corpus.corpus(count=1500, seed=1)
    lines = corpus.corpus()
    chatml = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    cases = {}

    for name, regex, ignore in [("llama3", LLAMA3, True), ("qwen2", QWEN2, False)]:
        t = Tokenizer(models.BPE(ignore_merges=ignore))
        t.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(regex), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        t.decoder = decoders.ByteLevel()
        cases[name] = train(t, 3000, chatml, train_lines, initial_alphabet=alphabet)

    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    t.decoder = decoders.ByteLevel()
    t.post_processor = processors.ByteLevel(trim_offsets=True)
    cases["gpt2-prefix-space"] = train(t, 2000, chatml, train_lines, initial_alphabet=alphabet)

    spm_special = ["<unk>", "<s>", "</s>"]
    bos = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    t = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    t.normalizer = normalizers.Sequence([normalizers.Prepend(REPLACEMENT),
                                         normalizers.Replace(" ", REPLACEMENT)])
    t.decoder = decoders.Sequence([decoders.Replace(REPLACEMENT, " "), decoders.ByteFallback(),
                                   decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    t.post_processor = bos
    cases["spm-llama2"] = with_byte_fallback(
        train(t, 1500, spm_special, train_lines, limit_alphabet=80))

    t = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    t.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first", split=False)
    t.decoder = decoders.Sequence([decoders.Metaspace(prepend_scheme="first", split=False),
                                   decoders.ByteFallback(), decoders.Fuse()])
    t.post_processor = bos
    cases["spm-metaspace-first"] = with_byte_fallback(
        train(t, 1500, spm_special, train_lines, limit_alphabet=80))

    t = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Metaspace(prepend_scheme="always", split=True)])
    t.decoder = decoders.Sequence([decoders.Metaspace(prepend_scheme="always", split=True),
                                   decoders.ByteFallback(), decoders.Fuse()])
    t.post_processor = bos
    cases["spm-metaspace-split"] = with_byte_fallback(
        train(t, 1500, spm_special, train_lines, limit_alphabet=80))

    ok = spm_gguf(tool, cases["spm-llama2"], lines, work)
    for name, t in cases.items():
        path = os.path.join(work, name, "tokenizer.json")
        os.makedirs(os.path.dirname(path))
        t.save(path)
        ok &= compare(name, tool, ["--json", path], Tokenizer.from_file(path), lines, work)
    return ok


def spm_gguf(tool, tokenizer, lines, work):
    """A llama.cpp-style SentencePiece GGUF (tokens, scores, types, no merges) written from a
    trained tokenizer, compared with what transformers makes of the same GGUF."""
    import gguf
    import numpy as np
    from transformers import AutoTokenizer
    spec = json.loads(tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.get)
    # A merged token scores by how early its merge was learned, as in SentencePiece.
    rank = {}
    for i, merge in enumerate(spec["model"]["merges"]):
        rank.setdefault("".join(merge if isinstance(merge, list) else merge.split(" ")), i)
    types = [2 if t == "<unk>" else 3 if t in ("<s>", "</s>") else
             6 if len(t) == 6 and t.startswith("<0x") else 1 for t in tokens]
    path = os.path.join(work, "spm.gguf")
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_block_count(1)
    writer.add_context_length(64)
    writer.add_embedding_length(8)
    writer.add_feed_forward_length(16)
    writer.add_head_count(2)
    writer.add_head_count_kv(2)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([-float(rank.get(t, 0)) for t in tokens])
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_tensor("token_embd.weight", np.zeros((len(tokens), 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    hf = AutoTokenizer.from_pretrained(work, gguf_file="spm.gguf")
    converted = os.path.join(work, "spm-gguf-converted")
    hf.save_pretrained(converted)
    reference = Tokenizer.from_file(os.path.join(converted, "tokenizer.json"))
    return compare("spm-gguf", tool, ["--gguf", path], reference, lines, work)


class TransformersReference:
    """A transformers tokenizer answering the `tokenizers` calls compare() makes."""

    def __init__(self, hf):
        self.hf = hf

    def encode(self, text, add_special_tokens=True):
        return types.SimpleNamespace(ids=self.hf.encode(text, add_special_tokens=add_special_tokens))

    def decode(self, ids, skip_special_tokens=False):
        return self.hf.decode(ids, skip_special_tokens=skip_special_tokens)


def gemma3(tool, model, work):
    """transformers' tokenizer of the GGUF, from the reference directory test/lib/reference.py
    converts once per file and transformers version (shared with the model tests)."""
    from transformers import AutoTokenizer
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "lib"))
    import reference
    hf = AutoTokenizer.from_pretrained(reference.gguf_reference_dir(model))
    print(f"gemma3: transformers' tokenizer ({type(hf).__name__}, {len(hf)} tokens)")
    lines = corpus.corpus(specials=corpus.GEMMA_SPECIALS, extra_lines=corpus.GEMMA_LINES)
    start = time.monotonic()
    run_tool(tool, ["--gguf", model], [""], work, "gemma3-load")
    print(f"gemma3: nns-tokenize loads the GGUF tokenizer in {time.monotonic() - start:.2f} s")
    return compare("gemma3-gguf", tool, ["--gguf", model], TransformersReference(hf), lines,
                   work, bos_text=hf.bos_token)


CONVERSATIONS = [
    ([{"role": "user", "content": "Hello!"}], True),
    ([{"role": "user", "content": "Hello!"}], False),
    ([{"role": "system", "content": "You are terse."},
      {"role": "user", "content": "What is 2+2?"}], True),
    ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! 😀"},
      {"role": "user", "content": "Translate 'cat' to 日本語\nplease."}], True),
    ([{"role": "system", "content": ""}, {"role": "user", "content": "  spaces  "}], True),
    ([{"role": "assistant", "content": "I start."}, {"role": "user", "content": "ok"}], False),
]


def chat(tool, model, work):
    from transformers import AutoTokenizer
    os.symlink(os.path.abspath(model), os.path.join(work, "model.gguf"))
    hf = AutoTokenizer.from_pretrained(work, gguf_file="model.gguf")
    saved = os.path.join(work, "converted")
    hf.save_pretrained(saved)
    ok = True
    count = 0
    for i, (messages, gen) in enumerate(CONVERSATIONS):
        want = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen)
        path = os.path.join(work, f"chat{i}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"messages": messages, "add_generation_prompt": gen}, f)
        for source in (["--gguf", model], ["--json", os.path.join(saved, "tokenizer.json")]):
            got = json.loads(subprocess.run([tool] + source + ["--chat", path], check=True,
                                            capture_output=True, text=True).stdout)
            count += 1
            if got != want:
                ok = False
                print(f"chat: MISMATCH {source[0]} {messages!r}\n  got  {got!r}\n  want {want!r}",
                      file=sys.stderr)
    print(f"chat: {count} renders compared with apply_chat_template, "
          f"{'all identical' if ok else 'MISMATCHES'}")
    return ok


def main():
    mode = sys.argv[1]
    if mode == "smollm2":
        ok = smollm2(*sys.argv[2:5])
    elif mode == "trained":
        ok = trained(*sys.argv[2:4])
    elif mode == "chat":
        ok = chat(*sys.argv[2:5])
    elif mode == "gemma3":
        ok = gemma3(*sys.argv[2:5])
    else:
        sys.exit(f"unknown mode {mode}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
