"""Writes the generated seed inputs of the fuzz corpora (test/Fuzz/corpus/<target>/seed-*):
a tiny GGUF model (made with the `gguf` package: llama metadata, a 300-token byte-level
tokenizer with merges and a chat template, three small tensors), safetensors files, config.json
files, tokenizer.json files, chat templates with conversations, nns-serve request bodies,
prompts files and inline param values. No weights of any real model: every tensor is a few
made-up numbers. Run with the project venv:  .venv/bin/python test/Fuzz/make_seeds.py
"""
import json
import os
import struct
import sys
import tempfile

import gguf
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
MODEL = os.path.join(HERE, "..", "..", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def put(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(CORPUS, target, "seed-" + name), "wb") as f:
        f.write(data)


def byte_chars():
    """GPT-2's byte-to-character table (the byte-level pre-tokenizer's alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


BYTES = byte_chars()
MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a")]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def byte_level_vocab():
    vocab = [BYTES[b] for b in range(256)]
    vocab += [l + r for l, r in MERGES]
    return vocab


CHATML = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
          "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
          "Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
          "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
          "{{ '<|im_start|>assistant\n' }}{% endif %}")


def tiny_gguf(path, arch="llama", tensors=True, tokenizer=True):
    w = gguf.GGUFWriter(path, arch)
    w.add_block_count(2)
    w.add_context_length(64)
    w.add_embedding_length(8)
    w.add_feed_forward_length(16)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(len(byte_level_vocab()) + len(SPECIALS))
    if tokenizer:
        tokens = byte_level_vocab() + SPECIALS
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("smollm")
        w.add_token_list(tokens)
        w.add_token_types([1] * (len(tokens) - len(SPECIALS)) + [3] * len(SPECIALS))
        w.add_token_merges([l + " " + r for l, r in MERGES])
        w.add_bos_token_id(len(tokens) - 3)
        w.add_eos_token_id(len(tokens) - 1)
        w.add_chat_template(CHATML)
    if tensors:
        w.add_tensor("token_embd.weight", np.arange(64, dtype=np.float32).reshape(8, 8))
        w.add_tensor("output_norm.weight", np.ones(8, dtype=np.float32))
        w.add_tensor("blk.0.attn_norm.weight", np.ones(8, dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gguf_seeds():
    with tempfile.TemporaryDirectory() as tmp:
        for name, kwargs in [("tiny-llama.gguf", {}),
                             ("tiny-qwen2-notensors.gguf", {"arch": "qwen2", "tensors": False}),
                             ("tiny-notokenizer.gguf", {"tokenizer": False})]:
            path = os.path.join(tmp, name)
            tiny_gguf(path, **kwargs)
            put("fuzz-gguf", name, open(path, "rb").read())


def safetensors_file(tensors, metadata=None):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    f32 = np.arange(6, dtype=np.float32).tobytes()
    put("fuzz-safetensors", "two.safetensors", safetensors_file(
        {"a": ("F32", [2, 3], f32), "b": ("I64", [2], np.array([1, -1], np.int64).tobytes())},
        {"format": "pt"}))
    put("fuzz-safetensors", "bf16.safetensors",
        safetensors_file({"steer": ("BF16", [4], b"\x80\x3f" * 4)}))
    put("fuzz-safetensors", "scalar.safetensors",
        safetensors_file({"x": ("F64", [], struct.pack("<d", 0.5)), "e": ("U8", [0], b"")}))


def config_seeds():
    llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
             "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
             "num_attention_heads": 9, "num_key_value_heads": 3, "vocab_size": 49152,
             "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 100000,
             "tie_word_embeddings": True}
    put("fuzz-config-json", "llama.json", json.dumps(llama, indent=1))
    scaled = dict(llama, rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 8192})
    put("fuzz-config-json", "llama3-scaling.json", json.dumps(scaled))
    qwen2 = dict(llama, model_type="qwen2", architectures=["Qwen2ForCausalLM"],
                 attention_bias=True, rope_scaling={"type": "linear", "factor": 2.0})
    put("fuzz-config-json", "qwen2.json", json.dumps(qwen2))
    tiny = os.path.join(HERE, "..", "Inputs", "tiny-qwen3", "config.json")
    put("fuzz-config-json", "tiny-qwen3.json", open(tiny, "rb").read())


def tokenizer_json_seeds():
    vocab = {t: i for i, t in enumerate(byte_level_vocab())}
    added = [{"id": len(vocab) + i, "content": s, "special": True, "normalized": False,
              "single_word": False, "lstrip": False, "rstrip": False}
             for i, s in enumerate(SPECIALS)]
    byte_level = {"model": {"type": "BPE", "vocab": vocab,
                            "merges": [l + " " + r for l, r in MERGES]},
                  "added_tokens": added, "normalizer": None,
                  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                                    "trim_offsets": True, "use_regex": True},
                  "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                                     "trim_offsets": False, "use_regex": True},
                  "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                              "trim_offsets": True, "use_regex": True}}
    put("fuzz-tokenizer-json", "byte-level.json", json.dumps(byte_level))
    meta = "\u2581"
    sp_vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        sp_vocab["<0x%02X>" % b] = len(sp_vocab)
    for piece in [meta, "h", "e", "l", "o", meta + "h", "he", "ll", meta + "he", "llo"]:
        sp_vocab.setdefault(piece, len(sp_vocab))
    sentence_piece = {
        "model": {"type": "BPE", "vocab": sp_vocab, "unk_token": "<unk>", "byte_fallback": True,
                  "fuse_unk": True,
                  "merges": [[meta, "h"], ["h", "e"], ["l", "l"], [meta + "h", "e"],
                             ["ll", "o"]]},
        "added_tokens": [{"id": 0, "content": "<unk>", "special": True},
                         {"id": 1, "content": "<s>", "special": True},
                         {"id": 2, "content": "</s>", "special": True}],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": meta},
            {"type": "Replace", "pattern": {"String": " "}, "content": meta}]},
        "pre_tokenizer": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": meta}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1],
                                                      "tokens": ["<s>"]}}}}
    put("fuzz-tokenizer-json", "sentencepiece.json", json.dumps(sentence_piece))
    split = dict(byte_level, pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}]})
    put("fuzz-tokenizer-json", "split-digits.json", json.dumps(split))


def tokenize_seeds():
    for i, text in enumerate([
            "Hello, world!", "The capital of France is",
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
            "  leading spaces\t\ttabs\n\nnewlines   ", "naïve café — 日本語のテキスト 🤖 ñ",
            "x = [1, 2, 3]; print(x[-1])  # 12345678901234567890",
            "<|endoftext|><|im_end|>plain<|im_start", "\xff\xfe not utf-8 \xc3"]):
        put("fuzz-tokenize", "text-%d" % i,
            text.encode("latin-1") if text.startswith("\xff") else text.encode())


def chat_seeds():
    convs = [[("user", "Hi!")],
             [("system", "Be brief."), ("user", "What is 2+2?"), ("assistant", "4"),
              ("user", "And 3+3?")],
             [("developer", "x"), ("user", "")]]
    templates = {"smollm2": CHATML,
                 "no-default-system": "{% for message in messages %}" +
                 CHATML[CHATML.index("{% endif %}") + len("{% endif %}"):]}
    # The model's own template, as its GGUF carries it, where it differs.
    if os.path.exists(MODEL):
        own = gguf.GGUFReader(MODEL).fields["tokenizer.chat_template"].contents()
        if own != CHATML:
            templates["model"] = own
    for tname, template in templates.items():
        for i, conv in enumerate(convs):
            body = "\0".join(role + "\x01" + content for role, content in conv)
            put("fuzz-chat-template", "%s-%d" % (tname, i), template + "\0" + body)


def request_seeds():
    bodies = [
        (False, {"model": "m", "prompt": "hi", "max_tokens": 7, "temperature": 0, "top_p": 0.5,
                 "top_k": -1, "seed": 3, "stop": "\n", "stream": True,
                 "stream_options": {"include_usage": True},
                 "nns": {"program": "trace {}", "params": {"a": 1},
                         "saves_transport": "handle", "saves_format": "safetensors"}}),
        (False, {"model": "m", "prompt": [[1, 2], [3]], "logprobs": 2, "echo": False,
                 "return_token_ids": True, "ignore_eos": True, "n": 1}),
        (False, {"model": "m", "prompt": ["a", "b"], "stop": ["x", "y"],
                 "nns": {"bundle": "steer", "trace": "t",
                         "params": {"alpha": [1.5, 2], "on": True}, "saves_format": "json"}}),
        (True, {"model": "m", "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "max_completion_tokens": 5, "logprobs": True, "top_logprobs": 3,
            "frequency_penalty": 0, "presence_penalty": 0}),
        (True, {"model": "m", "messages": [{"role": "user", "content": "x"}],
                "stream": True, "nns": {"program": "trace { layers[0].output.save() }"}}),
    ]
    for i, (chat, body) in enumerate(bodies):
        put("fuzz-request", "body-%d" % i, ("1" if chat else "0") + json.dumps(body))


def prompts_seeds():
    put("fuzz-prompts", "mixed.jsonl",
        '{"prompt": "The capital of France is"}\n\n{"ids": [1, 504, 3458], "max_tokens": 4}\n'
        '{"prompt": "x", "bundle": false, "max_tokens": 1}\n')
    backend = os.path.join(HERE, "..", "Runtime", "Backend", "Inputs", "prompts.jsonl")
    put("fuzz-prompts", "backend.jsonl", open(backend, "rb").read())


def params_seeds():
    # First byte: dtype = b % 5 (f32, bf16, f16, i64, bool), shape = (b / 5) % 7
    # ([], [1], [3], [2, 2], [576], [0], [2, 0, 3]).
    for name, pick, text in [("f32-scalar", 0, "1.5"), ("f32-vector", 10, "1, -2.5e3, 0x1p4"),
                             ("i64-matrix", 18, "1,2,3,4"), ("bool-vector", 14, "true,false,1"),
                             ("bf16-576", 21, ",".join(["0.25"] * 576)),
                             ("f16-empty", 27, ""), ("i64-bad", 3, "1.5")]:
        put("fuzz-params", name, bytes([pick]) + text.encode())


def frontend_seeds():
    root = os.path.join(HERE, "..", "..")
    for d in [os.path.join(root, "examples", "canonical"), os.path.join(root, "test", "Frontend")]:
        for name in sorted(os.listdir(d)):
            if name.endswith(".nns"):
                put("fuzz-frontend", name, open(os.path.join(d, name), "rb").read())


if __name__ == "__main__":
    gguf_seeds()
    safetensors_seeds()
    config_seeds()
    tokenizer_json_seeds()
    tokenize_seeds()
    chat_seeds()
    request_seeds()
    prompts_seeds()
    params_seeds()
    frontend_seeds()
    print("seeds written under", CORPUS, file=sys.stderr)
