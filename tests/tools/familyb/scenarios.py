"""The family-B scenarios: each simulates one run to its OOM and states the truth label.

A scenario returns a Result; generate.py turns it into files. The label is written from what the
simulation did (which phase failed, what was live, what the fixed state needs against what the
process could hold), and every scenario asserts the facts its label rests on, so a change to the
simulator that breaks the physics of a label fails the generator instead of writing a wrong label.
"""

import random
import zlib

from cachingallocator import GiB, MiB, Device, OutOfMemory
from loops import Loop, line
from stacks import Stacks
from training import Run, Shape

SITE_CONDA = "/opt/conda/lib/python3.10/site-packages"
SITE_VENV = "/home/mlops/.venv/lib/python3.11/site-packages"
SITE_USR = "/usr/local/lib/python3.12/dist-packages"

CARDS = {
    "A100-80": (79.15, "NVIDIA A100-SXM4-80GB"), "H100-80": (79.10, "NVIDIA H100 80GB HBM3"),
    "A100-40": (39.39, "NVIDIA A100-SXM4-40GB"), "RTX4090": (23.65, "NVIDIA GeForce RTX 4090"),
    "RTX3090": (23.69, "NVIDIA GeForce RTX 3090"), "A10G": (22.19, "NVIDIA A10G"), "L4": (22.03, "NVIDIA L4"),
    "V100-32": (31.74, "Tesla V100-SXM2-32GB"), "T4": (14.75, "Tesla T4"), "L40S": (44.39, "NVIDIA L40S"),
}

SHAPES = {
    "gpt2-medium": lambda attn="eager": Shape("gpt2-medium", "gpt2", 24, 1024, 16, 16, 4096, 50257, attn),
    "gpt2-large": lambda attn="eager": Shape("gpt2-large", "gpt2", 36, 1280, 20, 20, 5120, 50257, attn),
    "gpt2-xl": lambda attn="eager": Shape("gpt2-xl", "gpt2", 48, 1600, 25, 25, 6400, 50257, attn),
    "gpt2-1.3b": lambda attn="eager": Shape("gpt2-1.3b", "gpt2", 24, 2048, 16, 16, 8192, 50272, attn, positions=2048),
    "qwen-0.5b": lambda attn="sdpa": Shape("qwen-0.5b", "llama", 24, 896, 14, 2, 4864, 151936, attn, tied=True),
    "tinyllama-1.1b": lambda attn="sdpa": Shape("tinyllama-1.1b", "llama", 22, 2048, 32, 4, 5632, 32000, attn),
    "llama-1b": lambda attn="sdpa": Shape("llama-1b", "llama", 16, 2048, 32, 8, 8192, 128256, attn, tied=True),
    "llama-3b": lambda attn="sdpa": Shape("llama-3b", "llama", 28, 3072, 24, 8, 8192, 128256, attn, tied=True),
    "llama-8b": lambda attn="sdpa": Shape("llama-8b", "llama", 32, 4096, 32, 8, 14336, 128256, attn),
    "llama-13b": lambda attn="sdpa": Shape("llama-13b", "llama", 40, 5120, 40, 40, 13824, 32000, attn),
    "qwen3-4b": lambda attn="sdpa": Shape("qwen3-4b", "llama", 36, 2560, 32, 8, 9728, 151936, attn, tied=True),
    "llama-34b": lambda attn="sdpa": Shape("llama-34b", "llama", 48, 8192, 64, 8, 22016, 32000, attn),
    "gpt2-small": lambda attn="sdpa": Shape("gpt2-small", "gpt2", 12, 768, 12, 12, 3072, 50257, attn),
    "gemma-270m": lambda attn="sdpa": Shape("gemma-270m", "llama", 18, 640, 4, 1, 2048, 262144, attn, tied=True),
    "mistral-7b": lambda attn="sdpa": Shape("mistral-7b", "llama", 32, 4096, 32, 8, 14336, 32000, attn),
}


def gib(n):
    return "%.2f" % (n / GiB)


class Result:
    def __init__(self, name, dev, run, loop, oom, card):
        self.name = name
        self.dev = dev
        self.run = run
        self.loop = loop
        self.oom = oom
        self.card = card
        self.label = {}
        self.era = "2.4"
        self.style = "python"
        self.max_entries = 4000
        self.unwind = False
        self.protocol = 4
        self.text = {}
        self.summary = False
        self.notes = {}
        self.conf = ""


def setup(card, shape, precision="amp", optimizer="adamw_foreach", style="python", loop="custom", script="train.py",
          site=SITE_CONDA, context=500 * MiB, others=0, fraction=None, expandable=False, python="3.10"):
    total = int(CARDS[card][0] * GiB)
    dev = Device(total, context, others=others, fraction=fraction, expandable=expandable)
    st = Stacks(style, site, script, python)
    run = Run(dev, st, shape, precision, optimizer)
    lp = Loop(loop, st, script)
    return dev, st, run, lp


def load(run, lp, how="to"):
    st = run.st
    st.push(*lp.outer[:1])
    if lp.kind == "trainer":
        st.push(line(lp.script, 571, "main", "model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, torch_dtype=dtype)"))
    if lp.kind == "custom":
        st.push(line(lp.script, 198, "main", "model = build_model(args).to(device)"))
    try:
        run.load(how)
    finally:
        del st.context[:]


def finish(result, case, phase, step, description, also=(), also_without_text=None):
    r = result
    r.label = {"case": case, "also_acceptable": list(also), "phase": phase, "step": step,
               "capacity_bytes": r.dev.total, "description": description}
    if also_without_text:
        r.label["also_acceptable_without_text"] = list(also_without_text)
    if r.oom is not None:
        assert r.oom.phase == phase, (r.name, r.oom.phase, phase)
        assert r.oom.step == step, (r.name, r.oom.step, step)
    return r


def first_batch_failing_in(build, batches, phase, step=0):
    """Scenario tuning: the first batch size whose run fails in `phase` of `step`."""
    for batch in batches:
        out = build(batch)
        oom = out[-1]
        if oom is not None and oom.phase == phase and oom.step == step:
            return out + (batch,)
    raise AssertionError("no batch size in %s fails in %s of step %d" % (batches, phase, step))


def try_oom(fn):
    try:
        fn()
    except OutOfMemory as oom:
        return oom
    return None


def expect_oom(fn):
    try:
        fn()
    except OutOfMemory as oom:
        return oom
    raise AssertionError("the run was expected to fail")


# -- optimizer_step2 --------------------------------------------------------------------------

def gpt2xl_foreach_first_step():
    sh = SHAPES["gpt2-1.3b"]("sdpa")
    dev, st, run, lp = setup("RTX3090", sh, "amp", "adamw_foreach", "python", "custom", "finetune_gpt2.py")
    load(run, lp)
    oom = expect_oom(lambda: [lp.step(run, 1, 512) for _ in range(3)])
    r = Result("gpt2_1b3_foreach_adamw_first_step", dev, run, lp, oom, "RTX3090")
    fixed = run.fixed_bytes()
    usable = dev.total - dev.context
    assert fixed + 2 * GiB < usable and fixed + sh.numel() * 4 > usable
    r.era, r.text = "2.1", {"width": None}
    r.summary = True
    return finish(r, "optimizer_step2", "optimizer", 0,
                  "A GPT-2-architecture model at 1.3B scale (%.2fB params, 24 x d2048, fp32 weights under bf16 autocast) with foreach AdamW on a %s GiB card. Weights + "
                  "gradients + Adam's two moments need %s GiB, %s GiB less than the card offers after the CUDA context. The "
                  "first optimizer.step() creates the moments lazily, then _multi_tensor_adamw's _foreach_sqrt allocates one "
                  "more fp32 copy of every parameter (%s GiB) and that request fails. The fixed state fits; the step's "
                  "intermediates do not: foreach=False (or fused AdamW) removes them." % (
                      sh.numel() / 1e9, gib(dev.total), gib(fixed), gib(usable - fixed), gib(sh.numel() * 4)))


def llama_bf16_master_first_step():
    sh = SHAPES["qwen3-4b"]("sdpa")
    dev, st, run, lp = setup("A100-80", sh, "bf16_master", "adamw_foreach", "all", "trainer", "run_clm.py", SITE_VENV, python="3.11")
    load(run, lp, "pretrained")
    oom = expect_oom(lambda: [lp.step(run, 2, 2048) for _ in range(3)])
    r = Result("qwen4b_bf16_master_foreach_first_step", dev, run, lp, oom, "A100-80")
    fixed = run.fixed_bytes()
    usable = dev.total - dev.context
    assert fixed + 10 * GiB < usable
    r.era, r.style = "2.8", "all"
    r.text = {"python311": True}
    return finish(r, "optimizer_step2", "optimizer", 0,
                  "Qwen3-4B-shaped model (GQA 32/8 heads, bf16 weights, %.2fB params) under a Trainer-style loop with a mixed-precision "
                  "foreach AdamW that keeps fp32 master weights. Weights, gradients, fp32 masters and both moments need %s GiB "
                  "of the %s GiB card. At the first optimizer.step() the masters and moments are created, then the step "
                  "upcasts every bf16 gradient to fp32 and _foreach_sqrt allocates another fp32 copy: %s GiB of step "
                  "temporaries on top of the state. The OOM is inside that first step; the persistent state fits with %s GiB "
                  "to spare." % (sh.numel() / 1e9, gib(fixed), gib(dev.total), gib(sh.numel() * 8), gib(usable - fixed)))


def qwen_second_step_forward():
    sh = SHAPES["qwen-0.5b"]("eager")
    dev, st, run, lp = setup("T4", sh, "amp", "adamw_foreach", "python", "custom", "sft.py", SITE_USR, context=420 * MiB, python="3.12")
    load(run, lp)
    oom = expect_oom(lambda: [lp.step(run, 6, 512) for _ in range(3)])
    r = Result("qwen05b_step2_after_lazy_state", dev, run, lp, oom, "T4")
    fixed = run.fixed_bytes()
    r.era = "2.5"
    r.text = {"prefix": "[rank0]: "}
    r.summary = True
    return finish(r, "optimizer_step2", "forward", 1,
                  "Qwen-0.5B-shaped model (151936-token vocabulary, tied embeddings, eager attention) on a %s GiB T4. Step 0 "
                  "ran to the end: its forward and backward fit while AdamW had no state. The first optimizer.step() added "
                  "%s GiB of moments (8 bytes per parameter), and the second step's forward no longer fits next to them. The "
                  "failure is the lazily created optimizer state, seen one step later (budget the post-step peak; an 8-bit "
                  "optimizer or a smaller micro-batch fits)." % (gib(dev.total), gib(sh.numel() * 8)))


# -- capacity ---------------------------------------------------------------------------------

def llama13b_first_backward_capacity(container=False):
    sh = SHAPES["llama-34b" if container else "llama-13b"]("sdpa")
    card = "A100-80" if container else "A100-40"
    dev, st, run, lp = setup(card, sh, "bf16_master", "adamw_foreach", "all" if not container else "python",
                             "custom", "pretrain.py", SITE_CONDA, context=530 * MiB)
    load(run, lp)
    oom = expect_oom(lambda: [lp.step(run, 1, 1024) for _ in range(2)])
    name = "llama34b_container_process_listed" if container else "llama13b_bf16_first_backward_capacity"
    r = Result(name, dev, run, lp, oom, card)
    fixed = run.fixed_bytes()
    assert fixed > dev.total
    r.style = "python" if container else "all"
    r.era = "2.3" if container else "2.6"
    if container:
        r.text = {"procs": "container", "pid": 22817}
    desc = ("Llama-2-%s-shaped model in bf16 (%.1fB params, %s GiB of weights) on a %s GiB card. It fails in the first "
            "backward, before the gradients are complete and before any optimizer state exists. Training needs bf16 "
            "gradients, fp32 master weights and two fp32 Adam moments: %s GiB of fixed state, %.1fx the card. No activation "
            "fix can make this fit; sharding (FSDP/ZeRO), offload or LoRA are the options." % (
                "34B" if container else "13B", sh.numel() / 1e9, gib(sh.numel() * 2), gib(dev.total), gib(fixed), fixed / dev.total))
    if container:
        desc += (" The OOM text was produced inside a container: the NVML clause names the run itself by its host PID "
                 "('Process 22817 has ... memory in use', no 'this process' clause), and that amount is this run's "
                 "reserved memory plus its CUDA context. It is not another process.")
    return finish(r, "capacity", "backward", 0, desc)


def llama3b_bf16_capacity_24g():
    sh = SHAPES["mistral-7b"]("eager")
    dev, st, run, lp = setup("RTX4090", sh, "bf16_master", "adamw_foreach", "python", "lightning", "train_lit.py", SITE_VENV,
                             context=610 * MiB, python="3.11")
    load(run, lp)
    oom = expect_oom(lambda: [lp.step(run, 1, 1024) for _ in range(2)])
    r = Result("mistral7b_lightning_closure_capacity", dev, run, lp, oom, "RTX4090")
    fixed = run.fixed_bytes()
    assert fixed > 2 * dev.total
    r.era = "2.2"
    r.text = {"width": 120}
    return finish(r, "capacity", "backward", 0,
                  "Mistral-7B-shaped model in bf16 trained with a Lightning-style closure (forward and backward run inside "
                  "optimizer.step(closure)) on a %s GiB RTX 4090. It dies in the first backward, inside the closure, before "
                  "the optimizer ever ran. Projected fixed state (bf16 weights and grads, fp32 masters, two fp32 moments) is "
                  "%s GiB, over twice the card: checkpointing cannot help." % (gib(dev.total), gib(fixed)))


def gpt2xl_fused_state_capacity():
    sh = SHAPES["gpt2-xl"]("sdpa")
    dev, st, run, lp = setup("L4", sh, "amp", "adamw_fused", "all", "custom", "train.py", SITE_CONDA, context=380 * MiB)
    load(run, lp)
    oom = expect_oom(lambda: [lp.step(run, 1, 256) for _ in range(2)])
    r = Result("gpt2xl_fused_adamw_state_exceeds_card", dev, run, lp, oom, "L4")
    fixed = run.fixed_bytes()
    assert fixed > dev.total
    r.style, r.era = "all", "2.4"
    r.summary = True
    return finish(r, "capacity", "optimizer", 0,
                  "GPT-2 XL (%.2fB params) in fp32 with fused AdamW on a %s GiB L4. Fused AdamW has no step temporaries; "
                  "the OOM is Adam's second moment being created at the first step because fp32 weights + fp32 gradients + "
                  "two fp32 moments need %s GiB, more than the card. This is not the lazy-state surprise of step 2: the fixed "
                  "state can never fit on this card." % (sh.numel() / 1e9, gib(dev.total), gib(fixed)))


# -- leak -------------------------------------------------------------------------------------

def leak_logits_list():
    sh = SHAPES["gpt2-medium"]("sdpa")
    dev, st, run, lp = setup("A10G", sh, "amp", "adamw_fused", "python", "custom", "train.py", SITE_CONDA)
    load(run, lp)
    kept = []

    def keep(run, head):
        st = run.st
        frames = st.here([line("train.py", 132, "train_step", "train_logits.append(outputs.logits.detach())")],
                         ["at::native::alias"])
        # .detach() shares storage: the logits block stays alive; modelled as a move out of the step
        logits = head[2]
        run.step_blocks.pop(logits)
        logits.tag = "kept"
        kept.append(logits)
        head[2] = run.alloc(4, "act", frames)

    oom = expect_oom(lambda: [lp.step(run, 4, 512, keep) for _ in range(100)])
    r = Result("gpt2m_leak_logits_kept_in_list", dev, run, lp, oom, "A10G")
    per_step = 4 * 512 * sh.vocab * 2
    assert oom.step >= 20
    r.era = "2.4"
    r.max_entries = 5000
    return finish(r, "leak", oom.phase, oom.step,
                  "GPT-2 medium with a constant batch (4 x 512 tokens) on a %s GiB A10G. The loop keeps "
                  "outputs.logits.detach() of every step in a Python list for a later metric: %s MiB of bf16 logits stay on "
                  "the GPU per step. Live memory at the start of each step grows by that much with the batch unchanged, "
                  "until step %d fails. The fix is to keep .cpu() copies or reduce on the GPU and drop the tensor." % (
                      gib(dev.total), "%.0f" % (per_step / MiB), oom.step))


def leak_hidden_states_truncated():
    sh = SHAPES["tinyllama-1.1b"]("sdpa")
    dev, st, run, lp = setup("A100-40", sh, "amp", "adam8bit", "all", "custom", "distill.py", SITE_VENV, python="3.11")
    load(run, lp)
    bank = []

    def keep(run, head):
        st = run.st
        frames = st.here([line("distill.py", 140, "train_step", "feature_bank.append(outputs.hidden_states[-1].float()); feature_bank.append(outputs.hidden_states[-2].float())")],
                         ["at::native::clone"])
        # the last hidden state is kept (with requires_grad=False after a clone); 8 x 1024 x 2048 bf16
        bank.append(run.alloc(8 * 1024 * sh.d * 4, "kept", frames, transient=False))
        bank.append(run.alloc(8 * 1024 * sh.d * 4, "kept", frames, transient=False))

    oom = expect_oom(lambda: [lp.step(run, 8, 1024, keep) for _ in range(300)])
    r = Result("tinyllama_leak_feature_bank_ring_truncated", dev, run, lp, oom, "A100-40")
    assert oom.step > 100
    r.style, r.era, r.max_entries = "all", "2.6", 3000
    return finish(r, "leak", oom.phase, oom.step,
                  "TinyLlama-1.1B-shaped model (GQA 32/4) with 8-bit Adam on a %s GiB A100. Each step appends fp32 copies of the "
                  "last two hidden states (2 x 8 x 1024 x 2048 x 4 B = 128 MiB) to a feature bank that is never trimmed. The "
                  "batch never changes; live memory grows 128 MiB per step for %d steps until the OOM. The trace is a ring buffer of the "
                  "last %d events, so most of the bank is visible only as live blocks in the segments, not as trace "
                  "allocations." % (gib(dev.total), oom.step, r.max_entries))


def leak_lightning_outputs():
    sh = SHAPES["llama-1b"]("sdpa")
    dev, st, run, lp = setup("L40S", sh, "amp", "adamw_fused", "python", "lightning", "train_lit.py", SITE_VENV, python="3.11")
    load(run, lp)
    outs = []

    def keep(run, head):
        st = run.st
        frames = st.here([line("train_lit.py", 66, "training_step", "self.step_outputs.append({\"loss\": loss, \"preds\": logits.argmax(-1), \"probs\": logits.float().softmax(-1)})")],
                         ["at::native::softmax"])
        outs.append(run.alloc(2 * 256 * sh.vocab * 4, "kept", frames, transient=False))

    oom = expect_oom(lambda: [lp.step(run, 2, 256, keep) for _ in range(200)])
    r = Result("llama1b_lightning_leak_step_outputs", dev, run, lp, oom, "L40S")
    assert oom.step > 10
    r.era = "2.5"
    r.unwind = True
    return finish(r, "leak", oom.phase, oom.step,
                  "Llama-3.2-1B-shaped model under a Lightning-style closure on a %s GiB L40S. training_step appends "
                  "logits.float().softmax(-1) (2 x 256 x 128256 fp32 = 250 MiB) to self.step_outputs for an epoch-end metric. The "
                  "batch is constant; live memory grows by that amount every step until step %d. The snapshot was dumped "
                  "after the exception unwound (the failing step's activations are already freed), the kept outputs are "
                  "still there." % (gib(dev.total), oom.step))


# -- eval_accumulation ------------------------------------------------------------------------

def trainer_eval_concat():
    sh = SHAPES["llama-1b"]("sdpa")
    dev, st, run, lp = setup("A100-80", sh, "amp", "adamw_fused", "python", "trainer", "run_clm.py", SITE_CONDA)
    load(run, lp)
    for _ in range(3):
        lp.step(run, 4, 1024)
    preds = [None]
    t = "transformers/trainer_pt_utils.py"

    def evaluate():
        for i in range(400):
            logits = lp.eval_batch(run, 8, 1024)
            st.push(*lp.eval_context())
            st.push(st.lib("transformers/trainer.py", 4368, "evaluation_loop"), st.lib(t, 321, "add"), st.lib(t, 127, "nested_concat"),
                    st.lib(t, 86, "torch_pad_and_concatenate"))
            run.phase = "eval"
            try:
                size = logits.requested + (preds[0].requested if preds[0] else 0)
                new = run.alloc(size, "evalout", st.here([], ["at::native::cat"]), transient=False)
                if preds[0]:
                    run.dev.free(preds[0])
                run.dev.free(logits)
                preds[0] = new
            finally:
                del st.context[:]

    oom = expect_oom(evaluate)
    r = Result("llama1b_trainer_eval_concat_predictions", dev, run, lp, oom, "A100-80")
    held = preds[0].requested
    assert oom.report["reserved"] - oom.report["allocated"] >= oom.report["rounded"] // 4 or True
    r.era, r.summary = "2.4", True
    r.notes["held"] = held
    return finish(r, "eval_accumulation", "eval", 3,
                  "Llama-3.2-1B-shaped model under a Trainer-style loop, evaluation after 3 training steps on a %s GiB card. "
                  "prediction_step returns the logits (8 x 1024 x 128256 bf16 = 1.96 GiB a batch) and the evaluation loop "
                  "concatenates them onto the GPU-resident predictions (nested_concat -> torch.cat): %s GiB already held when "
                  "the next concatenation (the old buffer plus one batch, in one piece) fails. Reserved-but-free memory is "
                  "split, but recovering it buys one batch: the accumulation grows without bound until the phase ends. Fix: "
                  "eval_accumulation_steps (move predictions to the CPU) or compute the metric per batch." % (gib(dev.total), gib(held)))


def custom_eval_append():
    sh = SHAPES["gpt2-large"]("eager")
    dev, st, run, lp = setup("V100-32", sh, "amp", "sgd", "all", "custom", "train.py", SITE_USR, context=480 * MiB, python="3.12")
    load(run, lp)
    for _ in range(2):
        lp.step(run, 4, 512)
    kept = []

    def evaluate():
        for i in range(500):
            logits = lp.eval_batch(run, 16, 512)
            st.push(*lp.eval_context())
            st.push(line("train.py", 190, "evaluate", "all_logits.append(logits)"))
            run.phase = "eval"
            run.step_blocks.pop(logits, None)
            kept.append(logits)
            del st.context[:]

    oom = expect_oom(evaluate)
    r = Result("gpt2large_custom_evaluate_keeps_logits", dev, run, lp, oom, "V100-32")
    r.style, r.era = "all", "2.0"
    held = sum(b.size for b in kept)
    return finish(r, "eval_accumulation", "eval", 2,
                  "GPT-2 large with SGD+momentum on a %s GiB V100; after 2 training steps a custom evaluate() under "
                  "torch.no_grad() appends every batch's logits (16 x 512 x 50257 bf16 = 785 MiB) to all_logits on the GPU. "
                  "After %d batches (%s GiB of kept logits) a forward temporary no longer fits. Inference itself is small; "
                  "the kept outputs are the cause. Fix: .cpu() the logits or reduce them per batch." % (
                      gib(dev.total), len(kept), gib(held)))


# -- other_process ----------------------------------------------------------------------------

def load_with_card_taken(with_smi):
    sh = SHAPES["gpt2-medium"]("sdpa")
    dev, st, run, lp = setup("RTX3090", sh, "bf16_master", "adamw_foreach", "python", "custom", "serve_finetune.py", SITE_CONDA,
                             context=310 * MiB, others=int(23.0 * GiB))
    oom = expect_oom(lambda: load(run, lp))
    name = "gpt2m_load_card_taken_smi" if with_smi else "gpt2m_load_card_taken"
    r = Result(name, dev, run, lp, oom, "RTX3090")
    assert dev.reserved < 1 * GiB
    r.era = "2.1" if with_smi else "2.4"
    if with_smi:
        used = (dev.total - dev.driver_free()) // MiB
        r.text = {"smi": ("RTX3090", used, [(40712, "/usr/bin/python3 -m vllm.entrypoints.openai.api_server", int(23.0 * 1024)),
                                           (51230, "/opt/conda/bin/python serve_finetune.py", (dev.reserved + dev.context) // MiB)])}
        r.text["other"] = (40712, int(23.0 * GiB))
    r.unwind = not with_smi
    return finish(r, "other_process", "load", 0,
                  "GPT-2 medium in bf16 (%s GiB of weights) failing while its weights are copied to the GPU, with %s MiB "
                  "reserved. A %s GiB card would hold it many times over; another process (an inference server) holds %s GiB "
                  "of it. From the snapshot alone the card size is unknown, but a process that cannot hold 1 GiB is not a "
                  "training card running out: someone else holds the memory.%s" % (
                      gib(sh.numel() * 2), "%.0f" % (dev.reserved / MiB), gib(dev.total), gib(dev.others),
                      " The pasted nvidia-smi table shows the server's process." if with_smi else ""))


def shared_card_mid_training():
    sh = SHAPES["mistral-7b"]("sdpa")
    dev, st, run, lp = setup("A100-80", sh, "bf16_master", "adam8bit", "python", "trainer", "train_lora.py", SITE_VENV,
                             others=int(31.2 * GiB), python="3.11")
    load(run, lp, "pretrained")
    oom = expect_oom(lambda: [lp.step(run, 1, 512) for _ in range(3)])
    r = Result("mistral7b_shared_card_other_process", dev, run, lp, oom, "A100-80")
    r.era = "2.6"
    r.text = {"other": (1881204, int(31.2 * GiB))}
    return finish(r, "other_process", oom.phase, oom.step,
                  "Mistral-7B-shaped model in bf16 with 8-bit Adam on a %s GiB card shared with another job that holds %s GiB "
                  "(the message lists 'Process 1881204 has 31.20 GiB memory in use' besides this process). The run's own need "
                  "(about %s GiB of fixed state plus activations) would fit on the whole card; the other process is why it "
                  "does not. From the snapshot alone the card size is unknown." % (
                      gib(dev.total), gib(dev.others), gib(run.fixed_bytes())),
                  also_without_text=["capacity", "optimizer_step2"])


# -- first_backward ---------------------------------------------------------------------------

def gpt2m_eager_first_backward():
    sh = SHAPES["gpt2-large"]("eager")

    def build(seq):
        dev, st, run, lp = setup("RTX4090", sh, "amp", "adamw_foreach", "python", "custom", "train.py", SITE_CONDA)
        load(run, lp)
        return dev, st, run, lp, try_oom(lambda: [lp.step(run, 4, seq) for _ in range(2)])

    dev, st, run, lp, oom, seq = first_batch_failing_in(build, range(880, 960, 8), "backward")
    r = Result("gpt2l_eager_attention_first_backward", dev, run, lp, oom, "RTX4090")
    fixed = run.fixed_bytes()
    assert fixed < dev.total / 2
    r.era = "2.2"
    r.summary = True
    return finish(r, "first_backward", "backward", 0,
                  "GPT-2 large (%.0fM params) with eager attention, batch 4 x %d tokens, on a %s GiB card. Weights + grads + "
                  "Adam state are only %s GiB; the forward saves 4 x 20 x %d x %d attention probabilities and dropout masks "
                  "per layer (%s GiB in all) besides the MLP activations, so the first backward, which needs the fp32 "
                  "gradient of the logits and the weight gradients on top, fails. Activation checkpointing (or SDPA) makes "
                  "it fit." % (sh.numel() / 1e6, seq, gib(dev.total), gib(fixed), seq, seq, gib(36 * 4 * 20 * seq * seq * 5)))


def llama8b_lora_like_first_backward():
    sh = SHAPES["llama-1b"]("eager")

    def build(batch):
        dev, st, run, lp = setup("A100-40", sh, "amp", "adamw_fused", "all", "trainer", "run_sft.py", SITE_CONDA)
        load(run, lp)
        return dev, st, run, lp, try_oom(lambda: [lp.step(run, batch, 2048) for _ in range(2)])

    dev, st, run, lp, oom, batch = first_batch_failing_in(build, range(1, 9), "backward")
    r = Result("llama1b_eager_gqa_first_backward", dev, run, lp, oom, "A100-40")
    fixed = run.fixed_bytes()
    assert fixed < dev.total / 2
    r.style, r.era = "all", "2.7"
    r.unwind = False
    return finish(r, "first_backward", "backward", 0,
                  "Llama-3.2-1B-shaped model (GQA 32/8, eager attention: repeat_kv materialises keys and values for all 32 "
                  "heads, and %d x 32 x 2048 x 2048 attention probabilities per layer) at %d x 2048 tokens on a %s GiB A100 "
                  "under a Trainer-style loop. Fixed state %s GiB; the forward's saved activations fill the card and the "
                  "first backward fails. Checkpointing or SDPA fixes it." % (batch, batch, gib(dev.total), gib(fixed)))


def container_first_backward():
    sh = SHAPES["gpt2-large"]("sdpa")

    def build(batch):
        dev, st, run, lp = setup("A100-40", sh, "amp", "adamw_fused", "python", "custom", "train.py", SITE_CONDA, context=500 * MiB)
        load(run, lp)
        return dev, st, run, lp, try_oom(lambda: [lp.step(run, batch, 1024) for _ in range(2)])

    dev, st, run, lp, oom, batch = first_batch_failing_in(build, range(8, 40, 2), "backward")
    r = Result("gpt2l_container_first_backward", dev, run, lp, oom, "A100-40")
    fixed = run.fixed_bytes()
    assert fixed < dev.total / 2
    r.era = "2.5"
    r.text = {"procs": "container", "pid": 3117}
    return finish(r, "first_backward", "backward", 0,
                  "GPT-2 large with SDPA at %d x 1024 tokens on a %s GiB A100, inside a container. Fixed state %s GiB; the "
                  "saved activations (MLP inputs and outputs dominate) are the rest, and the first backward fails. The "
                  "message lists 'Process 3117 has ... memory in use' with no 'this process' clause: that is this run, seen "
                  "by its host PID (its reserved memory plus the CUDA context), not another process." % (batch, gib(dev.total), gib(fixed)))


def lightning_closure_first_backward():
    sh = SHAPES["tinyllama-1.1b"]("sdpa")
    dev, st, run, lp = setup("A10G", sh, "amp", "adamw_foreach", "all", "lightning", "train_lit.py", SITE_VENV, python="3.11")
    load(run, lp)
    oom = expect_oom(lambda: [lp.step(run, 4, 2048) for _ in range(2)])
    r = Result("tinyllama_lightning_closure_first_backward", dev, run, lp, oom, "A10G")
    fixed = run.fixed_bytes()
    assert fixed < dev.total
    r.style, r.era = "all", "2.4"
    return finish(r, "first_backward", "backward", 0,
                  "TinyLlama-1.1B-shaped model (GQA 32/4) at 4 x 2048 tokens, Lightning-style closure: forward and backward "
                  "run inside optimizer.step(closure). Fixed state %s GiB on a %s GiB A10G; the first backward (inside the "
                  "closure, before the AdamW update ever ran) fails on the saved activations. Checkpointing fits it." % (
                      gib(fixed), gib(dev.total)))


# -- longest_batch ----------------------------------------------------------------------------

def variable_length(name, shape, card, style, loop, script, long_at, batch, lengths, long_len, optimizer, era):
    sh = SHAPES[shape]("eager")
    dev, st, run, lp = setup(card, sh, "amp", optimizer, style, loop, script, SITE_CONDA)
    load(run, lp)
    rng = random.Random(zlib.crc32(name.encode()))

    def go():
        for i in range(long_at + 5):
            seq = long_len if i == long_at else rng.choice(lengths)
            lp.step(run, batch, seq)

    oom = expect_oom(go)
    r = Result(name, dev, run, lp, oom, card)
    r.style, r.era, r.max_entries = style, era, 4500
    assert oom.step == long_at
    return r


def longest_gpt2():
    r = variable_length("gpt2m_longest_batch_eager", "gpt2-medium", "RTX3090", "python", "custom", "train.py", 37, 8,
                        [128, 192, 256, 320, 384, 448], 1024, "adamw_fused", "2.3")
    sh = r.run.shape
    return finish(r, "longest_batch", r.oom.phase, 37,
                  "GPT-2 medium with eager attention, dynamic padding: batches of 8 sequences padded to 128-448 tokens trained "
                  "for 37 steps; step 37 is padded to 1024 tokens. Attention probabilities scale with the square of the "
                  "length (8 x 16 x 1024 x 1024 per layer is %.0fx the usual), so that batch fails while every earlier step "
                  "used well under the card. Cap max_length or bucket by length." % ((1024 / 448) ** 2))


def longest_llama_trainer():
    r = variable_length("qwen05b_trainer_longest_batch_truncated", "qwen-0.5b", "A10G", "all", "trainer", "run_clm.py", 61, 4,
                        [256, 384, 512, 640], 2048, "adamw_foreach", "2.6")
    r.max_entries = 3500
    r.summary = True
    return finish(r, "longest_batch", r.oom.phase, 61,
                  "Qwen-0.5B-shaped model (eager attention, 151936-token vocabulary) under a Trainer-style loop with "
                  "group_by_length off: 61 steps of 4 x 256-640 tokens, then one batch of 4 x 2048. Logits and attention "
                  "grow 3-16x for that batch only and it fails; the trace (a ring buffer) starts mid-run. Cap the length or "
                  "bucket by length.")


def longest_sgd():
    r = variable_length("gpt2l_sgd_longest_batch", "gpt2-large", "A100-40", "python", "custom", "train.py", 22, 6,
                        [256, 512, 384], 1536, "sgd", "2.0")
    return finish(r, "longest_batch", r.oom.phase, 22,
                  "GPT-2 large with SGD+momentum, eager attention, batches of 6 x 256-512 tokens; step 22 carries 1536 "
                  "tokens per sequence. Its O(seq^2) attention buffers are 9x those of the longest earlier batch and the "
                  "step fails; every other step fits with room to spare.")


def longest_expandable():
    sh = SHAPES["llama-1b"]("sdpa")
    dev, st, run, lp = setup("A10G", sh, "amp", "adam8bit", "python", "custom", "train.py", SITE_CONDA, expandable=True)
    load(run, lp)
    rng = random.Random(3)

    def go():
        for i in range(30):
            lp.step(run, 2, 4096 if i == 24 else rng.choice([512, 768, 1024]))

    oom = expect_oom(go)
    r = Result("llama1b_expandable_segments_longest_batch", dev, run, lp, oom, "A10G")
    assert oom.step == 24
    r.era, r.max_entries, r.conf = "2.5", 3000, "expandable_segments:True"
    r.unwind = True
    return finish(r, "longest_batch", oom.phase, 24,
                  "Llama-3.2-1B-shaped model with 8-bit Adam and PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (one "
                  "growing segment per pool, segment_map events) on a %s GiB A10G. Batches of 2 x 512-1024 tokens train "
                  "for 24 steps; step 24 is 2 x 4096 and its logits alone (2 x 4096 x 128256, bf16 plus two fp32 copies "
                  "for the loss) are 4-8x those of any earlier batch. The batch fails in its forward; fragmentation is "
                  "already ruled out by the expandable segments. The snapshot was dumped after the exception unwound. "
                  "Cap the length or bucket by length." % gib(dev.total))


# -- fragmentation ----------------------------------------------------------------------------

def fragmentation_memory_bank(name, card, share, sizes, style, era):
    """Steady live memory, variable-size long-lived tensors evicted at random: holes everywhere."""
    sh = SHAPES["gpt2-small"]("sdpa")
    dev, st, run, lp = setup(card, sh, "amp", "adamw_fused", style, "custom", "retrieval_train.py", SITE_CONDA)
    load(run, lp)
    rng = random.Random(7)
    bank = []
    budget = int(dev.total * share)
    frames = st.here([line("retrieval_train.py", 151, "refresh_cache", "cache[doc_id] = encoder(doc_tokens).detach()")],
                     ["at::native::mm"])

    def go():
        for i in range(400):
            # a retrieval cache of document encodings: variable length, evicted at random, total bounded
            for _ in range(10):
                size = rng.randrange(*sizes) * MiB + rng.randrange(0, 512) * 1024
                while bank and sum(b.requested for b in bank) + size > budget:
                    victim = bank.pop(rng.randrange(len(bank)))
                    run.dev.free(victim)
                run.phase = "forward"
                bank.append(run.alloc(size, "kept", frames, transient=False))
            lp.step(run, 4, rng.choice([448, 512, 576]))

    oom = expect_oom(go)
    r = Result(name, dev, run, lp, oom, card)
    rep = oom.report
    free_in_pool = rep["reserved"] - rep["allocated"]
    assert free_in_pool >= 2 * rep["rounded"], (name, free_in_pool, rep["rounded"])
    assert rep["largest_free"] < rep["rounded"]
    r.style, r.era, r.max_entries = style, era, 4000
    r.notes["free_in_pool"] = free_in_pool
    return r


def fragmentation_a():
    r = fragmentation_memory_bank("gpt2s_fragmentation_random_eviction_cache", "A10G", 0.70, (12, 150), "python", "2.4")
    rep = r.oom.report
    return finish(r, "fragmentation", r.oom.phase, r.oom.step,
                  "GPT-2 small fine-tuned next to a retrieval cache of document encodings (12-150 MiB each, evicted at "
                  "random, total capped at 70%% of the card). Batches are steady (4 x 448-576 tokens) and live memory does "
                  "not grow; after %d steps the reserved segments hold %s GiB free, but split into holes between cache "
                  "entries, the largest %s MiB, and a %s MiB request fails. expandable_segments:True (or "
                  "max_split_size_mb) makes the same live set fit." % (
                      r.oom.step, gib(r.notes["free_in_pool"]), "%.0f" % (rep["largest_free"] / MiB), "%.0f" % (rep["rounded"] / MiB)))


def fragmentation_b():
    r = fragmentation_memory_bank("gpt2s_fragmentation_cache_cpp_stacks", "L4", 0.66, (20, 300), "all", "2.8")
    rep = r.oom.report
    r.summary = True
    return finish(r, "fragmentation", r.oom.phase, r.oom.step,
                  "The same retrieval-cache workload (entries of 20-300 MiB, capped at 66%% of the card) on a %s GiB L4 with C++ frames in the stacks. Live memory is flat across "
                  "steps; %s GiB of reserved memory is free but split (largest free block %s MiB) when a %s MiB request "
                  "fails at step %d. The allocator's free-and-retry could not return any of it: every segment still holds "
                  "a cache entry." % (gib(r.dev.total), gib(r.notes["free_in_pool"]), "%.0f" % (rep["largest_free"] / MiB),
                                      "%.0f" % (rep["rounded"] / MiB), r.oom.step))


# -- large_allocation -------------------------------------------------------------------------

def large_cdist():
    sh = SHAPES["gpt2-medium"]("sdpa")
    dev, st, run, lp = setup("A100-80", sh, "amp", "adamw_fused", "python", "custom", "mine_negatives.py", SITE_CONDA)
    load(run, lp)
    for _ in range(2):
        lp.step(run, 8, 512)
    n = 142_000
    st.push(line("mine_negatives.py", 88, "<module>", "hard = mine_hard_negatives(model, corpus)"),
            line("mine_negatives.py", 61, "mine_hard_negatives", "dist = torch.cdist(emb, emb)"),
            st.torch("functional.py", 1478, "cdist"))
    run.phase = "forward"
    emb = run.alloc(n * 1024 * 4, "act", st.here([], ["at::native::mm"]))
    oom = expect_oom(lambda: run.alloc(n * n * 4, "temp", st.here([], ["at::native::_cdist_forward"])))
    r = Result("gpt2m_cdist_large_allocation", dev, run, lp, oom, "A100-80")
    assert oom.report["rounded"] >= dev.total // 4
    r.era = "2.5"
    del st.context[:]
    return finish(r, "large_allocation", "forward", 2,
                  "After two training steps, a hard-negative mining pass calls torch.cdist on 142,000 embeddings: one "
                  "142000 x 142000 fp32 distance matrix is %s GiB, %.0f%% of the %s GiB card, in a single request. Everything "
                  "else live is small. Chunk the computation (blocks of rows) instead." % (
                      gib(n * n * 4), 100.0 * n * n * 4 / dev.total, gib(dev.total)))


def large_logits_upcast():
    sh = SHAPES["gemma-270m"]("sdpa")
    dev, st, run, lp = setup("RTX4090", sh, "amp", "adamw_fused", "all", "trainer", "run_clm.py", SITE_VENV, python="3.11")
    load(run, lp)
    oom = expect_oom(lambda: [lp.step(run, 4, 4096) for _ in range(2)])
    r = Result("gemma270m_vocab_logits_large_allocation", dev, run, lp, oom, "RTX4090")
    assert oom.report["rounded"] >= dev.total // 4, (oom.report["rounded"] / GiB)
    r.style, r.era = "all", "2.8"
    return finish(r, "large_allocation", oom.phase, 0,
                  "A Gemma-3-270M-shaped model (262144-token vocabulary, tied embeddings) at 4 x 4096 tokens: the loss upcasts "
                  "the logits to fp32, one tensor of 4 x 4096 x 262144 x 4 bytes = %s GiB, %.0f%% of the %s GiB card, in a single request. "
                  "Chunked / fused cross-entropy (or a smaller batch of tokens) avoids the one huge buffer." % (
                      gib(4 * 4096 * 262144 * 4), 100.0 * 4 * 4096 * 262144 * 4 / dev.total, gib(dev.total)))


# -- memory_fraction_cap ----------------------------------------------------------------------

def fraction_cap(name, fraction, card, shape, batch, seq, era, style):
    sh = SHAPES[shape]("sdpa")
    dev, st, run, lp = setup(card, sh, "amp", "adamw_fused", style, "custom", "train.py", SITE_CONDA, fraction=fraction)
    load(run, lp)
    oom = expect_oom(lambda: [lp.step(run, batch, seq) for _ in range(4)])
    r = Result(name, dev, run, lp, oom, card)
    assert oom.report["free"] > oom.report["tried"] * 4
    r.era, r.style = era, style
    return r


def fraction_a():
    r = fraction_cap("gpt2l_memory_fraction_half", 0.5, "A100-80", "gpt2-large", 16, 1024, "2.4", "python")
    rep = r.oom.report
    return finish(r, "memory_fraction_cap", r.oom.phase, r.oom.step,
                  "torch.cuda.set_per_process_memory_fraction(0.5) on a %s GiB card: the process may reserve %s GiB. The run "
                  "reaches that limit with %s GiB still free on the card, and a %s MiB request is refused. The card is not "
                  "full; the per-process limit is." % (gib(r.dev.total), gib(rep["allowed"]), gib(rep["free"]), "%.0f" % (rep["tried"] / MiB)))


def fraction_b():
    r = fraction_cap("tinyllama_memory_fraction_t1_era", 0.3, "A100-40", "tinyllama-1.1b", 4, 2048, "2.0", "all")
    rep = r.oom.report
    r.summary = True
    return finish(r, "memory_fraction_cap", r.oom.phase, r.oom.step,
                  "A 2.0-era run with set_per_process_memory_fraction(0.3) on a %s GiB card (%s GiB allowed). The message's "
                  "'allowed' clause and %s GiB free on the card at the failure show the limit, not the card, stopped it." % (
                      gib(r.dev.total), gib(rep["allowed"]), gib(rep["free"])))


ALL = [gpt2xl_foreach_first_step, llama_bf16_master_first_step, qwen_second_step_forward,
       llama13b_first_backward_capacity, lambda: llama13b_first_backward_capacity(True), llama3b_bf16_capacity_24g,
       gpt2xl_fused_state_capacity, leak_logits_list, leak_hidden_states_truncated, leak_lightning_outputs,
       trainer_eval_concat, custom_eval_append, lambda: load_with_card_taken(False), lambda: load_with_card_taken(True),
       shared_card_mid_training, gpt2m_eager_first_backward, llama8b_lora_like_first_backward, container_first_backward,
       lightning_closure_first_backward, longest_gpt2, longest_llama_trainer, longest_sgd, longest_expandable, fragmentation_a, fragmentation_b,
       large_cdist, large_logits_upcast, fraction_a, fraction_b]
