"""Family F: the runs, each a program that dies of a CUDA OOM as written and completes with the one
change its label names. Sizes come from the models' shapes; nothing here reads a diagnosis."""
import cards
import models
import sites
from allocator import Device, IdealAllocator
from cards import GiB, MiB
from run import Run, DEFAULT, CAPTURE_STREAM
from training import Trainer, Plain, FSDP2, ZeRO3
from engine import Engine

CONDA = "/opt/conda/lib/python3.11/site-packages"
VENV = "/home/ubuntu/.venv/lib/python3.12/site-packages"
USR = "/usr/local/lib/python3.10/dist-packages"


class Scenario:
    """control: a classic cause (optimizer state, a long batch, a leak, the first backward) inside a
    distributed recipe whose collectives' storage is live at the failure."""

    def __init__(self, name, case, card, program, story, physics, change, world=1, checkpointing=False,
                 nccl=False, others=(), others_fix=None, still=(), site=CONDA, rank=None, max_entries=None,
                 also=(), also_without_text=(), control=False, tight=True):
        self.name, self.case, self.card, self.program = name, case, card, program
        self.story, self.physics, self.change = story, physics, change
        self.world, self.checkpointing, self.nccl = world, checkpointing, nccl
        self.others, self.others_fix = list(others), others_fix
        self.still = list(still)  # [(variant, what it changes)] that must still run out of memory
        self.site, self.rank, self.max_entries = site, rank, max_entries
        self.also, self.also_without_text, self.control = list(also), list(also_without_text), control
        # tight: the failing request does not fit even in a perfectly packed cache (what is allocated
        # plus the request exceeds what the process could hold), so the label is not fragmentation
        self.tight = tight

    def simulate(self, variant):
        others = self.others if (variant != "fix" or self.others_fix is None) else self.others_fix
        device = Device(self.card[1], cards.CONTEXT, others, cards.NCCL if self.nccl else 0)
        run = Run(device, self.site, 1764400000000000 + (sum(map(ord, self.name)) % 997) * 1000000)
        if variant == "ideal":
            run.alloc = IdealAllocator(device, run.rec)
        ok = run.execute(lambda r: self.program(r, "written" if variant == "ideal" else variant))
        return run, ok


SCENARIOS = []


def scenario(**kw):
    def wrap(fn):
        SCENARIOS.append(Scenario(program=fn, **kw))
        return fn
    return wrap


def fsdp_sites(lib, path="/workspace/llm-recipes/train_fsdp.py"):
    return sites.script(path, "train_step", 141, 233, 262)


# ------------------------------------------------------------------------------------------------------
# FSDP2


@scenario(name="fsdp2_llama31_8b_a100_40gb_adam_state_created_step1_fails_step2", control=True, case="optimizer_step2",
          card=cards.A100_40GB, world=8, checkpointing=True, nccl=True, rank=3,
          story="Llama-3.1-8B, FSDP2 over 8 A100-40GB (reshard_after_forward=True, bf16 params / fp32 reduce), "
                "activation checkpointing, 1 x 14336 tokens, torch.optim.AdamW(foreach). Step 1 completes; step 2 "
                "fails in its forward at the fp32 logits of the loss.",
          physics="AdamW creates exp_avg and exp_avg_sq (2 x 4.0 GiB of fp32 shards) in step 1's step(); from then "
                  "on they stay. Step 2 needs step 1's peak plus that state. The sharded fp32 gradients are the "
                  "reduce-scatter outputs (allocated on the reduce-scatter stream in foreach_reduce) and live until "
                  "zero_grad.",
          change="the optimizer state off the GPU (AdamW state kept on the host): step 2 fits")
def fsdp2_adam_step2(run, variant):
    seq = 14336
    st = FSDP2(8, True, state_on_gpu=(variant != "fix"))
    s = fsdp_sites(run.fr.lib)
    tr = Trainer(run, models.LLAMA3_8B, s, [(1, seq)] * 3, st, checkpointing=True)
    st.load(s["load"])
    tr.run_steps()


@scenario(name="fsdp2_llama33_70b_h100_adamw_state_created_in_first_step", control=True, case="optimizer_step2",
          card=cards.H100_80GB, world=16, checkpointing=True, nccl=True, rank=9,
          story="Llama-3.3-70B, FSDP2 over 16 H100 (two nodes; bf16 params / fp32 reduce, reshard_after_forward="
                "True), activation checkpointing, 1 x 4096 tokens, torch.optim.AdamW(foreach). The forward and "
                "backward of step 1 fit; its optimizer.step() fails.",
          physics="At step 1's step() AdamW creates exp_avg and exp_avg_sq for every fp32 shard (2 x 16.4 GiB) "
                  "while the fp32 sharded parameters (16.4 GiB) and the sharded gradients (16.4 GiB, the reduce-"
                  "scatter outputs kept since backward) are live; the foreach update then needs a temporary of the "
                  "parameters' size (_foreach_sqrt of exp_avg_sq).",
          change="the optimizer state off the GPU (AdamW state on the host): the step fits",
          still=[("half_batch", "1 x 2048 tokens: the step still fails (the activations are gone by then)")])
def fsdp2_adam_step1(run, variant):
    seq = 2048 if variant == "half_batch" else 4096
    st = FSDP2(16, True, state_on_gpu=(variant != "fix"))
    s = fsdp_sites(run.fr.lib, "/workspace/torchtitan_lite/train.py")
    tr = Trainer(run, models.LLAMA33_70B, s, [(1, seq)] * 2, st, checkpointing=True)
    st.load(s["load"])
    tr.run_steps()


@scenario(name="fsdp2_qwen25_7b_h100_one_long_batch_padded", control=True, case="longest_batch",
          card=cards.H100_80GB, world=8, checkpointing=False, nccl=True, rank=5,
          story="Qwen2.5-7B, FSDP2 over 8 H100 (bf16 params / fp32 reduce), no activation checkpointing, micro-"
                "batch 2 padded to its longest sample. Steps 1-4 see 1.5-1.9k tokens per sample; step 5 draws a "
                "7.4k-token document and fails in its forward.",
          physics="Activations scale with the padded tokens (2 x 7424 against 2 x 1920 at most before) and the "
                  "fp32 logits with tokens x 152k vocabulary; the sharded gradients (reduce-scatter outputs) and "
                  "AdamW state from earlier steps are resident and the same in every step.",
          change="max_length=2048 (the long document truncated like the others): every step fits",
          still=[("no_state", "the optimizer state off the GPU: step 5 still fails")])
def fsdp2_longest(run, variant):
    lens = [1664, 1920, 1536, 1792, 2048 if variant == "fix" else 7424]
    st = FSDP2(8, True, state_on_gpu=(variant != "no_state"))
    s = fsdp_sites(run.fr.lib, "/workspace/sft/train_fsdp2.py")
    tr = Trainer(run, models.QWEN25_7B, s, [(2, n) for n in lens], st)
    st.load(s["load"])
    tr.run_steps()


def keep_logits_hook(keep):
    def after_loss(tr, step, logits):
        run = tr.run
        if keep:
            run.push((tr.sites["forward"][-1][0], tr.sites["forward"][-1][1], tr.sites["forward"][-1][2] + 1))
            tr.kept = getattr(tr, "kept", [])
            # history.append(outputs.logits[:, -1]) -> a view keeps the whole logits storage alive
            tr.kept.append(logits)
            tr.kept_ids = getattr(tr, "kept_ids", set())
            tr.kept_ids.add(id(logits))
            run.pop()
    return after_loss


class KeepLogitsTrainer(Trainer):
    """The step frees the logits unless the loop keeps a view of them (the leak)."""

    def __init__(self, *a, keep=True, **kw):
        super().__init__(*a, **kw)
        self.keep = keep
        self.kept = []

    def train_step(self, step, b, s):
        orig_free = self.run.free
        kept = self.kept

        def free(t, extra=(), ready_after=1):
            if any(t is k for k in kept):
                return
            orig_free(t, extra, ready_after)
        self.run.free = free
        try:
            super().train_step(step, b, s)
        finally:
            self.run.free = orig_free


@scenario(name="fsdp2_mistral_7b_a100_40gb_last_token_logits_kept_for_logging", control=True, case="leak",
          card=cards.A100_40GB, world=8, checkpointing=True, nccl=True, rank=0, max_entries=9000,
          story="Mistral-7B, FSDP2 over 8 A100-40GB, activation checkpointing, 4 x 4096 tokens. The loop logs "
                "`history.append(out.logits[:, -1])` every step; it fails after a dozen steps.",
          physics="A slice of the logits is a view: it keeps the whole bf16 logits storage (16384 x 32768 x 2 B = "
                  "1 GiB) alive after the step, one more per step, while the sharded gradients (reduce-scatter "
                  "outputs) and AdamW state are resident.",
          change="history.append(out.logits[:, -1].float().mean().item()): 20 steps fit", tight=False)
def fsdp2_leak(run, variant):
    st = FSDP2(8, True)
    s = fsdp_sites(run.fr.lib, "/workspace/pretrain/run_fsdp2.py")
    tr = KeepLogitsTrainer(run, models.MISTRAL_7B, s, [(4, 4096)] * 20, st, checkpointing=True,
                           hooks={"after_loss": keep_logits_hook(variant != "fix")}, keep=(variant != "fix"))
    st.load(s["load"])
    tr.run_steps()


@scenario(name="fsdp2_qwen25_1_5b_h100_no_reshard_first_backward", control=True, case="first_backward",
          card=cards.H100_80GB, world=8, checkpointing=False, nccl=True, rank=2,
          story="Qwen2.5-1.5B, FSDP2 over 8 H100 with reshard_after_forward=False (unsharded layers kept from "
                "forward to backward), no checkpointing, 4 x 5120 tokens. The first forward fits; the first "
                "backward fails at the gradient of the fp32 logits.",
          physics="The forward holds 28 layers' activations and the logits (bf16, fp32 upcast, log-softmax: 10 B "
                  "per token per vocabulary entry, 152k entries); backward's first node adds another fp32 logits-"
                  "sized gradient. The all-gathered bf16 parameters kept by reshard_after_forward=False are 2.9 GiB, "
                  "less than what the backward lacks.",
          change="micro-batch 2 with gradient accumulation 2 (half the tokens per backward): the step fits",
          still=[("reshard", "reshard_after_forward=True: the first backward still fails")])
def fsdp2_first_backward(run, variant):
    b = 2 if variant == "fix" else 4
    st = FSDP2(8, reshard_after_forward=(variant == "reshard"))
    s = fsdp_sites(run.fr.lib, "/workspace/sft/train_fsdp2.py")
    tr = Trainer(run, models.QWEN25_1_5B, s, [(b, 5120)] * (2 if variant == "fix" else 1), st)
    st.load(s["load"])
    tr.run_steps()


# ------------------------------------------------------------------------------------------------------
# DeepSpeed ZeRO-3


def ds_sites(lib, path="/workspace/ds_train.py"):
    return sites.deepspeed_script(lib, path, "train", 98, 171, 190)


@scenario(name="zero3_llama2_13b_a100_80gb_one_long_sample_pads_batch", control=True, case="longest_batch",
          card=cards.A100_80GB, world=8, checkpointing=True, nccl=True, rank=4, site=USR,
          story="Llama-2-13B, DeepSpeed ZeRO-3 over 8 A100-80GB (default prefetch bucket), HF gradient "
                "checkpointing, micro-batch 8 padded to the longest sample. Steps 1-3 pad to about 1k tokens; "
                "step 4 holds one 10k-token sample and fails.",
          physics="Padding makes the step's tokens 8 x 10240; the checkpointed layer inputs, the recomputed layer "
                  "and the logits scale with them. Parameter partitions, fp32 master weights, Adam moments, the "
                  "gradient partition buffer and the IPG bucket are the same in every step; the prefetched all-"
                  "gathers (one sub-module ahead) are live throughout.",
          change="max_length=2048: step 4 pads to 2048 and fits",
          still=[("no_prefetch", "stage3_prefetch_bucket_size=0: step 4 still fails")])
def zero3_longest(run, variant):
    lens = [1024, 896, 1152, 2048 if variant == "fix" else 10240, 1024]
    st = ZeRO3(8, prefetch_bucket=0 if variant == "no_prefetch" else 5e7)
    s = ds_sites(run.fr.lib)
    tr = Trainer(run, models.LLAMA2_13B, s, [(8, n) for n in lens], st, checkpointing=True)
    st.load(s["load"])
    tr.run_steps()


@scenario(name="zero3_qwen25_7b_a100_40gb_logits_kept_across_steps", control=True, case="leak",
          card=cards.A100_40GB, world=8, checkpointing=True, nccl=True, rank=6, max_entries=9000, site=USR,
          story="Qwen2.5-7B, DeepSpeed ZeRO-3 over 8 A100-40GB, gradient checkpointing, 1 x 4096 tokens. A "
                "debugging aid keeps `last_logits.append(outputs.logits[:, -8:])` per step; step 9 fails.",
          physics="The slice is a view of the full bf16 logits (4096 x 152064 x 2 B = 1.16 GiB), one more kept "
                  "per step beside ZeRO-3's resident partitions, master weights, moments and buffers, and the "
                  "prefetched all-gathers of each step.",
          change="last_logits.append(outputs.logits[:, -8:].detach().cpu()): 16 steps fit", tight=False)
def zero3_leak(run, variant):
    st = ZeRO3(8)
    s = ds_sites(run.fr.lib, "/workspace/rlhf/ds_sft.py")
    tr = KeepLogitsTrainer(run, models.QWEN25_7B, s, [(1, 4096)] * 16, st, checkpointing=True,
                           hooks={"after_loss": keep_logits_hook(variant != "fix")}, keep=(variant != "fix"))
    st.load(s["load"])
    tr.run_steps()


@scenario(name="zero3_mistral_7b_a100_40gb_first_backward", control=True, case="first_backward",
          card=cards.A100_40GB, world=8, checkpointing=False, nccl=True, rank=7, site=USR,
          story="Mistral-7B, DeepSpeed ZeRO-3 over 8 A100-40GB, no gradient checkpointing, 2 x 2752 tokens. The "
                "first forward fits; the first backward fails.",
          physics="Without checkpointing every layer's activations are saved; backward adds each sub-module's "
                  "full bf16 gradient before it is copied into the IPG bucket, the activation gradients and the "
                  "re-gathered parameters (prefetched one sub-module ahead) on top of the forward's peak.",
          change="micro-batch 1 with gradient accumulation 2: the step fits",
          still=[("no_prefetch", "stage3_prefetch_bucket_size=0: the first backward still fails")])
def zero3_first_backward(run, variant):
    b = 1 if variant == "fix" else 2
    st = ZeRO3(8, prefetch_bucket=0 if variant == "no_prefetch" else 5e7)
    s = ds_sites(run.fr.lib, "/workspace/ft/ds_finetune.py")
    tr = Trainer(run, models.MISTRAL_7B, s, [(b, 2752)] * (2 if variant == "fix" else 1), st)
    st.load(s["load"])
    tr.run_steps()


@scenario(name="zero3_llama2_13b_a100_40gb_prefetch_bucket_5e9", case="communication_buffers",
          card=cards.A100_40GB, world=8, checkpointing=True, nccl=True, rank=0, site=USR,
          story="Llama-2-13B, DeepSpeed ZeRO-3 over 8 A100-40GB with stage3_prefetch_bucket_size=5e9 and "
                "stage3_max_live_parameters=1e10 (set high for speed), gradient checkpointing, 2 x 4096 tokens. "
                "Step 1 completes (the coordinator does not prefetch before it has a trace); step 2 fails.",
          physics="From step 2 PartitionedParameterCoordinator.fetch_sub_module prefetches up to 5e9 parameters "
                  "ahead: the all-gathered bf16 copies of about 16 layers live beside the activations, on top of "
                  "ZeRO-3's resident partitions, fp32 master weights, Adam moments and buffers.",
          change="stage3_prefetch_bucket_size=5e7, stage3_max_live_parameters=1e9 (DeepSpeed's defaults): step 2 fits",
          still=[("half_batch", "micro-batch 1 (1 x 4096 tokens): step 2 still fails")])
def zero3_prefetch(run, variant):
    if variant == "fix":
        st = ZeRO3(8, prefetch_bucket=5e7, max_live=1e9)
    else:
        st = ZeRO3(8, prefetch_bucket=5e9, max_live=1e10)
    b = 1 if variant == "half_batch" else 2
    s = ds_sites(run.fr.lib, "/workspace/ds/train_13b.py")
    tr = Trainer(run, models.LLAMA2_13B, s, [(b, 4096)] * 3, st, checkpointing=True)
    st.load(s["load"])
    tr.run_steps()


# ------------------------------------------------------------------------------------------------------
# One GPU: capacity, evaluation, other processes


@scenario(name="hf_trainer_llama2_13b_h100_fp32_weights_full_finetune", case="capacity",
          card=cards.H100_80GB, checkpointing=True, site=VENV,
          story="Llama-2-13B loaded in fp32 (no torch_dtype), full fine-tune with the Hugging Face Trainer on one "
                "H100 (bf16 autocast, gradient checkpointing), 1 x 1024 tokens. The forward fits; the first "
                "backward fails as the fp32 gradients accumulate.",
          physics="fp32 weights are 48.5 GiB and AccumulateGrad's fp32 gradients as much again: parameters and "
                  "gradients alone exceed the card before AdamW's 97 GiB of moments would even be created.",
          change="FSDP2 over 8 GPUs (parameters, gradients and AdamW state sharded 8 ways): two steps fit",
          still=[("tiny_batch", "1 x 128 tokens: the first backward still fails")])
def capacity_13b(run, variant):
    s = sites.hf_trainer(run.fr.lib, "/home/ubuntu/finetune/sft_llama2.py", 118)
    seq = 128 if variant == "tiny_batch" else 1024
    if variant == "fix":
        st = FSDP2(8)
        run.device.nccl_bytes = cards.NCCL
        tr = Trainer(run, models.LLAMA2_13B, s, [(1, seq)] * 2, st, checkpointing=True)
    else:
        st = Plain(param_bytes=4)
        tr = Trainer(run, models.LLAMA2_13B, s, [(1, seq)] * 2, st, checkpointing=True)
    st.load(s["load"] + [(run.fr.lib("transformers/modeling_utils.py"), "from_pretrained", 4250),
                         (run.fr.lib("transformers/modeling_utils.py"), "_load_pretrained_model", 4720)])
    tr.run_steps()


def hf_eval_frames(lib, path, main_line):
    tr = lib("transformers/trainer.py")
    return [(path, "<module>", main_line + 30), (path, "main", main_line), (tr, "evaluate", 4051),
            (tr, "evaluation_loop", 4245)]


@scenario(name="hf_trainer_qwen25_0_5b_l4_eval_predictions_concatenated_on_gpu", case="eval_accumulation",
          card=cards.L4, checkpointing=False, site=VENV,
          story="Qwen2.5-0.5B fine-tuned in bf16 with the Hugging Face Trainer on an L4; after two training steps "
                "trainer.evaluate() runs 12 batches of 16 x 512 without preprocess_logits_for_metrics or "
                "eval_accumulation_steps, and fails at the fourth batch.",
          physics="evaluation_loop keeps every batch's logits (16 x 512 x 151936 bf16 = 2.3 GiB) on the GPU and "
                  "nested_concat grows one tensor with torch.cat: each concatenation allocates the grown tensor "
                  "while the previous one is still live.",
          change="eval_accumulation_steps=1 (predictions moved to the host after every batch): all 12 batches fit",
          still=[("half_eval_batch", "per_device_eval_batch_size=8: evaluation still fails")])
def eval_accumulation(run, variant):
    lib = run.fr.lib
    path = "/home/ubuntu/projects/qa-sft/train.py"
    s = sites.hf_trainer(lib, path, 142)
    st = Plain(param_bytes=2)
    m = models.QWEN25_0_5B
    tr = Trainer(run, m, s, [(4, 512)] * 2, st, checkpointing=False)
    st.load(s["load"])
    tr.run_steps()
    # evaluation
    b = 8 if variant == "half_eval_batch" else 16
    batches = 24 if variant == "half_eval_batch" else 12
    top = hf_eval_frames(lib, path, 142)
    tp = lib("transformers/trainer_pt_utils.py")
    hf = "transformers/models/qwen2/modeling_qwen2.py"
    kept = None
    run.step = 3
    for i in range(batches):
        run.phase = "eval"
        run.at(*top, (lib("transformers/trainer.py"), "evaluation_loop", 4204), (lib("transformers/trainer.py"), "_prepare_inputs", 3673),
               (lib("transformers/trainer.py"), "_prepare_input", 3627))
        ids = run.new(b * 512 * 8, "inputs", op="copy")
        base = top + [(lib("transformers/trainer.py"), "evaluation_loop", 4215), (lib("transformers/trainer.py"), "prediction_step", 4470),
                      (lib("transformers/trainer.py"), "compute_loss", 3801)] + tr.p.mod(hf, 832)[0:0]
        run.at(*base, *tr.p.mod(hf, 832), *tr.p.mod(hf, 571))
        h = run.new(b * 512 * m.hidden * 2, "activations", op="empty")
        for _ in range(m.layers):
            run.at(*base, *tr.p.mod(hf, 832), *tr.p.mod(hf, 571), *tr.p.mod(hf, 318), *tr.p.mod(hf, 168))
            gu = run.new(b * 512 * m.inter * 4, "temporaries", op="mm")
            h2 = run.new(b * 512 * m.hidden * 2, "activations", op="mm")
            run.free(gu)
            run.free(h)
            h = h2
        run.at(*base, *tr.p.mod(hf, 832))
        logits = run.new(b * 512 * m.vocab * 2, "activations", op="mm")
        run.push((lib("transformers/loss/loss_utils.py"), "ForCausalLMLoss", 53))
        l32 = run.new(b * 512 * m.vocab * 4, "temporaries", op="copy")
        lp = run.new(b * 512 * m.vocab * 4, "temporaries", op="log_softmax")
        run.free(lp)
        run.free(l32)
        run.pop()
        run.free(h)
        run.free(ids)
        run.at(*top, (lib("transformers/trainer.py"), "evaluation_loop", 4240), (tp, "add", 315), (tp, "nested_concat", 126),
               (tp, "torch_pad_and_concatenate", 84))
        if variant == "fix":
            run.at(*top, (lib("transformers/trainer.py"), "evaluation_loop", 4268), (tp, "to_cpu_and_numpy", 328),
                   (tp, "nested_numpify", 171))
            run.free(logits)
            run.tick()
            continue
        if kept is None:
            kept = logits
        else:
            grown = run.new(kept.nbytes + logits.nbytes, "activations", op="cat")
            run.free(kept)
            run.free(logits)
            kept = grown
        run.tick()


def plain_sites(lib, path, fn, line):
    return sites.script(path, fn, line, 77, 95)


@scenario(name="qwen25_0_5b_l4_finetune_card_held_by_stale_notebook", case="other_process",
          card=cards.L4, checkpointing=False, site=VENV,
          others=[(31877, 17 * GiB + 412 * MiB, 0)], others_fix=[],
          story="A small fine-tune (Qwen2.5-0.5B, bf16 weights, AdamW, 2 x 256 tokens) on an L4 whose memory is "
                "mostly held by a Jupyter kernel from an earlier session (pid 31877, 17.4 GiB). The run never "
                "holds more than about 3 GiB and fails in its first step.",
          physics="cudaMemGetInfo's free memory at the failure is far below the card less what this process "
                  "reserved: another process holds it. Nothing in the run grows.",
          change="the stale kernel shut down: the same run completes 4 steps",
          still=[("half_batch", "1 x 256 tokens: it still fails")])
def other_process_l4(run, variant):
    s = plain_sites(run.fr.lib, "/home/ubuntu/notebooks/finetune_qwen.py", "train", 54)
    b = 1 if variant == "half_batch" else 2
    st = Plain(param_bytes=2)
    tr = Trainer(run, models.QWEN25_0_5B, s, [(b, 256)] * 4, st)
    st.load(s["load"])
    tr.run_steps()


@scenario(name="llama32_1b_a100_80gb_shared_card_other_job", case="other_process",
          card=cards.A100_80GB, checkpointing=True, site=CONDA,
          others=[(2291044, 66 * GiB + 300 * MiB, 0)], others_fix=[],
          story="Llama-3.2-1B LoRA-free fine-tune (bf16, AdamW, gradient checkpointing, 4 x 1024 tokens) on an "
                "A100-80GB shared on a lab server where another user's job (pid 2291044) already holds 66.3 GiB. "
                "This run's whole history stays under 14 GiB; it fails in step 2's forward.",
          physics="The device's free memory in the OOM event is a fraction of the card less this process's "
                  "reserved memory: the difference belongs to another process.",
          change="the card to itself (CUDA_VISIBLE_DEVICES pointing at a free GPU): 3 steps fit",
          still=[("half_batch", "2 x 1024 tokens: it still fails")])
def other_process_a100(run, variant):
    s = plain_sites(run.fr.lib, "/data/users/kim/llm/train_1b.py", "run_epoch", 131)
    b = 2 if variant == "half_batch" else 4
    st = Plain(param_bytes=2)
    tr = Trainer(run, models.LLAMA32_1B, s, [(b, 1024)] * 3, st, checkpointing=True)
    st.load(s["load"])
    tr.run_steps()


# ------------------------------------------------------------------------------------------------------
# A colocated inference engine (RL post-training)


def trl_sites(lib, path, main_line):
    tr = lib("transformers/trainer.py")
    grpo = lib("trl/trainer/grpo_trainer.py")
    top = [(path, "<module>", main_line + 20), (path, "main", main_line), (tr, "train", 2245), (tr, "_inner_training_loop", 2560)]
    return {"data": top + [(tr, "training_step", 3722), (grpo, "_prepare_inputs", 1048)],
            "rollout": top + [(tr, "training_step", 3722), (grpo, "_prepare_inputs", 1052),
                              (grpo, "_generate_and_score_completions", 1391), (grpo, "_generate", 1236)],
            "forward": top + [(tr, "training_step", 3740), (grpo, "compute_loss", 1712), (grpo, "_compute_loss", 1760),
                              (grpo, "_get_per_token_logps_and_entropies", 843)],
            "backward": top + [(tr, "training_step", 3790), (lib("accelerate/accelerator.py"), "backward", 2454)],
            "step": top[:-1] + [(tr, "_inner_training_loop", 2636), (lib("accelerate/optimizer.py"), "step", 178)],
            "zero_grad": top[:-1] + [(tr, "_inner_training_loop", 2650), (lib("accelerate/optimizer.py"), "zero_grad", 115)],
            "load": [(path, "<module>", main_line + 20), (path, "main", main_line - 30)],
            "engine": [(path, "<module>", main_line + 20), (path, "main", main_line - 12), (grpo, "__init__", 655)],
            "sync": top + [(tr, "training_step", 3722), (grpo, "_prepare_inputs", 1052),
                           (grpo, "_generate_and_score_completions", 1389), (grpo, "_move_model_to_vllm", 1180)]}


KV_GIB = 565  # tenths of a GiB


@scenario(name="trl_grpo_qwen25_1_5b_h100_vllm_colocate_without_sleep", case="colocated_engine",
          card=cards.H100_80GB, checkpointing=True, site=VENV,
          story="TRL GRPO on one H100: Qwen2.5-1.5B policy in bf16 (AdamW, gradient checkpointing) with vLLM "
                "colocated in the same process (vllm_mode=\"colocate\", vllm_gpu_memory_utilization=0.8, sleep mode "
                "off). Step 1's rollout fits; the loss forward over 16 sequences of 640 tokens fits; the backward "
                "fails.",
          physics="The engine's weights (2.9 GiB) and KV cache (56.5 GiB) stay resident through the update. The "
                  "policy's backward needs its gradients and the logits' gradients on top of them.",
          change="vllm_enable_sleep_mode=True (the engine frees its KV cache and offloads its weights during the "
                 "update, and wakes for the next rollout): two GRPO steps fit",
          still=[("half_batch", "8 completions per micro-batch: the backward still fails")])
def trl_colocate(run, variant):
    lib = run.fr.lib
    s = trl_sites(lib, "/workspace/grpo/train_grpo.py", 88)
    m = models.QWEN25_1_5B
    st = Plain(param_bytes=2)
    b = 8 if variant == "half_batch" else 16
    tr = Trainer(run, m, s, [], st, checkpointing=True)
    st.load(s["load"] + [(lib("transformers/modeling_utils.py"), "from_pretrained", 4250)])
    eng = Engine(run, m, KV_GIB * GiB // 10, "vllm")
    eng.load(s["engine"])
    eng.profile(s["engine"], 16384)
    eng.init_kv(s["engine"])
    for step in (1, 2):
        run.step, run.phase = step, "rollout"
        out = eng.generate(s["rollout"], 16, 128, 512)
        if variant == "fix":
            run.phase = "sleep"
            eng.sleep(s["rollout"][:-3])
        tr.train_step(step, b, 640)
        run.free(out)
        if variant == "fix":
            run.phase = "wake"
            eng.wake(s["rollout"][:-3])


class FullGatherSync:
    """Weight sync in the style `{k: v.full_tensor() for k, v in model.state_dict().items()}` before
    llm.load_weights: every parameter all-gathered (fp32, the FSDP2 shards' dtype) at once; the
    bucketed variant gathers, casts and loads one parameter at a time."""


@scenario(name="fsdp2_qwen25_7b_h100_colocated_vllm_weight_sync_gathers_whole_model", case="colocated_engine",
          card=cards.H100_80GB, world=8, checkpointing=True, nccl=True, rank=3, site=VENV,
          story="An RL recipe with FSDP2 over 8 H100 (Qwen2.5-7B policy, fp32 shards, AdamW) and a vLLM engine "
                "per GPU in the same process (gpu_memory_utilization=0.55, no sleep). Step 1's rollout and update "
                "fit; the weight sync that follows gathers the full state dict and fails.",
          physics="The sync materialises every parameter unsharded in fp32 (28.4 GiB) while the engine's bf16 "
                  "weights (14.2 GiB) and KV cache (27 GiB) and the trainer's shards and AdamW state are resident.",
          change="bucketed weight sync (full_tensor, cast to bf16 and load one parameter at a time): two steps fit",
          still=[("half_batch", "half the micro-batch: the sync still fails")])
def fsdp2_colocate_sync(run, variant):
    lib = run.fr.lib
    path = "/workspace/rl/ppo_colocate.py"
    s = sites.script(path, "update_policy", 203, 311, 342)
    s["engine"] = [(path, "<module>", 342), (path, "main", 280), (path, "build_rollout_engine", 121)]
    s["rollout"] = [(path, "<module>", 342), (path, "main", 318), (path, "rollout", 164)]
    s["sync"] = [(path, "<module>", 342), (path, "main", 322), (path, "sync_weights", 187)]
    m = models.QWEN25_7B
    st = FSDP2(8)
    b = 1 if variant == "half_batch" else 2
    tr = Trainer(run, m, s, [], st, checkpointing=True)
    st.load(s["load"])
    eng = Engine(run, m, 27 * GiB, "vllm")
    eng.load(s["engine"])
    eng.profile(s["engine"], 8192)
    eng.init_kv(s["engine"])
    for step in (1, 2):
        run.step, run.phase = step, "rollout"
        out = eng.generate(s["rollout"], 64, 512, 1024)
        tr.train_step(step, b, 2048)
        run.free(out)
        run.phase = "weight_sync"
        sd = (lib("torch/distributed/tensor/_api.py"), "full_tensor", 573)
        coll = (lib("torch/distributed/_functional_collectives.py"), "all_gather_tensor", 221)
        if variant == "fix":
            for u in st.units():
                run.at(*s["sync"], sd, coll)
                full = run.new(st.numel(u) * 4, "communication", op="empty")
                run.at(*s["sync"])
                bf = run.new(st.numel(u) * 2, "temporaries", op="copy")
                run.free(full)
                eng.load_weights(s["sync"], 512 * 1024)
                run.free(bf)
            continue
        run.at(*s["sync"], (path, "<dictcomp>", 187), sd, coll)
        fulls = [run.new(st.numel(u) * 4, "communication", op="empty") for u in st.units()]
        for u, f in zip(st.units(), fulls):
            eng.load_weights(s["sync"], st.numel(u) * 2)
        run.free_all(fulls)


# ------------------------------------------------------------------------------------------------------
# CUDA graphs: evaluation, serving, torch.compile with dynamic shapes

WARMUP_STREAM = 0x55D8C1B0A2C0


def no_grad_forward(run, m, tokens, stream, layer_frames, head=True, cat_out="activations"):
    """One inference forward: each layer's output replaces its input; returns the logits (or the
    last hidden state)."""
    h = run.new(tokens * m.hidden * 2, "activations", op="empty", stream=stream)
    for i in range(m.layers):
        run.at(*layer_frames(i))
        qkv = run.new(tokens * (m.hidden + 2 * m.kv_dim) * 2, "temporaries", op="mm", stream=stream)
        attn = run.new(tokens * m.hidden * 2, "temporaries", op="sdpa", stream=stream)
        run.free(qkv)
        gu = run.new(tokens * m.inter * 4, "temporaries", op="mm", stream=stream)
        act = run.new(tokens * m.inter * 2, "temporaries", op="pointwise", stream=stream)
        run.free(gu)
        h2 = run.new(tokens * m.hidden * 2, "activations", op="mm", stream=stream)
        run.free(act)
        run.free(attn)
        run.free(h)
        h = h2
    if not head:
        return h
    run.at(*layer_frames(None))
    out = run.new(tokens * m.vocab * 2, cat_out, op="mm", stream=stream)
    run.free(h)
    return out


@scenario(name="llama32_1b_rtx4090_eval_forward_captured_after_training", case="graph_capture",
          card=cards.RTX4090, checkpointing=True, site=CONDA, tight=False,
          story="Llama-3.2-1B trained in bf16 on an RTX 4090 (AdamW, gradient checkpointing, 4 x 1024 tokens); "
                "evaluation then captures its no_grad forward (16 x 1024 tokens) with torch.cuda.graph after three "
                "warm-up iterations on a side stream, and fails inside the capture.",
          physics="The capture allocates from the graph's private pool. The training steps' and the warm-up's "
                  "freed blocks stay cached in the default pool (on the default and the warm-up stream), which the "
                  "capture cannot use, and the allocator does not release cached memory while a capture is "
                  "underway; cudaMalloc for the private pool fails.",
          change="torch.cuda.empty_cache() before the capture: the capture and 20 replays fit",
          still=[])
def eval_capture(run, variant):
    lib = run.fr.lib
    path = "/home/ml/experiments/llama1b/train_and_eval.py"
    s = sites.script(path, "train_epoch", 66, 210, 231)
    m = models.LLAMA32_1B
    st = Plain(param_bytes=2)
    tr = Trainer(run, m, s, [(4, 1024)] * 3, st, checkpointing=True)
    st.load(s["load"])
    tr.run_steps()
    run.step = 4
    top = [(path, "<module>", 231), (path, "main", 216)]
    hf = "transformers/models/llama/modeling_llama.py"

    def frames(fn, line):
        def layer(i):
            base = top + [(path, fn, line)] + tr.p.mod(hf, 832) + tr.p.mod(hf, 571)
            return base + (tr.p.mod(hf, 318) + tr.p.mod(hf, 168) if i is not None else [])
        return layer
    run.phase = "eval"
    run.at(*top, (path, "build_eval_graph", 171))
    static_in = run.new(16 * 1024 * 8, "inputs", op="empty")
    for _ in range(3):
        out = no_grad_forward(run, m, 16 * 1024, WARMUP_STREAM, frames("build_eval_graph", 176))
        run.free(out)
    if variant == "fix":
        run.at(*top, (path, "build_eval_graph", 178), (lib("torch/cuda/memory.py"), "empty_cache", 224))
        run.alloc.empty_cache(run.frames())
    run.phase = "capture"
    run.alloc.begin_capture((1, 0), CAPTURE_STREAM)
    static_out = no_grad_forward(run, m, 16 * 1024, CAPTURE_STREAM, frames("build_eval_graph", 181))
    run.alloc.end_capture((1, 0))
    run.phase = "eval"
    for _ in range(20):
        run.tick()
    run.free(static_out)
    run.free(static_in)


@scenario(name="qwen25_1_5b_reranker_l4_graphs_per_bucket_each_own_pool", case="graph_capture",
          card=cards.L4, checkpointing=False, site=USR, tight=False,
          story="A reranking service (Qwen2.5-1.5B backbone, bf16) on an L4 captures one CUDA graph per padded "
                "shape bucket (56 x 128, 256, 512, 1024, 2048 tokens) at start-up, each with its own "
                "torch.cuda.graph (no shared pool), after one eager warm-up per bucket; the capture of the "
                "largest bucket fails.",
          physics="Each graph keeps its private pool for replay: the pools of the captured buckets stay reserved "
                  "(the pool of a live graph is never released) and only that graph may use them. The largest "
                  "capture needs a pool of its own on top of them and of the warm-ups' cache.",
          change="one pool shared by all buckets (torch.cuda.graph(g, pool=first_graph.pool())), captured "
                 "largest first: start-up and serving fit",
          still=[])
def reranker_capture(run, variant):
    path = "/srv/rerank/server.py"
    m = models.QWEN25_1_5B
    lib = run.fr.lib
    top = [(path, "<module>", 301), (path, "main", 288), (path, "startup", 240)]
    qwen = "transformers/models/qwen2/modeling_qwen2.py"
    p = Trainer(run, m, {"forward": top}, [], Plain()).p
    run.phase = "load"
    run.at(*top[:-1], (path, "load_model", 57), (lib("transformers/modeling_utils.py"), "from_pretrained", 4250),
           (lib("transformers/modeling_utils.py"), "_load_pretrained_model", 4720))
    Plain(param_bytes=2).__class__  # the weights, bf16
    weights = [run.new(m.embed_numel() * 2, "parameters", op="copy")]
    for _ in range(m.layers):
        weights.append(run.new(m.layer_numel() * 2, "parameters", op="copy"))
    buckets = [128, 256, 512, 1024, 2048]
    if variant == "fix":
        buckets = list(reversed(buckets))
    graphs = []
    for k, seq in enumerate(buckets):
        tokens = 56 * seq
        run.phase = "warmup"
        run.step = k + 1

        def layer(i, fn="capture_bucket", line=214):
            base = top + [(path, fn, line)] + p.mod(qwen, 861) + p.mod(qwen, 571)
            return base + (p.mod(qwen, 318) + p.mod(qwen, 168) if i is not None else [])
        inp = run.new(tokens * 8, "inputs", op="empty")
        h = no_grad_forward(run, m, tokens, DEFAULT, lambda i: layer(i, "capture_bucket", 209), head=False)
        run.free(h)
        pool = (1, 0) if variant == "fix" else (k + 1, 0)
        run.phase = "capture"
        run.alloc.begin_capture(pool, CAPTURE_STREAM)
        h = no_grad_forward(run, m, tokens, CAPTURE_STREAM, layer, head=False)
        run.at(*layer(None))
        score = run.new(56 * 4, "activations", op="mm", stream=CAPTURE_STREAM)
        run.free(h)
        run.alloc.end_capture(pool)
        graphs.append((inp, score))
        run.tick()
    run.phase = "serve"
    run.tick(10)


COMPILE_LENGTHS = [384, 320, 512, 448, 640, 576, 768, 704, 896, 832, 1024, 960, 1152, 1088, 1280, 1216, 1408, 1344,
                   1536, 1472, 1664, 1600, 1792, 1728, 1920, 1856, 2048]


@scenario(name="llama32_1b_l4_compile_reduce_overhead_records_graph_per_length", case="graph_capture",
          card=cards.L4, checkpointing=False, site=VENV, tight=False,
          story="A log-likelihood scoring job runs torch.compile(model, mode=\"reduce-overhead\") on Llama-3.2-1B "
                "(bf16) on an L4 with batches of 40 padded to their longest request (multiples of 64 tokens). "
                "Dynamic shapes recompile, and CUDA graph trees warm up and record one graph per distinct length; "
                "the warm-up for a new length, in the trees' pool, fails.",
          physics="All recordings share the cudagraph trees' pool. Each longer length needs larger blocks than the "
                  "pool's free ones, so the pool grows by new segments; a pool of live graphs is never released, "
                  "and nothing is released while recording.",
          change="pad every batch to one of three bucket lengths (512, 1024, 2048): three graphs, and all 27 "
                 "batches fit",
          still=[])
def compile_dynamic(run, variant):
    lib = run.fr.lib
    path = "/home/ubuntu/eval/score_loglik.py"
    m = models.LLAMA32_1B
    top = [(path, "<module>", 144), (path, "main", 131), (path, "score_batches", 97)]
    run.phase = "load"
    run.at(*top[:-1], (path, "main", 119), (lib("transformers/modeling_utils.py"), "from_pretrained", 4250))
    weights = [run.new(m.embed_numel() * 2, "parameters", op="copy")]
    for _ in range(m.layers):
        weights.append(run.new(m.layer_numel() * 2, "parameters", op="copy"))
    trees = lib("torch/_inductor/cudagraph_trees.py")
    dyn = [top[0], top[1], (path, "score_batches", 101), (lib("torch/_dynamo/eval_frame.py"), "_fn", 655),
           (lib("torch/_functorch/aot_autograd.py"), "runtime_wrapper", 1178),
           (lib("torch/_inductor/output_code.py"), "__call__", 460), (trees, "run", 1980)]
    seen = set()
    pool = (0, 1)
    for k, n in enumerate(COMPILE_LENGTHS):
        run.step = k + 1
        if variant == "fix":
            n = 512 if n <= 512 else (1024 if n <= 1024 else 2048)
        tokens = 40 * n
        run.phase = "score"
        run.at(*top)
        ids = run.new(tokens * 8, "inputs", op="copy")
        kernel = ("/tmp/torchinductor_ubuntu/%s/c%s.py" % ("q3" if n < 1024 else "x7", "q3vd2f" if n < 1024 else "x7ab19"), "call", 1437)
        if n not in seen:
            seen.add(n)
            for fn, line, phase in (("run_eager", 2016, "warmup"), ("record_function", 2082, "capture")):
                run.phase = phase
                stack = dyn + [(trees, fn, line)]
                if phase == "warmup":
                    stack += [(trees, "run", 706), kernel]
                else:
                    stack += [(trees, "_record", 1271), kernel]
                run.alloc.begin_capture(pool, CAPTURE_STREAM)
                out = no_grad_forward(run, m, tokens, CAPTURE_STREAM, lambda i: stack, head=False)
                run.at(*stack)
                logp = run.new(tokens * 4, "activations", op="graph", stream=CAPTURE_STREAM)
                run.free(out)
                run.alloc.end_capture(pool)
                run.free(logp)
        run.phase = "score"
        run.at(*dyn, (trees, "execute_node", 1990))
        run.tick()
        run.free(ids)
