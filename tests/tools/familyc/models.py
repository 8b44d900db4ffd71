"""Model families of family C, described by what they put on the GPU: their parameters, and for a
given input shape the tensors each module's forward makes ('save': kept for backward; 'temp':
freed before the module returns) and the gradient of its input that its backward makes.

Shapes follow the published architectures (ViT, ResNet, Stable-Diffusion-style UNet, BERT, T5,
Llama-style decoders, a Mixtral-style MoE); byte counts follow from the dtypes: fp32 weights under
bf16 autocast keep an fp32 residual stream and cache bf16 copies of every weight for the forward
(autocast's weight cache), bf16 models keep everything in 2 bytes."""


class Op:
    __slots__ = ("kind", "nbytes", "fn", "line")

    def __init__(self, kind, nbytes, fn, line):
        self.kind = kind
        self.nbytes = int(nbytes)
        self.fn = fn
        self.line = line


class Layer:
    """One module with parameters: `ops(shape)` lists its forward tensors in order."""

    def __init__(self, name, file, cls, params, ops, grad_in, quant=False):
        self.name = name
        self.file = file
        self.cls = cls
        self.params = params  # [(name, numel, trainable)]
        self.ops = ops
        self.grad_in = grad_in
        self.quant = quant  # 4-bit base weights: a bf16 copy of the weight is dequantized per use

    def numel(self, trainable_only=False):
        return sum(n for _, n, t in self.params if t or not trainable_only)


class Model:
    def __init__(self, name, family, layers, weight_bytes, compute_bytes, top_file, top_cls, autocast,
                 loss_file="torch/nn/functional.py", quant_bits=None):
        self.name = name
        self.family = family
        self.layers = layers
        self.weight_bytes = weight_bytes
        self.compute_bytes = compute_bytes
        self.top_file = top_file
        self.top_cls = top_cls
        self.autocast = autocast  # fp32 weights, bf16 compute: autocast caches bf16 weight copies
        self.quant_bits = quant_bits

    def numel(self, trainable_only=False):
        return sum(layer.numel(trainable_only) for layer in self.layers)

    def param_bytes(self, numel, trainable):
        if self.quant_bits and not trainable:
            return numel * self.quant_bits // 8
        return numel * (4 if trainable and self.quant_bits else self.weight_bytes)


# --------------------------------------------------------------------------------------------
# transformer blocks (ViT, BERT, T5, Llama, MoE)


def transformer_block(i, cfg, file, cls, prefix, cross=False):
    d, heads, kv, ffn = cfg["d"], cfg["heads"], cfg.get("kv_heads", cfg["heads"]), cfg["ffn"]
    hd = d // heads
    gated = cfg.get("gated", False)
    bias = cfg.get("bias", True)
    lora = cfg.get("lora_rank")
    quant = cfg.get("quant_bits") is not None
    base_trainable = lora is None
    experts = cfg.get("experts")
    params = []

    def linear(name, fan_in, fan_out):
        params.append((f"{prefix}.{i}.{name}.weight", fan_in * fan_out, base_trainable))
        if bias:
            params.append((f"{prefix}.{i}.{name}.bias", fan_out, base_trainable))
        if lora and name.split(".")[-1] in cfg.get("lora_targets", ("q_proj", "v_proj")):
            params.append((f"{prefix}.{i}.{name}.lora_A.default.weight", fan_in * lora, True))
            params.append((f"{prefix}.{i}.{name}.lora_B.default.weight", lora * fan_out, True))

    params.append((f"{prefix}.{i}.norm1.weight", d, base_trainable))
    linear("attn.q_proj", d, d)
    linear("attn.k_proj", d, kv * hd)
    linear("attn.v_proj", d, kv * hd)
    linear("attn.o_proj", d, d)
    if cross:
        params.append((f"{prefix}.{i}.norm_x.weight", d, base_trainable))
        linear("cross.q_proj", d, d)
        linear("cross.k_proj", d, d)
        linear("cross.v_proj", d, d)
        linear("cross.o_proj", d, d)
    params.append((f"{prefix}.{i}.norm2.weight", d, base_trainable))
    if experts:
        params.append((f"{prefix}.{i}.moe.gate.weight", d * experts, True))
        for e in range(experts):
            for w, (a, b) in (("w1", (d, ffn)), ("w3", (d, ffn)), ("w2", (ffn, d))):
                params.append((f"{prefix}.{i}.moe.experts.{e}.{w}.weight", a * b, True))
    else:
        linear("mlp.up_proj", d, ffn)
        if gated:
            linear("mlp.gate_proj", d, ffn)
        linear("mlp.down_proj", ffn, d)

    weight_numel = sum(n for name, n, _ in params if name.endswith(".weight") and "lora" not in name)
    residual_bytes = cfg["residual_bytes"]
    c = cfg["compute_bytes"]
    eager = cfg.get("attention", "sdpa") == "eager"
    dropout = cfg.get("dropout", 0.0) > 0
    autocast = cfg.get("autocast", False)

    def ops(shape):
        b, t = shape["batch"], shape["tokens"]
        tc = shape.get("cross_tokens", 0)
        bt = b * t
        out = []
        if autocast:
            # autocast's cache: one bf16 copy of each weight, alive until the forward ends (saved by the matmuls)
            for name, n, _ in params:
                if name.endswith(".weight") and "norm" not in name and "gate.weight" not in name:
                    out.append(Op("save", n * 2, "forward", 0))
        out.append(Op("save", bt * d * c, "forward", 71))  # norm1 output
        out.append(Op("save", bt * 8, "forward", 71))  # mean / rstd
        out.append(Op("save", bt * d * c, "forward", 74))  # q
        out.append(Op("save", bt * kv * hd * c, "forward", 75))  # k
        out.append(Op("save", bt * kv * hd * c, "forward", 76))  # v
        if quant:
            out.append(Op("temp", d * ffn * 2, "dequantize_4bit", 0))  # one linear dequantized to bf16 at a time
        if eager:
            if kv != heads:
                out.append(Op("save", 2 * bt * d * c, "repeat_kv", 0))
            out.append(Op("temp", b * heads * t * t * c, "forward", 80))  # scores
            out.append(Op("temp", b * heads * t * t * 4, "softmax", 0))  # fp32 softmax
            out.append(Op("save", b * heads * t * t * c, "forward", 81))  # probabilities
            if dropout:
                out.append(Op("save", b * heads * t * t, "dropout", 0))
        else:
            out.append(Op("save", b * heads * t * 4, "scaled_dot_product_attention", 0))  # logsumexp
        out.append(Op("save", bt * d * c, "forward", 84))  # context
        out.append(Op("temp", bt * d * c, "forward", 86))  # o_proj output
        out.append(Op("save", bt * d * residual_bytes, "forward", 87))  # residual
        if cross:
            out.append(Op("save", bt * d * c, "forward", 92))
            out.append(Op("save", b * tc * d * c * 2, "forward", 93))
            if eager:
                out.append(Op("save", b * heads * t * tc * c, "forward", 95))
            out.append(Op("save", bt * d * residual_bytes, "forward", 97))
        out.append(Op("save", bt * d * c, "forward", 101))  # norm2 output
        if experts:
            out.append(Op("save", bt * experts * 4, "forward", 118))  # router logits (fp32)
            counts = shape.get("expert_tokens") or [bt * cfg["top_k"] // experts] * experts
            for e in range(experts):
                n = counts[e]
                if n == 0:
                    continue
                out.append(Op("save", n * d * c, "forward", 131))  # gathered tokens
                out.append(Op("save", n * ffn * c, "forward", 133))  # w1
                out.append(Op("save", n * ffn * c, "forward", 133))  # w3
                out.append(Op("save", n * ffn * c, "forward", 133))  # act(w1) * w3
                out.append(Op("temp", n * d * c, "forward", 134))  # w2 out
            out.append(Op("save", bt * d * residual_bytes, "forward", 140))
        else:
            out.append(Op("save", bt * ffn * c, "forward", 104))  # up
            if gated:
                out.append(Op("save", bt * ffn * c, "forward", 104))  # gate
            out.append(Op("save", bt * ffn * c, "forward", 105))  # activation
            out.append(Op("temp", bt * d * c, "forward", 106))  # down
            out.append(Op("save", bt * d * residual_bytes, "forward", 107))  # residual
        return out

    def grad_in(shape):
        return [shape["batch"] * shape["tokens"] * ffn * c, shape["batch"] * shape["tokens"] * d * residual_bytes]

    return Layer(f"{prefix}.{i}", file, cls, params, ops, grad_in, quant)


def embedding_layer(cfg, file, cls, name, vocab, positions=0, trainable=True):
    d = cfg["d"]
    params = [(f"{name}.word_embeddings.weight", vocab * d, trainable)]
    if positions:
        params.append((f"{name}.position_embeddings.weight", positions * d, trainable))

    def ops(shape):
        bt = shape["batch"] * shape["tokens"]
        return [Op("save", bt * d * cfg["residual_bytes"], "forward", 210)]

    def grad_in(shape):
        return []

    return Layer(name, file, cls, params, ops, grad_in)


def lm_head(cfg, file, cls, vocab, tied=False, fp32_loss=True, trainable=True):
    d = cfg["d"]
    params = [] if tied else [("lm_head.weight", vocab * d, trainable)]
    c = cfg["compute_bytes"]

    def ops(shape):
        bt = shape["batch"] * shape.get("label_tokens", shape["tokens"])
        out = [Op("save", bt * d * c, "forward", 1190), Op("save", bt * vocab * c, "forward", 1203)]
        if fp32_loss:
            out.append(Op("temp", bt * vocab * 4, "float", 0))  # logits.float()
            out.append(Op("save", bt * vocab * 4, "log_softmax", 0))
        return out

    def grad_in(shape):
        bt = shape["batch"] * shape.get("label_tokens", shape["tokens"])
        return [bt * vocab * 4, bt * vocab * c]

    return Layer("lm_head", file, cls, params, ops, grad_in)


def patch_embed(cfg, image, patch, channels=3):
    d = cfg["d"]
    params = [("patch_embed.proj.weight", channels * patch * patch * d, True), ("patch_embed.proj.bias", d, True),
              ("cls_token", d, True), ("pos_embed", ((image // patch) ** 2 + 1) * d, True)]

    def ops(shape):
        b = shape["batch"]
        img = shape.get("image", image)
        tokens = (img // patch) ** 2 + 1
        return [Op("save", b * channels * img * img * cfg["compute_bytes"], "_conv_forward", 0),
                Op("save", b * tokens * d * cfg["residual_bytes"], "forward", 118)]

    def grad_in(shape):
        return []

    return Layer("patch_embed", "timm/models/vision_transformer.py", "PatchEmbed", params, ops, grad_in)


def classifier_head(cfg, classes, file, cls):
    d = cfg["d"]
    params = [("head.weight", d * classes, True), ("head.bias", classes, True), ("norm.weight", d, True)]

    def ops(shape):
        b = shape["batch"]
        return [Op("save", b * shape["tokens"] * d * cfg["compute_bytes"], "forward", 642),
                Op("save", b * classes * 4, "forward", 655)]

    def grad_in(shape):
        return [shape["batch"] * classes * 4]

    return Layer("head", file, cls, params, ops, grad_in)


def transformer_cfg(d, heads, ffn, **kw):
    cfg = {"d": d, "heads": heads, "ffn": ffn, "compute_bytes": 2, "residual_bytes": 4, "attention": "sdpa"}
    cfg.update(kw)
    return cfg


def vit(name, layers, d, heads, ffn, image=224, patch=14, classes=1000, attention="sdpa", autocast=True):
    cfg = transformer_cfg(d, heads, ffn, attention=attention, autocast=autocast,
                          residual_bytes=4 if autocast else 2, dropout=0.0)
    file = "timm/models/vision_transformer.py"
    body = [transformer_block(i, cfg, file, "Block", "blocks") for i in range(layers)]
    return Model(name, "vit", [patch_embed(cfg, image, patch)] + body + [classifier_head(cfg, classes, file, "VisionTransformer")],
                 4 if autocast else 2, 2, file, "VisionTransformer", autocast)


def bert(name, layers, d, heads, ffn, vocab=30522, attention="eager", autocast=True, mlm=True):
    cfg = transformer_cfg(d, heads, ffn, attention=attention, autocast=autocast, dropout=0.1)
    file = "transformers/models/bert/modeling_bert.py"
    body = [transformer_block(i, cfg, file, "BertLayer", "bert.encoder.layer") for i in range(layers)]
    head = lm_head(cfg, file, "BertForMaskedLM", vocab, tied=True) if mlm else classifier_head(cfg, 2, file, "BertForSequenceClassification")
    return Model(name, "bert", [embedding_layer(cfg, file, "BertEmbeddings", "bert.embeddings", vocab, 512)] + body + [head],
                 4, 2, file, "BertForMaskedLM" if mlm else "BertForSequenceClassification", autocast)


def t5(name, layers, d, heads, ffn, vocab=32128, autocast=False, weight_bytes=2, attention="eager"):
    cfg = transformer_cfg(d, heads, ffn, attention=attention, autocast=autocast, bias=False, gated=True,
                          residual_bytes=4 if autocast else 2, dropout=0.1)
    file = "transformers/models/t5/modeling_t5.py"
    enc = [transformer_block(i, cfg, file, "T5Block", "encoder.block") for i in range(layers)]
    dec = [transformer_block(i, cfg, file, "T5Block", "decoder.block", cross=True) for i in range(layers)]
    for layer in dec:
        layer.decoder = True
    layers_all = [embedding_layer(cfg, file, "T5Stack", "shared", vocab)] + enc + dec + [lm_head(cfg, file, "T5ForConditionalGeneration", vocab)]
    return Model(name, "t5", layers_all, 4 if autocast else weight_bytes, 2, file, "T5ForConditionalGeneration", autocast)


def llama(name, layers, d, heads, kv_heads, ffn, vocab, weight_bytes=2, attention="sdpa", lora_rank=None,
          lora_targets=("q_proj", "v_proj"), quant_bits=None, experts=None, top_k=2, tied=False):
    cfg = transformer_cfg(d, heads, ffn, kv_heads=kv_heads, attention=attention, bias=False, gated=True,
                          residual_bytes=2, lora_rank=lora_rank, lora_targets=lora_targets, quant_bits=quant_bits,
                          experts=experts, top_k=top_k)
    file = "transformers/models/mixtral/modeling_mixtral.py" if experts else "transformers/models/llama/modeling_llama.py"
    cls = "MixtralDecoderLayer" if experts else "LlamaDecoderLayer"
    trainable = lora_rank is None
    body = [transformer_block(i, cfg, file, cls, "model.layers") for i in range(layers)]
    top = "MixtralForCausalLM" if experts else "LlamaForCausalLM"
    return Model(name, "moe" if experts else "llama",
                 [embedding_layer(cfg, file, "LlamaModel", "model.embed_tokens", vocab, trainable=trainable)] + body
                 + [lm_head(cfg, file, top, vocab, tied=tied, trainable=trainable)],
                 weight_bytes, 2, file, top, False, quant_bits=quant_bits)


# --------------------------------------------------------------------------------------------
# convolutional networks (ResNet, UNet)


def conv_block(name, file, cls, cin, cout, kernel, scale, c, extra_saves=2, attn_heads=0, context=0):
    """A residual conv block at 1/scale resolution: conv weights plus norms; its forward keeps the
    block input, normalised and activated maps and the convolution outputs."""
    params = [(f"{name}.conv1.weight", cin * cout * kernel * kernel, True), (f"{name}.conv2.weight", cout * cout * kernel * kernel, True),
              (f"{name}.norm1.weight", cin, True), (f"{name}.norm2.weight", cout, True)]
    if cin != cout:
        params.append((f"{name}.shortcut.weight", cin * cout, True))
    if attn_heads:
        for p in ("to_q", "to_k", "to_v", "to_out.0"):
            params.append((f"{name}.attn1.{p}.weight", cout * cout, True))
        if context:
            params.append((f"{name}.attn2.to_q.weight", cout * cout, True))
            params.append((f"{name}.attn2.to_k.weight", context * cout, True))
            params.append((f"{name}.attn2.to_v.weight", context * cout, True))
            params.append((f"{name}.attn2.to_out.0.weight", cout * cout, True))
        params.append((f"{name}.ff.net.0.proj.weight", cout * cout * 8, True))
        params.append((f"{name}.ff.net.2.weight", cout * 4 * cout, True))

    def ops(shape):
        b, res = shape["batch"], shape["resolution"] // scale
        hw = res * res
        out = [Op("save", b * cin * hw * c, "forward", 325), Op("save", b * cin * hw * c, "forward", 326),
               Op("save", b * cout * hw * c, "_conv_forward", 0)]
        for _ in range(extra_saves):
            out.append(Op("save", b * cout * hw * c, "forward", 331))
        out.append(Op("temp", b * cout * hw * 4, "group_norm", 0))
        out.append(Op("save", b * cout * hw * c, "forward", 340))
        if attn_heads:
            t = hw
            out.append(Op("save", 3 * b * t * cout * c, "forward", 402))
            if shape.get("attention", "eager") == "eager":
                out.append(Op("temp", b * attn_heads * t * t * c, "get_attention_scores", 0))
                out.append(Op("save", b * attn_heads * t * t * c, "get_attention_scores", 0))
            else:
                out.append(Op("save", b * attn_heads * t * 4, "scaled_dot_product_attention", 0))
            if context:
                out.append(Op("save", b * t * cout * c * 2, "forward", 420))
            out.append(Op("save", b * t * cout * 8 * c, "forward", 431))
            out.append(Op("save", b * t * cout * 4 * c, "forward", 432))
            out.append(Op("save", b * t * cout * c, "forward", 440))
        return out

    def grad_in(shape):
        b, res = shape["batch"], shape["resolution"] // scale
        return [b * cout * res * res * c, b * cin * res * res * c]

    return Layer(name, file, cls, params, ops, grad_in)


def resnet(name, blocks=(3, 4, 23, 3), width=64, classes=1000, compute_bytes=2):
    file = "torchvision/models/resnet.py"
    layers = []
    params = [("conv1.weight", 3 * width * 49, True), ("bn1.weight", width, True), ("bn1.bias", width, True)]

    def stem_ops(shape):
        b, r = shape["batch"], shape["resolution"]
        return [Op("save", b * 3 * r * r * 4, "_conv_forward", 0), Op("save", b * width * (r // 2) ** 2 * compute_bytes, "_conv_forward", 0),
                Op("save", b * width * (r // 2) ** 2 * compute_bytes, "forward", 270), Op("save", b * width * (r // 4) ** 2 * compute_bytes, "forward", 271)]

    layers.append(Layer("stem", file, "ResNet", params, stem_ops, lambda s: []))
    cin = width
    for stage, count in enumerate(blocks):
        mid = width * 2 ** stage
        cout = mid * 4
        scale = 4 * 2 ** stage
        for j in range(count):
            layers.append(bottleneck(f"layer{stage + 1}.{j}", file, cin, mid, cout, scale, compute_bytes))
            cin = cout
    layers.append(Layer("fc", file, "ResNet", [("fc.weight", cin * classes, True), ("fc.bias", classes, True)],
                        lambda s: [Op("save", s["batch"] * cin * 4, "forward", 280), Op("save", s["batch"] * classes * 4, "forward", 285)],
                        lambda s: [s["batch"] * classes * 4]))
    return Model(name, "resnet", layers, 4, compute_bytes, file, "ResNet", True)


def bottleneck(name, file, cin, mid, cout, scale, c):
    params = [(f"{name}.conv1.weight", cin * mid, True), (f"{name}.conv2.weight", mid * mid * 9, True), (f"{name}.conv3.weight", mid * cout, True)]
    for k, ch in (("bn1", mid), ("bn2", mid), ("bn3", cout)):
        params += [(f"{name}.{k}.weight", ch, True), (f"{name}.{k}.bias", ch, True)]
    if cin != cout:
        params.append((f"{name}.downsample.0.weight", cin * cout, True))

    def ops(shape):
        b, r = shape["batch"], shape["resolution"] // scale
        hw = r * r
        out = [Op("save", b * mid * hw * c, "_conv_forward", 0), Op("save", b * mid * hw * c, "forward", 150),
               Op("save", b * mid * hw * c, "_conv_forward", 0), Op("save", b * mid * hw * c, "forward", 153),
               Op("save", b * cout * hw * c, "_conv_forward", 0), Op("temp", b * cout * hw * 4, "batch_norm", 0),
               Op("save", b * cout * hw * c, "forward", 156)]
        if cin != cout:
            out.append(Op("save", b * cout * hw * c, "_conv_forward", 0))
        out.append(Op("save", b * cout * hw * c, "forward", 160))
        return out

    def grad_in(shape):
        b, r = shape["batch"], shape["resolution"] // scale
        return [b * cout * r * r * c, b * mid * r * r * c, b * cin * r * r * c]

    return Layer(name, file, "Bottleneck", params, ops, grad_in)


def unet(name, channels=(320, 640, 1280, 1280), heads=8, context=768, compute_bytes=2, weight_bytes=4, autocast=True):
    """A Stable-Diffusion-1.x-shaped UNet on 4-channel latents (resolution = latent side)."""
    file = "diffusers/models/unets/unet_2d_blocks.py"
    layers = [Layer("conv_in", file, "UNet2DConditionModel", [("conv_in.weight", 4 * channels[0] * 9, True)],
                    lambda s: [Op("save", s["batch"] * channels[0] * s["resolution"] ** 2 * compute_bytes, "_conv_forward", 0)], lambda s: [])]
    cin = channels[0]
    for level, ch in enumerate(channels):
        attn = heads if level < 3 else 0
        for j in range(2):
            layers.append(conv_block(f"down_blocks.{level}.resnets.{j}", file, "CrossAttnDownBlock2D" if attn else "DownBlock2D",
                                     cin, ch, 3, 2 ** level, compute_bytes, attn_heads=attn, context=context if attn else 0))
            cin = ch
    layers.append(conv_block("mid_block.resnets.0", file, "UNetMidBlock2DCrossAttn", cin, cin, 3, 8, compute_bytes, attn_heads=heads, context=context))
    for level, ch in reversed(list(enumerate(channels))):
        attn = heads if level < 3 else 0
        for j in range(3):
            layers.append(conv_block(f"up_blocks.{3 - level}.resnets.{j}", file, "CrossAttnUpBlock2D" if attn else "UpBlock2D",
                                     cin + ch, ch, 3, 2 ** level, compute_bytes, attn_heads=attn, context=context if attn else 0))
            cin = ch
    layers.append(Layer("conv_out", file, "UNet2DConditionModel", [("conv_out.weight", channels[0] * 4 * 9, True)],
                        lambda s: [Op("save", s["batch"] * 4 * s["resolution"] ** 2 * 4, "_conv_forward", 0)],
                        lambda s: [s["batch"] * 4 * s["resolution"] ** 2 * 4]))
    return Model(name, "unet", layers, weight_bytes, compute_bytes, "diffusers/models/unets/unet_2d_condition.py",
                 "UNet2DConditionModel", autocast)
