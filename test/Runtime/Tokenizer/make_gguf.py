"""Writes a tiny GGUF that carries only a SentencePiece-style tokenizer.

  make_gguf.py OUT.gguf KIND

KIND: `no-scores` (llama, neither merges nor scores), `short-scores` (fewer scores than
tokens), `gemma` (architecture gemma3, no scores: merges ranked by token position, a token of
two spaces stored as spaces).
"""

import sys

import gguf

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"]


def main():
    path, kind = sys.argv[1:3]
    arch = "gemma3" if kind == "gemma" else "llama"
    # "bc" comes before "ab": ranked by position "bc" merges first, by score "ab" would.
    tokens = SPECIALS + ["a", "b", "c", "bc", "ab", "  ", "\u2581", "<start_of_turn>"]
    scores = [0.0] * 4 + [-1.0, -2.0, -3.0, -20.0, -10.0, -5.0, -4.0, 0.0]
    types = [3, 3, 3, 2] + [1] * 5 + [4, 1, 3]
    writer = gguf.GGUFWriter(path, arch)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    if kind == "short-scores":
        writer.add_token_scores(scores[:-1])
    writer.add_token_types(types)
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_add_bos_token(kind == "gemma")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
