"""Writes a tiny random Llama (4 layers, hidden argv[2], default 64) with save_pretrained to
argv[1]."""
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
hidden = int(sys.argv[2]) if len(sys.argv) > 2 else 64
config = LlamaConfig(vocab_size=128, hidden_size=hidden, intermediate_size=96, num_hidden_layers=4,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
LlamaForCausalLM(config).save_pretrained(sys.argv[1])
