"""Write a tiny random-weight llama-architecture GGUF model for tests.

Usage: python tiny_model.py OUT.gguf

The model is nonsense (random weights, fixed seed) but llama.cpp loads and
runs it like any real model, so timing and token counting are real.

Design choices that make it convenient for load tests:
  * Tokenizer: sentencepiece-style ("llama"): <unk>, <s>, </s>, the 256 byte
    tokens <0x00>..<0xFF> (so any input text can be tokenized), single
    printable ASCII characters, and 676 two-letter "words" like "▁ab".
  * The model can only ever EMIT the lowercase words ("▁ab" -> " ab") and
    single lowercase letters: every generated token is visible, non-empty,
    valid UTF-8 text, and it never emits </s> (EOS), so a request always
    generates exactly max_tokens tokens. This is done with one embedding
    dimension that is a constant 1.0 for every token; output rows of tokens
    that must not be emitted get a large negative weight on that dimension.
"""
import string
import sys

import numpy as np
import gguf

N_EMBD, N_HEAD, N_LAYER, N_FF, N_CTX = 64, 4, 2, 128, 4096

# ---- vocabulary -----------------------------------------------------------
T = gguf.TokenType
tokens = ["<unk>", "<s>", "</s>"]
types = [T.UNKNOWN, T.CONTROL, T.CONTROL]
tokens += [f"<0x{b:02X}>" for b in range(256)]
types += [T.BYTE] * 256
tokens += ["\u2581"] + [c for c in string.printable[:94]]  # "▁" + '0'..'~'
types += [T.NORMAL] * 95
tokens += ["\u2581" + a + b for a in string.ascii_lowercase for b in string.ascii_lowercase]
types += [T.NORMAL] * 676
# Scores steer the sentencepiece merge: longer pieces are preferred.
scores = [0.0 if t != T.NORMAL else float(len(p)) for p, t in zip(tokens, types)]
n_vocab = len(tokens)
emittable = np.array([t == T.NORMAL and p.strip("\u2581").isalpha() and p.islower()
                      for p, t in zip(tokens, types)])

# ---- weights ---------------------------------------------------------------
rng = np.random.default_rng(1234)


def rand(*shape, std=0.02):
    return (rng.standard_normal(shape) * std).astype(np.float32)


# numpy shapes are (rows, cols) = (n_out, n_in); gguf reverses them for ggml.
embd = rand(n_vocab, N_EMBD)
embd[:, 0] = 1.0                                 # the constant dimension
out = rand(n_vocab, N_EMBD, std=1.0)
out[:, 0] = np.where(emittable, 0.0, -4.0)       # ~ -30 logits for the rest
tensors = {
    "token_embd.weight": embd,
    "output_norm.weight": np.ones(N_EMBD, np.float32),
    "output.weight": out,
}
for i in range(N_LAYER):
    p = f"blk.{i}."
    tensors.update({
        p + "attn_norm.weight": np.ones(N_EMBD, np.float32),
        p + "attn_q.weight": rand(N_EMBD, N_EMBD),
        p + "attn_k.weight": rand(N_EMBD, N_EMBD),
        p + "attn_v.weight": rand(N_EMBD, N_EMBD),
        p + "attn_output.weight": rand(N_EMBD, N_EMBD),
        p + "ffn_norm.weight": np.ones(N_EMBD, np.float32),
        p + "ffn_gate.weight": rand(N_FF, N_EMBD),
        p + "ffn_up.weight": rand(N_FF, N_EMBD),
        p + "ffn_down.weight": rand(N_EMBD, N_FF),
    })

# ---- write -----------------------------------------------------------------
w = gguf.GGUFWriter(sys.argv[1], "llama")
w.add_name("tiny-random-llama")
w.add_file_type(gguf.LlamaFileType.ALL_F32)
w.add_vocab_size(n_vocab)
w.add_context_length(N_CTX)
w.add_embedding_length(N_EMBD)
w.add_block_count(N_LAYER)
w.add_feed_forward_length(N_FF)
w.add_head_count(N_HEAD)
w.add_head_count_kv(N_HEAD)
w.add_rope_dimension_count(N_EMBD // N_HEAD)
w.add_layer_norm_rms_eps(1e-5)
w.add_tokenizer_model("llama")
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_unk_token_id(0)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_add_bos_token(True)
w.add_add_eos_token(False)
for name, data in tensors.items():
    w.add_tensor(name, data)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(f"wrote {sys.argv[1]}: vocab {n_vocab}, {N_LAYER} layers, n_embd {N_EMBD}")
