"""Decoder-only transformers as Hugging Face defines them: what each layer's parameters hold
and what one layer's forward saves for backward (bf16, SDPA/flash attention)."""


class Model:
    def __init__(self, name, hf_module, hf_prefix, layers, hidden, inter, heads, kv_heads, vocab, tied=False):
        self.name, self.hf_module, self.hf_prefix = name, hf_module, hf_prefix
        self.layers, self.hidden, self.inter = layers, hidden, inter
        self.heads, self.kv_heads, self.vocab, self.tied = heads, kv_heads, vocab, tied

    @property
    def kv_dim(self):
        return self.hidden // self.heads * self.kv_heads

    def attn_numel(self):
        h = self.hidden
        return 2 * h * h + 2 * h * self.kv_dim + h

    def mlp_numel(self):
        return 3 * self.hidden * self.inter + self.hidden

    def layer_numel(self):
        return self.attn_numel() + self.mlp_numel()

    def embed_numel(self):
        return self.vocab * self.hidden

    def head_numel(self):
        return 0 if self.tied else self.vocab * self.hidden

    def numel(self):
        return self.layers * self.layer_numel() + self.embed_numel() + self.head_numel() + self.hidden

    def saved_per_layer(self, b, s):
        """(what, bytes) a layer's forward keeps for backward, bf16."""
        t = b * s
        h, kv, it = self.hidden, self.kv_dim, self.inter
        return [("input_layernorm", t * h * 2), ("qkv_proj", t * (h + 2 * kv) * 2),
                ("attn_output", t * h * 2 + b * self.heads * s * 4), ("post_attention_layernorm", t * h * 4),
                ("gate_up_proj", t * it * 4), ("act_fn", t * it * 2)]

    def layer_saved_bytes(self, b, s):
        return sum(x for _, x in self.saved_per_layer(b, s))


LLAMA3_8B = Model("Llama-3.1-8B", "llama", "Llama", 32, 4096, 14336, 32, 8, 128256)
QWEN25_7B = Model("Qwen2.5-7B", "qwen2", "Qwen2", 28, 3584, 18944, 28, 4, 152064)
MISTRAL_7B = Model("Mistral-7B-v0.3", "mistral", "Mistral", 32, 4096, 14336, 32, 8, 32768)
LLAMA2_13B = Model("Llama-2-13b", "llama", "Llama", 40, 5120, 13824, 40, 40, 32000)
QWEN25_14B = Model("Qwen2.5-14B", "qwen2", "Qwen2", 48, 5120, 13824, 40, 8, 152064)
QWEN25_1_5B = Model("Qwen2.5-1.5B", "qwen2", "Qwen2", 28, 1536, 8960, 12, 2, 151936, tied=True)
QWEN25_0_5B = Model("Qwen2.5-0.5B", "qwen2", "Qwen2", 24, 896, 4864, 14, 2, 151936, tied=True)
LLAMA32_1B = Model("Llama-3.2-1B", "llama", "Llama", 16, 2048, 8192, 32, 8, 128256, tied=True)
LLAMA32_3B = Model("Llama-3.2-3B", "llama", "Llama", 28, 3072, 8192, 24, 8, 128256, tied=True)
QWEN25_3B = Model("Qwen2.5-3B", "qwen2", "Qwen2", 36, 2048, 11008, 16, 2, 151936, tied=True)
LLAMA33_70B = Model("Llama-3.3-70B", "llama", "Llama", 80, 8192, 28672, 64, 8, 128256)
