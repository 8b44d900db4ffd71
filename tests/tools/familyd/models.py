"""Model shapes: decoder-only transformers (Llama/Qwen/Mistral-like, SwiGLU, GQA) described by their
parameter counts per unit and the tensors one layer's forward saves for backward."""


class Decoder:
    def __init__(self, name, layers, hidden, ffn, heads, kv_heads, vocab, tied=False):
        self.name, self.layers, self.h, self.f = name, layers, hidden, ffn
        self.heads, self.kv_heads, self.vocab, self.tied = heads, kv_heads, vocab, tied
        self.hkv = hidden * kv_heads // heads
        self.layer_params = 2 * hidden * hidden + 2 * hidden * self.hkv + 3 * hidden * ffn + 2 * hidden
        self.embed_params = vocab * hidden
        self.head_params = 0 if tied else vocab * hidden
        self.params = layers * self.layer_params + self.embed_params + self.head_params + hidden

    def layer_linears(self):
        """(name, out, in) of one layer's weights, in forward order."""
        h, hkv, f = self.h, self.hkv, self.f
        return [("q_proj", h, h), ("k_proj", hkv, h), ("v_proj", hkv, h), ("o_proj", h, h),
                ("gate_proj", f, h), ("up_proj", f, h), ("down_proj", h, f)]

    def saved(self, tokens, dtype=2):
        """What one layer's forward saves for backward (flash/SDPA attention, bf16), as
        (name, bytes): the norms' inputs, q/k/v, the attention output and its logsumexp, the MLP's
        gate, up and activation."""
        h, hkv, f, t = self.h, self.hkv, self.f, tokens
        return [("input_layernorm", t * h * dtype), ("q", t * h * dtype), ("k", t * hkv * dtype),
                ("v", t * hkv * dtype), ("attn_out", t * h * dtype), ("lse", t * self.heads * 4),
                ("post_attention_layernorm", t * h * dtype), ("gate", t * f * dtype), ("up", t * f * dtype),
                ("act", t * f * dtype)]

    def saved_bytes(self, tokens, dtype=2):
        return sum(b for _, b in self.saved(tokens, dtype))

    def kv_per_token(self, dtype=2):
        return 2 * self.layers * self.hkv * dtype


LLAMA2_7B = Decoder("Llama-2-7B", 32, 4096, 11008, 32, 32, 32000)
LLAMA2_13B = Decoder("Llama-2-13B", 40, 5120, 13824, 40, 40, 32000)
LLAMA3_8B = Decoder("Llama-3-8B", 32, 4096, 14336, 32, 8, 128256)
LLAMA3_70B = Decoder("Llama-3-70B", 80, 8192, 28672, 64, 8, 128256)
QWEN25_7B = Decoder("Qwen2.5-7B", 28, 3584, 18944, 28, 4, 152064)
QWEN25_14B = Decoder("Qwen2.5-14B", 48, 5120, 13824, 40, 8, 152064)
QWEN25_32B = Decoder("Qwen2.5-32B", 64, 5120, 27648, 40, 8, 152064)
QWEN25_3B = Decoder("Qwen2.5-3B", 36, 2048, 11008, 16, 2, 151936, tied=True)
QWEN25_1_5B = Decoder("Qwen2.5-1.5B", 28, 1536, 8960, 12, 2, 151936, tied=True)
MISTRAL_7B = Decoder("Mistral-7B", 32, 4096, 14336, 32, 8, 32000)
GPT2_XL = Decoder("GPT-2 XL-shaped", 48, 1600, 6400, 25, 25, 50257, tied=True)
LLAMA32_1B = Decoder("Llama-3.2-1B", 16, 2048, 8192, 32, 8, 128256, tied=True)
LLAMA32_3B = Decoder("Llama-3.2-3B", 28, 3072, 8192, 24, 8, 128256, tied=True)
