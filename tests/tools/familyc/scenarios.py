"""The family-C scenarios: a model, a card, a loop, and a program that runs until the OOM. Each
names the diagnosis its physics proves (checked in physics.py) and describes why in numbers taken
from the simulation."""

import models
from allocator import GiB, MiB
from texts import format_size

# (total memory as cudaMemGetInfo reports it, name as nvidia-smi prints it)
CARDS = {
    "T4": (15835398144, "Tesla T4"),
    "V100-16": (16945512448, "Tesla V100-SXM2-16GB"),
    "V100-32": (34089730048, "Tesla V100-SXM2-32GB"),
    "RTX3060": (12622168064, "NVIDIA GeForce RTX 3060"),
    "A10G": (23836098560, "NVIDIA A10G"),
    "L4": (23580639232, "NVIDIA L4"),
    "RTX4090": (25393692672, "NVIDIA GeForce RTX 4090"),
    "A100-40": (42298834944, "NVIDIA A100-SXM4-40GB"),
    "L40S": (47697362944, "NVIDIA L40S"),
    "A100-80": (85031714816, "NVIDIA A100-SXM4-80GB"),
    "H100": (85520809984, "NVIDIA H100 80GB HBM3"),
}


def gib(n):
    return f"{n / GiB:.2f} GiB"


def mib(n):
    return f"{n / MiB:.0f} MiB"


def steps(run, shape, n, **kw):
    for _ in range(n):
        run.current_shape = shape
        run.train_step(shape, **kw)


def tokens_of(shape):
    return shape["batch"] * shape["tokens"] if "tokens" in shape else shape["batch"] * shape.get("image", shape.get("resolution", 1)) ** 2


def per_token_squared(shape):
    return shape["batch"] * shape["tokens"] ** 2


SCENARIOS = []
KNOB = {}  # tuning overrides (tests/tools only; empty when generating)


def knob(name, default):
    return KNOB.get(name, default)


def scenario(**spec):
    SCENARIOS.append(spec)
    return spec


# ------------------------------------------------------------------------------------------
# optimizer_step2


def vith_program(run):
    run.load()
    steps(run, {"batch": 8, "tokens": 257, "image": 224}, 3)


scenario(
    name="vith14_rtx3060_foreach_adamw_first_step", case="optimizer_step2", phase="optimizer", step=0,
    model=lambda: models.vit("vit_huge_patch14_224", 32, 1280, 16, 5120), card=CARDS["RTX3060"], context=420 * MiB,
    era="2.4", loop="custom", optimizer="adamw_foreach", program=vith_program, summary=True,
    describe=lambda run, r: (
        f"ViT-H/14 (timm, {run.model.numel() / 1e6:.0f}M params, fp32 weights under bf16 autocast) fine-tuned at 8 x 224 px on a "
        f"{gib(run.alloc.card_total)} RTX 3060 with foreach AdamW. Weights, gradients and both Adam moments are "
        f"{gib(run.projected_fixed_bytes())}, which fits the {gib(run.alloc.card_total - run.alloc.context_bytes)} left after the CUDA context. "
        f"The forward and the first backward fit; the first optimizer.step() creates the moments and _multi_tensor_adamw's _foreach_sqrt "
        f"asks for one more fp32 copy of every parameter, and that fails. The state fits, the step's temporaries do not: fused AdamW "
        f"(or foreach=False) removes them."))


def bert_step1_program(run):
    run.load("from_pretrained")
    steps(run, {"batch": knob("b", 12), "tokens": 512}, 3)


scenario(
    name="bert_large_t4_state_appears_second_step", case="optimizer_step2", phase="forward", step=1,
    model=lambda: models.bert("bert-large-uncased", 24, 1024, 16, 4096, attention="eager"), card=CARDS["T4"], context=380 * MiB,
    era="2.1", loop="custom", optimizer="adamw_foreach", program=bert_step1_program, trace_entries=4000,
    describe=lambda run, r: (
        f"BERT-large MLM fine-tune (eager attention, 24 x 512 tokens, fp32 weights under autocast) on a {gib(run.alloc.card_total)} T4. "
        f"Step 0 ran to its end while AdamW had no state: its peak was {gib(run.step_log[0]['peak'])}. The first optimizer.step() "
        f"created {gib(sum(b.size for b in run.state))} of moments, and step 1's forward no longer fits next to them. The fixed state "
        f"({gib(run.projected_fixed_bytes())}) fits; the lazily created optimizer state, seen one step later, is the cause."))


def moe_program(run):
    run.load("from_pretrained")
    steps(run, {"batch": 2, "tokens": 2048}, 2, accumulation=4)


scenario(
    name="moe16e_deepspeed_bf16_accumulation_first_step", case="optimizer_step2", phase="optimizer", step=0,
    model=lambda: models.llama("moe-16x350m", knob("l", 16), 1024, 16, 4, 2816, 50304, experts=16, top_k=2),
    card=CARDS["A100-40"], context=610 * MiB, era="2.6", stacks="all", loop="deepspeed", optimizer="adamw_foreach", master=True,
    program=moe_program, trace_entries=5000, summary=True,
    describe=lambda run, r: (
        f"A Mixtral-style MoE (16 experts, top-2 routing, {run.model.numel() / 1e9:.2f}B params) in bf16 under a DeepSpeed-style bf16 "
        f"optimizer that keeps fp32 master weights, with 4-step gradient accumulation of 2 x 2048 tokens, on a {gib(run.alloc.card_total)} A100. "
        f"MoE carries many parameters for its compute: bf16 weights and grads, fp32 masters and both fp32 Adam moments are "
        f"{gib(run.projected_fixed_bytes())}, which fits. The four micro-batches fit; the first optimizer.step() after them creates the "
        f"moments ({gib(sum(b.size for b in run.state))}) and the foreach update's fp32 temporaries do not fit beside them. "
        f"Stacks are stacks='all' (C++ frames mixed in)."))

# ------------------------------------------------------------------------------------------
# capacity


def t5_11b_program(run):
    run.load("from_pretrained")
    steps(run, {"batch": 1, "tokens": knob("t", 512)}, 2)


scenario(
    name="t5_11b_bf16_master_first_step_capacity", case="capacity", phase="optimizer", step=0,
    model=lambda: models.t5("t5-11b", 24, 1024, 128, 65536, weight_bytes=2), card=CARDS["A100-80"], context=450 * MiB,
    era="2.8", loop="accelerate", optimizer="adamw_foreach", master=True, program=t5_11b_program,
    describe=lambda run, r: (
        f"T5-11B-shaped encoder-decoder (d_model 1024, d_ff 65536, 128 heads) ({run.model.numel() / 1e9:.2f}B params) in bf16 with fp32 master weights (accelerate loop, "
        f"DeepSpeed-style mixed precision) on a {gib(run.alloc.card_total)} A100. Weights and masters already take "
        f"{gib(sum(p[4].size for p in run.params) + sum(b.size for b in run.masters))}; the first backward adds bf16 gradients and still fits "
        f"(one 512-token example), then the first optimizer.step() starts creating the fp32 Adam moments and fails after "
        f"{gib(sum(b.size for b in run.state))} of them. The state training needs (weights, gradients, masters, two fp32 moments) is "
        f"{gib(run.projected_fixed_bytes())}, {run.projected_fixed_bytes() / (run.alloc.card_total - run.alloc.context_bytes):.1f}x what the card "
        f"offers: this is not the lazy-state surprise of a run that would fit, and no activation fix can help; ZeRO/FSDP sharding, "
        f"offload or LoRA."))


def mixtral_load_program(run):
    run.load("from_pretrained")


scenario(
    name="mixtral8x7b_h100_load_capacity", case="capacity", phase="load", step=0,
    model=lambda: models.llama("Mixtral-8x7B", 32, 4096, 32, 8, 14336, 32000, experts=8, top_k=2), card=CARDS["H100"], context=530 * MiB,
    era="2.10", loop="custom", optimizer="adamw_8bit", program=mixtral_load_program, trace_entries=3000, text={"wrap": 120},
    describe=lambda run, r: (
        f"Mixtral-8x7B-shaped MoE ({run.model.numel() / 1e9:.1f}B params) loaded in bf16 with from_pretrained(...).to('cuda') for a full "
        f"fine-tune on one {gib(run.alloc.card_total)} H100. The weights alone are {gib(run.model.numel() * 2)}; loading fails after "
        f"{gib(r['info']['allocated'])} of them. Nothing else is on the card. Even with 8-bit Adam the state training needs is "
        f"{gib(run.projected_fixed_bytes())}: shard (FSDP/ZeRO-3 over several cards), offload, or QLoRA."))


def vitg_program(run):
    run.load()
    steps(run, {"batch": 4, "tokens": 257, "image": 224}, 2)


scenario(
    name="vit_bigg14_a10g_fused_adamw_state_exceeds_card", case="capacity", phase="optimizer", step=0,
    model=lambda: models.vit("vit_bigG_patch14_224", 48, 1664, 16, 8192, autocast=True), card=CARDS["A10G"], context=350 * MiB,
    era="2.3", loop="custom", optimizer="adamw_fused", program=vitg_program, summary=True,
    describe=lambda run, r: (
        f"ViT-bigG/14 ({run.model.numel() / 1e9:.2f}B params, fp32 weights, bf16 autocast) with fused AdamW on a "
        f"{gib(run.alloc.card_total)} A10G. Fused AdamW makes no step temporaries; the failure is the second Adam moment being created "
        f"in the first optimizer.step(): fp32 weights, gradients and two moments are {gib(run.projected_fixed_bytes())}, more than the "
        f"{gib(run.alloc.card_total - run.alloc.context_bytes)} the card offers. The state can never fit here (8-bit Adam, ZeRO, offload)."))

# ------------------------------------------------------------------------------------------
# first_backward


def unet_program(run):
    run.load()
    steps(run, {"batch": knob("b", 40), "resolution": 64, "attention": "sdpa"}, 2)


scenario(
    name="sd15_unet_a10g_batch_too_large_working_set", case="working_set", phase="forward", step=0,
    model=lambda: models.unet("stable-diffusion-v1-5/unet"), card=CARDS["A10G"], context=480 * MiB,
    era="2.4", loop="accelerate", optimizer="adamw_8bit", program=unet_program, trace_entries=3000,
    describe=lambda run, r: (
        f"Stable-Diffusion-1.5-shaped UNet ({run.model.numel() / 1e6:.0f}M params, fp32 weights, bf16 autocast, SDPA attention) trained with "
        f"8-bit AdamW on batches of {r['shape']['batch']} 512 px images (64 x 64 latents) on a {gib(run.alloc.card_total)} A10G via accelerate. "
        f"The fixed state is {gib(run.projected_fixed_bytes())}, well inside the card. The forward keeps the GroupNorm/SiLU/conv maps and the "
        f"transformer blocks' activations of every level (skip connections included) and runs out in the first forward, after "
        f"{gib(r['info']['allocated'] - sum(p[4].size for p in run.params))} of activations: no optimizer state yet, no single large request, "
        f"no growth, no other process. The batch's working set is simply too large: a smaller micro-batch with gradient accumulation, "
        f"gradient checkpointing, or SDPA-efficient attention at lower resolution."))


def bert_ddp_program(run):
    run.load()
    steps(run, {"batch": knob("b", 34), "tokens": 512}, 2)


scenario(
    name="bert_base_ddp_rank3_first_backward", case="first_backward", phase="backward", step=0,
    model=lambda: models.bert("bert-base-uncased", 12, 768, 12, 3072, attention="eager"), card=CARDS["V100-16"], context=390 * MiB,
    era="2.1", loop="custom", optimizer="adamw_foreach", ddp=True, device=3, device_count=8, program=bert_ddp_program,
    text={"prefix": "[rank3]: "}, trace_entries=2500,
    describe=lambda run, r: (
        f"BERT-base MLM pre-training under DDP on 8 x {gib(run.alloc.card_total)} V100 (rank 3 shown: device 3; DDP's gradient buckets "
        f"are allocated at construction), eager attention at {r['shape']['batch']} x 512 tokens. Fixed state {gib(run.projected_fixed_bytes())}; "
        f"the forward's attention probabilities and dropout masks (12 x {r['shape']['batch']} x 12 x 512 x 512) fit, the first backward fails. "
        f"The pasted log is torchrun's, every line prefixed with [rank3]:. Checkpointing or SDPA fixes it."))


def lora_program(run):
    run.load("from_pretrained")
    steps(run, {"batch": 1, "tokens": knob("t", 4352)}, 2)


scenario(
    name="lora_llama3_8b_a100_first_backward", case="first_backward", phase="backward", step=0,
    model=lambda: models.llama("Meta-Llama-3-8B+LoRA", 32, 4096, 32, 8, 14336, 128256, lora_rank=16), card=CARDS["A100-40"], context=460 * MiB,
    era="2.6", loop="trainer", optimizer="adamw_foreach", program=lora_program, trace_entries=3500, summary=True,
    describe=lambda run, r: (
        f"LoRA (rank 16 on q_proj/v_proj, {run.model.numel(True) / 1e6:.1f}M trainable) on a Llama-3-8B-shaped model in bf16 "
        f"({gib(sum(p[4].size for p in run.params))} of frozen weights, 128256-token vocabulary) under the HF Trainer on a {gib(run.alloc.card_total)} A100, "
        f"one sequence of {r['shape']['tokens']} tokens. The state training keeps is the frozen weights plus tiny adapter state "
        f"({gib(run.projected_fixed_bytes())}): capacity is not the problem. The forward saves every layer's activations for the adapters' "
        f"backward and fits; the first backward, starting with the fp32 and bf16 gradients of the logits, fails. Gradient checkpointing fits it."))


def llama1b_compiled_program(run):
    run.load("from_pretrained")
    steps(run, {"batch": 3, "tokens": knob("t", 2560)}, 2)


scenario(
    name="llama32_1b_compiled_l4_first_backward", case="first_backward", phase="backward", step=0,
    model=lambda: models.llama("Llama-3.2-1B", 16, 2048, 32, 8, 8192, 128256, tied=True), card=CARDS["L4"], context=500 * MiB,
    era="2.8", stacks="python", loop="custom", optimizer="adamw_fused", program=llama1b_compiled_program, compiled=True,
    compile_context="0/0", text={"wrap": 120},
    describe=lambda run, r: (
        f"Llama-3.2-1B-shaped model (bf16, tied 128256-token embeddings) under torch.compile (the forward runs as one Inductor graph: frames "
        f"in torch/_inductor and a generated /tmp/torchinductor_* module, compile_context set) with fused AdamW at {r['shape']['batch']} x 2048 "
        f"tokens on a {gib(run.alloc.card_total)} L4. Fixed state {gib(run.projected_fixed_bytes())}; the compiled forward's saved activations "
        f"and fp32 logits fit, and the first backward, which starts with the fp32 gradient of the logits, fails on top of them. "
        f"Checkpointing, a smaller micro-batch or a chunked cross-entropy fits."))

# ------------------------------------------------------------------------------------------
# longest_batch


def lengths(seed, n, low, high, step=8):
    """Deterministic 'random' padded lengths (a linear congruential sequence)."""
    out = []
    x = seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) % (2 ** 31)
        out.append(low + (x // 7) % ((high - low) // step + 1) * step)
    return out


def bert_padding_program(run):
    run.load("from_pretrained")
    b = knob("b", 64)
    for t in lengths(11, 40, 64, 192):
        steps(run, {"batch": b, "tokens": t}, 1)
    steps(run, {"batch": b, "tokens": 512}, 1)


scenario(
    name="bert_base_dynamic_padding_longest_batch", case="longest_batch", phase="forward", step=40,
    model=lambda: models.bert("bert-base-cased", 12, 768, 12, 3072, attention="eager", mlm=False), card=CARDS["T4"], context=360 * MiB,
    era="2.3", loop="custom", optimizer="adamw_foreach", program=bert_padding_program, trace_entries=3000, batch_size_of=per_token_squared,
    describe=lambda run, r: (
        f"BERT-base sequence classification with dynamic padding (DataCollatorWithPadding, no length cap below 512) on a "
        f"{gib(run.alloc.card_total)} T4, eager attention. 40 batches of {r['shape']['batch']} x 64-192 tokens train with a peak of at most "
        f"{gib(max(s['peak'] for s in run.step_log))}; batch 40 holds one 512-token review, so the whole batch is padded to 512 and its "
        f"12 x {r['shape']['batch']} x 12 x 512 x 512 attention probabilities alone are "
        f"{gib(12 * r['shape']['batch'] * 12 * 512 * 512 * 2)}: that batch fails in its forward. Cap max_length or bucket by length."))


def qlora_program(run):
    run.load("from_pretrained")
    for t in lengths(5, 30, 384, 1536, 64):
        steps(run, {"batch": 1, "tokens": t}, 1)
    steps(run, {"batch": 1, "tokens": knob("t", 16384)}, 1)


scenario(
    name="qlora_llama2_13b_one_long_sample", case="longest_batch", phase="forward", step=30,
    model=lambda: models.llama("Llama-2-13b-hf (4-bit) + LoRA", 40, 5120, 40, 40, 13824, 32000, lora_rank=64,
                               lora_targets=("q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "gate_proj", "down_proj"), quant_bits=4),
    card=CARDS["A10G"], context=470 * MiB, era="2.4", stacks="all", loop="trainer", optimizer="adamw_8bit", program=qlora_program,
    trace_entries=4000, batch_size_of=tokens_of, summary=True,
    describe=lambda run, r: (
        f"QLoRA on a Llama-2-13B-shaped model: 4-bit NF4 base weights ({gib(sum(p[4].size for p in run.params if not p[3]))} with their "
        f"absmax), LoRA rank 64 on every linear ({run.model.numel(True) / 1e6:.0f}M trainable, paged 8-bit AdamW), HF Trainer, one sequence "
        f"per step, on a {gib(run.alloc.card_total)} A10G. 30 steps of 384-1536 tokens fit (peak at most {gib(max(s['peak'] for s in run.step_log))}); "
        f"step 30 is a {r['shape']['tokens']}-token document with no max_length, and its activations (every layer's, plus each layer's "
        f"dequantized bf16 weight copy) fail in the forward. Stacks are stacks='all'. Truncate or pack to a max length."))


def t5_base_program(run):
    run.load("from_pretrained")
    for t in lengths(3, 25, 256, 768, 32):
        steps(run, {"batch": 8, "tokens": t, "cross_tokens": t}, 1)
    t = knob("t", 2048)
    steps(run, {"batch": 8, "tokens": t, "cross_tokens": t}, 1)


scenario(
    name="t5_base_summarization_long_document", case="longest_batch", phase="forward", step=25,
    model=lambda: models.t5("t5-base", 12, 768, 12, 3072, autocast=True, attention="eager"), card=CARDS["V100-32"], context=420 * MiB,
    era="2.0", loop="custom", optimizer="adamw_foreach", program=t5_base_program, trace_entries=2000, batch_size_of=per_token_squared,
    describe=lambda run, r: (
        f"T5-base summarization (encoder-decoder, eager attention with relative position bias) on a {gib(run.alloc.card_total)} V100, a "
        f"PyTorch 2.0 snapshot (block history, no time stamps). 25 batches of 8 documents padded to 256-768 tokens fit (peak at most "
        f"{gib(max(s['peak'] for s in run.step_log))}); batch 25 is padded to {r['shape']['tokens']} tokens, and attention's O(seq^2) "
        f"buffers are {(r['shape']['tokens'] / 768) ** 2:.0f}x those of the longest earlier batch: its forward fails. Truncate the inputs "
        f"or bucket by length."))


def vit_multires_program(run):
    run.load()
    for img in lengths(9, 24, 224, 384, 32):
        steps(run, {"batch": 32, "image": img, "tokens": (img // 16) ** 2 + 1}, 1)
    img = knob("img", 1024)
    steps(run, {"batch": 32, "image": img, "tokens": (img // 16) ** 2 + 1}, 1)


scenario(
    name="vitb16_multiresolution_one_huge_batch", case="longest_batch", phase="forward", step=24,
    model=lambda: models.vit("vit_base_patch16", 12, 768, 12, 3072, image=224, patch=16, attention="sdpa"), card=CARDS["A10G"],
    context=520 * MiB, era="2.6", loop="custom", optimizer="adamw_foreach", program=vit_multires_program, trace_entries=3000,
    batch_size_of=tokens_of,
    describe=lambda run, r: (
        f"ViT-B/16 trained on variable-resolution batches (a FlexiViT-style sampler, SDPA attention, interpolated position embeddings) on "
        f"a {gib(run.alloc.card_total)} A10G. 24 batches of 32 images at 224-384 px fit (peak at most {gib(max(s['peak'] for s in run.step_log))}); "
        f"batch 24 draws {r['shape']['image']} px, {r['shape']['tokens']} tokens per image ({r['shape']['tokens'] / 577:.1f}x the most before), "
        f"and every activation grows with the token count: that batch fails in its forward. Cap the resolution."))

# ------------------------------------------------------------------------------------------
# eval_accumulation


def keep_last_hidden(run, outs):
    run.kept.append(outs[0])
    outs.remove(outs[0])


def vit_knn_program(run):
    run.load()
    steps(run, {"batch": 64, "image": 224, "tokens": 197}, 5)
    for _ in range(2000):
        run.current_shape = {"batch": 256, "image": 224, "tokens": 197}
        run.eval_batch({"batch": 256, "image": 224, "tokens": 197}, keep=keep_last_hidden)


scenario(
    name="vitb16_knn_eval_keeps_token_features", case="eval_accumulation", phase="eval", step=5,
    model=lambda: models.vit("vit_base_patch16", 12, 768, 12, 3072, image=224, patch=16), card=CARDS["L4"], context=480 * MiB,
    era="2.4", loop="custom", optimizer="adamw_fused", program=vit_knn_program, trace_entries=3000,
    describe=lambda run, r: (
        f"ViT-B/16 with a kNN-probe evaluation after 5 training steps on a {gib(run.alloc.card_total)} L4: evaluate() runs under "
        f"torch.no_grad() and appends each batch's final token features (256 x 197 x 768 bf16 = {mib(256 * 197 * 768 * 2)}) to a list on the GPU "
        f"to build the feature bank. After {len([b for b in run.kept if b.allocated])} batches the bank holds "
        f"{gib(sum(b.size for b in run.kept if b.allocated))} and the next batch's forward fails. Inference itself is small; the kept "
        f"outputs are the cause: keep only the CLS feature, or move the bank to the CPU."))


def concat_logits(run, outs):
    logits = outs[-2]  # the head's bf16 logits
    old = run.kept[0] if run.kept else None
    chain = run.chain(run.loop["eval"][:-1], run.loop["eval_keep"])
    frames = run.frames.stack(chain, "cat")
    new = run.malloc((old.requested if old else 0) + logits.requested, frames, chain, track=False)
    if old:
        run.free(old)
    run.kept[:] = [new]


def bert_trainer_eval_program(run):
    run.load("from_pretrained")
    steps(run, {"batch": 16, "tokens": 512}, 10)
    for _ in range(500):
        run.current_shape = {"batch": 32, "tokens": 512}
        run.eval_batch({"batch": 32, "tokens": 512}, keep=concat_logits)


scenario(
    name="bert_large_trainer_eval_concat_logits", case="eval_accumulation", phase="eval", step=10,
    model=lambda: models.bert("bert-large-cased", 24, 1024, 16, 4096, attention="sdpa"), card=CARDS["A100-40"], context=540 * MiB,
    era="2.8", loop="trainer", optimizer="adamw_foreach", program=bert_trainer_eval_program, trace_entries=3000, summary=True,
    describe=lambda run, r: (
        f"BERT-large MLM under the HF Trainer, evaluation after 10 steps on a {gib(run.alloc.card_total)} A100, no "
        f"eval_accumulation_steps and no preprocess_logits_for_metrics: prediction_step returns the logits (32 x 512 x 30522 bf16 = "
        f"{mib(32 * 512 * 30522 * 2)} a batch) and evaluation_loop's nested_concat torch.cat()s them onto the GPU-resident predictions. "
        f"{gib(sum(b.size for b in run.kept if b.allocated))} are held when the next concatenation (old buffer plus one batch, in one piece) fails. "
        f"The accumulation grows without bound: eval_accumulation_steps or an argmax in preprocess_logits_for_metrics."))


def keep_feature_maps(run, outs):
    b = run.current_shape["batch"]
    chain = run.chain(run.loop["eval"], [("gradcam.py", 41, "hook")])
    run.kept.append(run.malloc(b * 2048 * 7 * 7 * 4, run.frames.stack(chain, "copy"), chain, track=False))


def resnet_eval_program(run):
    run.load()
    steps(run, {"batch": 64, "resolution": 224}, 8)
    for _ in range(2000):
        run.current_shape = {"batch": 128, "resolution": 224}
        run.eval_batch({"batch": 128, "resolution": 224}, keep=keep_feature_maps)


scenario(
    name="resnet152_gradcam_eval_keeps_feature_maps", case="eval_accumulation", phase="eval", step=8,
    model=lambda: models.resnet("resnet152"), card=CARDS["T4"], context=330 * MiB, era="2.0", loop="custom", optimizer="sgd_momentum",
    program=resnet_eval_program, trace_entries=2500,
    describe=lambda run, r: (
        f"ResNet-152 with SGD+momentum, 8 training steps, then a validation pass on a {gib(run.alloc.card_total)} T4 (PyTorch 2.0 snapshot) "
        f"whose forward hook on layer4 appends the fp32 feature maps (128 x 2048 x 7 x 7 = {mib(128 * 2048 * 49 * 4)} a batch) to a list for "
        f"Grad-CAM at the end. After {len([b for b in run.kept if b.allocated])} batches they hold {gib(sum(b.size for b in run.kept if b.allocated))} "
        f"and the next batch fails. Keep them on the CPU or compute the maps per batch."))

# ------------------------------------------------------------------------------------------
# leak


def resnet_retain_graph_program(run):
    run.load()
    for _ in range(400):
        run.current_shape = {"batch": knob("b", 16), "resolution": 224}
        run.train_step(run.current_shape, retain_graph=True)


scenario(
    name="resnet50_retain_graph_loss_history_leak", case="leak", phase=None, step=None,
    model=lambda: models.resnet("resnet50", blocks=(3, 4, 6, 3)), card=CARDS["RTX4090"], context=400 * MiB, era="2.4", loop="custom",
    optimizer="sgd_momentum", program=resnet_retain_graph_program, trace_entries=4000, summary=True,
    describe=lambda run, r: (
        f"ResNet-50 at a constant batch of {r['shape']['batch']} x 224 px on a {gib(run.alloc.card_total)} RTX 4090. The loop calls "
        f"loss.backward(retain_graph=True) (added to silence a 'backward through the graph a second time' error) and keeps every loss "
        f"in loss_history for plotting: each kept loss holds its step's graph, and with retain_graph the graph keeps its saved activations. "
        f"Live memory at the start of a step grows by about {gib((run.step_log[-1]['start'] - run.step_log[1]['start']) / max(1, len(run.step_log) - 2))} "
        f"every step with the batch unchanged, until step {r['step']} fails. Fix: drop retain_graph and keep loss.item()."))


def keep_router_logits(run):
    m = run.model
    b, t = run.current_shape["batch"], run.current_shape["tokens"]
    layers = sum(1 for layer in m.layers if "layers." in layer.name)
    chain = run.chain(run.loop["step"], [("train_moe.py", 212, "train"), ("train_moe.py", 97, "log_router_stats")])
    frames = run.frames.stack(chain, "copy")
    # one_hot(selected_experts, num_experts) per layer: tokens x top_k x experts int64
    run.kept.append(run.malloc(layers * b * t * 2 * 16 * 8, frames, chain, track=False))


def moe_leak_program(run):
    run.load("from_pretrained")
    for _ in range(600):
        run.current_shape = {"batch": knob("b", 6), "tokens": 2048}
        run.train_step(run.current_shape, on_step_end=keep_router_logits)


scenario(
    name="moe_router_logits_kept_for_stats_leak", case="leak", phase=None, step=None,
    model=lambda: models.llama("moe-16x125m", 12, 768, 12, 12, 2048, 50304, experts=16, top_k=2), card=CARDS["A10G"], context=450 * MiB,
    era="2.10", loop="custom", optimizer="adamw_fused", program=moe_leak_program, trace_entries=3000, text={"prefix": "[rank0]: "},
    describe=lambda run, r: (
        f"A small MoE (16 experts of a 768-wide FFN, top-2, {run.model.numel() / 1e6:.0f}M params) at a constant {r['shape']['batch']} x 2048 tokens on a "
        f"{gib(run.alloc.card_total)} A10G. To log routing balance the loop keeps every layer's expert mask "
        f"(one_hot(selected_experts, 16): 12 layers x {r['shape']['batch'] * 2048} tokens x 2 x 16 int64 = {mib(12 * r['shape']['batch'] * 2048 * 2 * 16 * 8)}) "
        f"of every step in a list that is only summarised at the end of the epoch. "
        f"Live memory at each step's start grows by that much every step until step {r['step']} fails; the trace is a ring buffer, so the "
        f"older kept tensors are visible only as live blocks. Fix: .cpu() or reduce per step."))


def keep_embeddings(run, saved):
    b, t = run.current_shape["batch"], run.current_shape["tokens"]
    chain = run.chain(run.loop["step"], [("train_simcse.py", 171, "train_step"), ("train_simcse.py", 120, "update_queue")])
    run.kept.append(run.malloc(2 * b * t * 768 * 4, run.frames.stack(chain, "copy"), chain, track=False))


def bert_queue_program(run):
    run.load("from_pretrained")
    for _ in range(1000):
        run.current_shape = {"batch": 64, "tokens": 256}
        run.train_step(run.current_shape, on_forward_end=keep_embeddings)


scenario(
    name="bert_base_contrastive_queue_never_trimmed_leak", case="leak", phase=None, step=None,
    model=lambda: models.bert("bert-base-uncased", 12, 768, 12, 3072, attention="sdpa", mlm=False), card=CARDS["T4"], context=350 * MiB,
    era="2.1", stacks="all", loop="custom", optimizer="adamw_foreach", program=bert_queue_program, trace_entries=5000,
    describe=lambda run, r: (
        f"A SimCSE-style BERT-base contrastive run at a constant 64 x 256 tokens on a {gib(run.alloc.card_total)} T4. A negatives queue "
        f"gets last_hidden_state.detach().float() of both dropout views (2 x 64 x 256 x 768 fp32 = {mib(2 * 64 * 256 * 768 * 4)}) every step, but the code that should "
        f"trim it to 4096 entries compares against len() of the wrong list and never fires. Live memory grows by that much per step until "
        f"step {r['step']} fails. Stacks are stacks='all' (C++ frames)."))

# ------------------------------------------------------------------------------------------
# other_process


def resnet152_other_program(run):
    run.load()
    steps(run, {"batch": 128, "resolution": 224}, 3)


scenario(
    name="resnet152_card_shared_with_jupyter_kernel", case="other_process", phase="forward", step=0,
    model=lambda: models.resnet("resnet152"), card=CARDS["RTX4090"], context=420 * MiB, other=int(13.6 * GiB), era="2.6", loop="custom",
    optimizer="sgd_momentum", program=resnet152_other_program, text={"processes": "other", "pid": 18842}, summary=True,
    also_without_text=["working_set"],
    describe=lambda run, r: (
        f"ResNet-152 at 128 x 224 px with SGD on a {gib(run.alloc.card_total)} RTX 4090 on which a forgotten Jupyter kernel (PID 18842) "
        f"still holds {gib(run.alloc.other_process_bytes)}. The run needs about {gib(r['info']['reserved'] + r['info']['alloc_size'])} at the "
        f"failure, well within the card; it fails in the first forward because only {gib(run.alloc.card_total - run.alloc.context_bytes - run.alloc.other_process_bytes)} "
        f"was left to it. The message lists the other process. From the snapshot alone the card size is unknown."))


def qlora_load_program(run):
    run.load("from_pretrained")


scenario(
    name="qlora_mistral7b_load_beside_vllm_server", case="other_process", phase="load", step=0,
    model=lambda: models.llama("Mistral-7B-v0.1 (4-bit) + LoRA", 32, 4096, 32, 8, 14336, 32000, lora_rank=16, quant_bits=4),
    card=CARDS["H100"], context=520 * MiB, other=int(76.9 * GiB), era="2.8", loop="custom", optimizer="adamw_8bit", program=qlora_load_program,
    text={"processes": "other", "pid": 2291, "smi": True, "other_name": "/usr/bin/python3 -m vllm.entrypoints.openai.api_server"},
    also_without_text=["capacity"],
    describe=lambda run, r: (
        f"QLoRA set-up of a Mistral-7B-shaped model (4-bit base, about {gib(sum(run.model.param_bytes(n, t) for l in run.model.layers for _, n, t in l.params))} "
        f"to load) on an {gib(run.alloc.card_total)} H100 where a vLLM server (PID 2291, gpu_memory_utilization=0.97) already holds "
        f"{gib(run.alloc.other_process_bytes)}. Loading fails after {gib(r['info']['allocated'])}. The nvidia-smi table pasted below the "
        f"traceback shows the server. A run that cannot hold 4 GiB on an 80 GiB card is not out of capacity: someone else holds the memory. "
        f"The snapshot alone does not show the card's size (a model that outgrew a 3 GiB card looks the same), so capacity is "
        f"accepted without the text."))

# ------------------------------------------------------------------------------------------
# memory_fraction_cap


def unet_fraction_program(run):
    run.load()
    steps(run, {"batch": knob("b", 48), "resolution": 64, "attention": "sdpa"}, 3)


scenario(
    name="sd15_unet_memory_fraction_035", case="memory_fraction_cap", phase="forward", step=0,
    model=lambda: models.unet("stable-diffusion-v1-5/unet"), card=CARDS["A100-80"], context=520 * MiB, fraction=0.35, era="2.4",
    loop="accelerate", optimizer="adamw_8bit", program=unet_fraction_program, summary=True,
    describe=lambda run, r: (
        f"SD-1.5-shaped UNet training with torch.cuda.set_per_process_memory_fraction(0.35) left in from a shared-node experiment, on a "
        f"{gib(run.alloc.card_total)} A100: the process may reserve {gib(run.alloc.allowed)}. At the failure it has reserved "
        f"{gib(r['info']['reserved'])} and the card still has {gib(r['info']['device_free'])} free; the {mib(r['info']['alloc_size'])} request "
        f"is refused by the limit, not by the card. The message's 'allowed' clause says so."))


def bert_fraction_program(run):
    run.load()
    steps(run, {"batch": knob("b", 16), "tokens": 384}, 4)


scenario(
    name="bert_large_fraction_quarter_torch20", case="memory_fraction_cap", phase=None, step=None,
    model=lambda: models.bert("bert-large-uncased", 24, 1024, 16, 4096, attention="eager"), card=CARDS["V100-32"], context=400 * MiB,
    fraction=0.25, era="2.0", loop="custom", optimizer="adamw_foreach", program=bert_fraction_program, trace_entries=3000,
    text={"exception": "torch.cuda.OutOfMemoryError"},
    describe=lambda run, r: (
        f"BERT-large SQuAD-style fine-tune, PyTorch 2.0 (T1 message, block history in the snapshot), four jobs packed on one "
        f"{gib(run.alloc.card_total)} V100 with set_per_process_memory_fraction(0.25): {gib(run.alloc.allowed)} allowed. It fails with "
        f"{gib(r['info']['device_free'])} free on the card: the per-process limit, not the card, stopped it."))

# ------------------------------------------------------------------------------------------
# large_allocation


def mt5_program(run):
    run.load("from_pretrained")
    steps(run, {"batch": 16, "tokens": 512, "cross_tokens": 512}, 2)


scenario(
    name="mt5_small_250k_vocab_fp32_logits", case="large_allocation", phase="forward", step=0,
    model=lambda: models.t5("mt5-small", 8, 512, 6, 1024, vocab=250112, weight_bytes=2, attention="sdpa"), card=CARDS["T4"], context=380 * MiB,
    era="2.3", loop="trainer", optimizer="adamw_8bit", program=mt5_program, text={"wrap": 120},
    describe=lambda run, r: (
        f"mT5-small (250112-token vocabulary: most of its {run.model.numel() / 1e6:.0f}M params are embeddings; bf16) fine-tuned with the HF "
        f"Trainer at 16 x 512 target tokens on a {gib(run.alloc.card_total)} T4. The loss upcasts the logits to fp32: one tensor of "
        f"16 x 512 x 250112 x 4 bytes = {gib(16 * 512 * 250112 * 4)}, {16 * 512 * 250112 * 4 / run.alloc.card_total:.0%} of the card, in a single request, with {gib(r['info']['allocated'])} allocated "
        f"before it. Fix: a chunked/fused cross-entropy or fewer target tokens per micro-batch."))


def similarity_program(run):
    run.load("from_pretrained")
    steps(run, {"batch": 64, "tokens": 128}, 20)
    run.phase = "eval"
    chain = run.chain(run.loop["eval"], [("train.py", 201, "retrieval_recall")])
    frames = run.frames.stack(chain, "mm")
    emb = run.malloc(78000 * 768 * 4, frames, chain)
    run.kept.append(emb)
    run.current_shape = {"batch": 78000}
    run.malloc(78000 * 78000 * 4, run.frames.stack(chain[:-1] + [("train.py", 204, "retrieval_recall")], "mm"), chain[:-1] + [("train.py", 204, "retrieval_recall")])


scenario(
    name="bert_biencoder_full_similarity_matrix", case="large_allocation", phase="eval", step=20,
    model=lambda: models.bert("bert-base-uncased", 12, 768, 12, 3072, attention="sdpa", mlm=False), card=CARDS["RTX4090"], context=430 * MiB,
    era="2.10", loop="custom", optimizer="adamw_fused", program=similarity_program,
    describe=lambda run, r: (
        f"A BERT-base bi-encoder trained for 20 steps on a {gib(run.alloc.card_total)} RTX 4090, then a recall@k evaluation computes "
        f"queries @ corpus.T for 78,000 x 78,000 embeddings at once: one fp32 matrix of {gib(78000 * 78000 * 4)}, "
        f"{78000 * 78000 * 4 / run.alloc.card_total:.0%} of the card, in a single request, while everything else live is "
        f"{gib(r['info']['allocated'])}. Compute it in blocks of queries (or use faiss)."))

# ------------------------------------------------------------------------------------------
# working_set


def resnet_ws_program(run):
    run.load()
    steps(run, {"batch": knob("b", 512), "resolution": 224}, 2)


scenario(
    name="resnet101_batch512_first_forward_working_set", case="working_set", phase="forward", step=0,
    model=lambda: models.resnet("resnet101", blocks=(3, 4, 23, 3)), card=CARDS["A10G"], context=410 * MiB, era="2.1", loop="custom",
    optimizer="sgd_momentum", program=resnet_ws_program, text={"wrap": 120},
    describe=lambda run, r: (
        f"ResNet-101 at batch {r['shape']['batch']} x 224 px (a linear-scaling recipe written for 8 GPUs run on one) with SGD on a "
        f"{gib(run.alloc.card_total)} A10G. Weights and momentum are {gib(run.projected_fixed_bytes())}; the first forward runs out after "
        f"{gib(r['info']['allocated'] - sum(p[4].size for p in run.params))} of saved feature maps with no single large request, no growth and "
        f"nothing else on the card. The batch's working set is too large: a smaller micro-batch with accumulation, or checkpointing."))

# ------------------------------------------------------------------------------------------
# fragmentation


def serve_program(run, requests, slots, max_new, kv_bytes_per_token, chain_tail):
    """A naive batch-1-per-request server on transformers' StaticCache: each admitted request
    allocates its own k/v buffers for prompt + max_new tokens (one tensor per layer and side), its
    prefill runs, and the buffers live until the request finishes. Requests of different lengths
    finish at different times, so freed caches leave holes between live ones."""
    run.load("from_pretrained")
    run.phase = "eval"
    layers = sum(1 for layer in run.model.layers if "layers." in layer.name)
    base = run.chain([("serve.py", 144, "worker"), ("serve.py", 118, "admit")])
    cache_chain = base + [("transformers/generation/utils.py", 1838, "_get_cache"), ("transformers/cache_utils.py", 1190, "__init__")]
    cache_frames = run.frames.stack(cache_chain, "empty")
    active = []  # (finish tick, [blocks])
    tick = 0
    for prompt in requests:
        tick += 1
        run.alloc.window_peak = run.alloc.allocated
        start = run.alloc.allocated
        while len(active) >= slots or (active and active[0][0] <= tick):
            _, blocks = active.pop(0)
            for b in blocks:
                run.free(b)
            active.sort(key=lambda x: x[0])
        total = prompt + max_new
        run.current_shape = {"batch": 1, "tokens": total}
        run.last_chain = cache_chain
        blocks = []
        for _ in range(2 * layers):
            blocks.append(run.malloc(total * kv_bytes_per_token // (2 * layers), cache_frames, cache_chain, track=False))
        # prefill: one no-grad forward over the prompt; its activations die layer by layer
        outer = base[:-1] + [("serve.py", 125, "admit"), ("torch/utils/_contextlib.py", 116, "decorate_context"),
                        ("transformers/generation/utils.py", 2215, "generate"), ("transformers/generation/utils.py", 3206, "_sample")]
        d = run.model.layers[0].params[0][1] // 32000
        vocab = run.model.layers[0].params[0][1] // d
        pf_chain = outer + run.frames.module_call() + [(run.model.top_file, 1190, "forward")]
        pf_frames = run.frames.stack(pf_chain, "linear")
        hidden = run.malloc(prompt * d * 2, pf_frames, pf_chain, track=False)
        mlp = run.malloc(prompt * d * 2 * 11008 // 4096, pf_frames, pf_chain, track=False)
        run.free(mlp)
        logits = run.malloc(prompt * vocab * 2, pf_frames, pf_chain, track=False)
        run.free(hidden)
        run.free(logits)
        # a request lives for its generated tokens (the same budget for all), give or take early stops
        active.append((tick + max(2, max_new // chain_tail + (prompt * 7919) % 23), blocks))
        active.sort(key=lambda x: x[0])
        run.step_log.append({"step": tick, "start": start, "peak": run.alloc.window_peak, "end": run.alloc.allocated,
                             "shape": dict(run.current_shape)})
        run.clock.gap(250000)


def llama_serve(run):
    serve_program(run, lengths(77, 800, 64, 3584, 64), knob("slots", 52), 512, 2 * 32 * 4096 * 2, knob("div", 6))


scenario(
    name="llama2_7b_static_cache_server_fragmentation", case="fragmentation", phase="eval", step=0,
    model=lambda: models.llama("Llama-2-7b-chat-hf", 32, 4096, 32, 32, 11008, 32000), card=CARDS["A100-80"], context=540 * MiB,
    era="2.6", loop="serve", program=llama_serve, trace_entries=5000, batch_size_of=tokens_of, summary=True,
    describe=lambda run, r: (
        f"Not training: a Llama-2-7B chat model (bf16) served one request per slot with transformers' StaticCache on a "
        f"{gib(run.alloc.card_total)} A100. Each admitted request allocates its own key/value buffers (64 tensors sized for prompt + 512 "
        f"new tokens, 512 KiB per token) and keeps them until it finishes; prompts of 64-3584 tokens finish at different times, so the "
        f"freed caches leave holes between live ones. Live memory stays bounded by the slot count; after {len(run.step_log)} requests "
        f"{gib(r['info']['reserved'] - r['info']['allocated'])} of the reserved memory is free but the largest piece is "
        f"{mib(r['info']['largest_free'])}, and a {mib(r['info']['rounded'])} buffer for the next request fails. expandable_segments:True "
        f"(or a paged KV cache) fixes it."))


def mistral_serve(run):
    serve_program(run, lengths(4242, 900, 128, 7168, 128), knob("slots", 96), 1024, 2 * 32 * 1024 * 2, knob("div", 12))


scenario(
    name="mistral7b_static_cache_rag_server_fragmentation", case="fragmentation", phase="eval", step=0,
    model=lambda: models.llama("Mistral-7B-Instruct-v0.2", 32, 4096, 32, 8, 14336, 32000), card=CARDS["H100"], context=600 * MiB,
    era="2.10", stacks="all", loop="serve", program=mistral_serve, trace_entries=5000, batch_size_of=tokens_of,
    text={"wrap": 120}, alloc_conf="",
    describe=lambda run, r: (
        f"Not training: a RAG service answering with a Mistral-7B-shaped model (bf16, GQA 32/8 heads: 128 KiB of cache per token) on a "
        f"{gib(run.alloc.card_total)} H100, one StaticCache per request sized for prompt + 1024 new tokens, prompts of 128-7168 tokens "
        f"(retrieved passages), up to 40 requests at once. Caches are freed as requests finish, out of order, and the holes they leave "
        f"are never the right size for long prompts. After {len(run.step_log)} requests {gib(r['info']['reserved'] - r['info']['allocated'])} "
        f"of the reserved memory is free, the largest piece {mib(r['info']['largest_free'])}, and a {mib(r['info']['rounded'])} request fails "
        f"with the live set well inside the card. Stacks are stacks='all'. expandable_segments:True or a paged KV cache fixes it."))
