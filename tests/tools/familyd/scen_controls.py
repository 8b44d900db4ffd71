"""Controls: distributed or checkpointed runs whose cause is a classic one. Their labels say which;
the ones with activation checkpointing on carry "checkpointing": true, so no fix may propose turning
it on. One keeps FSDP1's record_stream and its pending frees, which are not what ends it."""

import random

from allocator import GiB, MiB
from run import Run
import frames as F
import models as M
from loop import Loop
from fsdp2 import Fsdp2
from spec import Spec, g, m


def fsdp2_ckpt_first_backward():
    P = F.Paths("/usr/local/lib/python3.11/site-packages", "/workspace")
    model = M.QWEN25_7B
    world = 8

    def make():
        r = Run("A100-40", outside=int(1.3 * GiB), device=0)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        user = "/workspace/torchtune/recipes/full_finetune_distributed.py"
        tokens = 8192 if fixed else 24576
        r.notes["tokens"] = tokens
        l = Loop(r, P, model, user, ckpt="non_reentrant", param_dtype=4, grad_dtype=4, shard=world, opt_bytes=8,
                 layer_frames=P.call(P.sp + "/torchtune/modules/transformer.py", 122, "forward", "h = self.sa_norm(x)"))
        Fsdp2(l, world)
        l.load([(user, 520, "_setup_model", "training.shard_model(model=model, shard_conditions=fsdp_shard_conditions, cpu_offload=fsdp_cpu_offload, reshard_after_forward=reshard_after_forward)"),
                (P.t + "/distributed/fsdp/_fully_shard/_fully_shard.py", 235, "fully_shard", "state._fsdp_param_group = FSDPParamGroup(")])
        for step in range(2):
            r.step = step
            l.step(tokens)
            l.zero_grad()

    def describe(r, rf):
        f = r.failure
        return ("Qwen2.5-7B full fine-tune with torchtune's distributed recipe: FSDP2 over 8 A100-40GB, fp32 sharded "
                "parameters, bf16 compute, enable_activation_checkpointing=True (non-reentrant, per block), one "
                "24576-token packed sequence per rank. The forward keeps only each block's input and fits; the first "
                "backward starts with the fp32 logits' gradient (24576 x 152064) and recomputes blocks under "
                "torch/utils/checkpoint.py, and fails there with %s of activations and %s of gradients live. "
                "Checkpointing is already on: a micro-batch of 8192 tokens with gradient accumulation (or a chunked "
                "cross-entropy) peaks at %s reserved and completes."
                % (g(f["live_by_category"].get("activations", 0)), g(f["live_by_category"].get("gradients", 0)),
                   g(rf.a.peak_reserved)))

    return Spec("fsdp2_qwen25_7b_a100_40gb_checkpointed_first_backward", "first_backward", "FSDP2 (torchtune)",
                make, program, describe, "micro-batch of 8192 tokens", checkpointing=True, rank_prefix=0)


def hf_reentrant_longest_batch():
    P = F.Paths("/opt/conda/lib/python3.11/site-packages", "/home/user")
    model = M.QWEN25_1_5B

    def make():
        return Run("L40S", outside=int(0.6 * GiB), device=0)

    def program(r, fixed):
        sp = P.sp
        tr = sp + "/transformers/trainer.py"
        l = Loop(r, P, model, "/home/user/sft.py", ckpt="reentrant", param_dtype=2, grad_dtype=2, opt_bytes=8,
                 fwd_frames=[(tr, 2555, "_inner_training_loop", "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)"),
                             (tr, 3810, "compute_loss", "outputs = model(**inputs)")],
                 layer_frames=P.call(sp + "/transformers/models/qwen2/modeling_qwen2.py", 259, "forward", "hidden_states, self_attn_weights = self.self_attn("))
        l.load([(tr, 2392, "_inner_training_loop", "self._move_model_to_device(self.model, args.device)")])
        rng = random.Random(7)
        for step in range(30):
            r.step = step
            seq = rng.choice([384, 512, 768, 1024, 1536, 2048])
            if step == 27:
                seq = 4096 if fixed else 28672  # one document with no max_length
            r.notes.setdefault("seqs", []).append(seq)
            l.step(4 * seq if seq <= 2048 else seq)
            l.zero_grad()

    def describe(r, rf):
        f = r.failure
        longest = max(s * 4 for s in r.notes["seqs"][:-1])
        return ("Qwen2.5-1.5B full fine-tune with the Hugging Face Trainer on one L40S: bf16 weights, AdamW with fp32 "
                "moments, gradient_checkpointing=True (reentrant: CheckpointFunction re-runs each block in backward), "
                "dynamic padding and no max_length. 27 batches of 4 x 384-2048 tokens train (the largest %d tokens); "
                "batch 27 is one 28672-token document, whose logits and their fp32 loss over the 151936-token "
                "vocabulary fail in its %s. Checkpointing is already on; truncating to 4096 tokens (or packing) "
                "runs to the end (peak reserved %s)." % (longest, f["phase"], g(rf.a.peak_reserved)))

    return Spec("hf_trainer_qwen25_1_5b_l40s_gradient_checkpointing_long_document", "longest_batch",
                "transformers Trainer", make, program, describe, "max_length=4096", checkpointing=True)


def ddp_capacity():
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace")
    model = M.LLAMA3_8B

    def make():
        r = Run("A100-80", outside=int(1.4 * GiB), device=5)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        user = "/workspace/train_ddp.py"
        shard = 8 if fixed else 1
        l = Loop(r, P, model, user, param_dtype=2, grad_dtype=2, shard=shard, opt_bytes=8, master_bytes=0)
        l.load(P.to_device(user, 80, "model = model.to(local_rank)"))
        ddp = [(user, 83, "main", "model = DDP(model, device_ids=[local_rank], gradient_as_bucket_view=True)"),
               (P.t + "/nn/parallel/distributed.py", 1245, "_ddp_init_helper", "self.reducer = dist.Reducer(")]
        with r.at(ddp):
            left = 2 * model.params // shard
            buckets = []
            while left > 0:
                n = min(25 * MiB, left)
                buckets.append(r.alloc(n, "gradients", cpp=[("reducer.cpp", 0, "c10d::Reducer::initialize_buckets(std::vector<c10d::Reducer::BucketIndices, std::allocator<c10d::Reducer::BucketIndices> >)", None)]))
                left -= n
        l.hooks["make_grad"] = lambda i: []  # the gradients are views into the buckets
        l.grads = {"head": [], "embed": []}
        l.zero_grad = lambda: None
        for step in range(2):
            r.step = step
            l.step(2048)

    def describe(r, rf):
        f = r.failure
        st = 12 * M.LLAMA3_8B.params
        return ("Llama-3-8B full fine-tune under DDP on 8 A100-80GB with gradient_as_bucket_view=True (the buckets are the "
                "gradients), bf16 weights and AdamW with fp32 moments. Every rank holds the whole state: bf16 weights "
                "and gradients and two fp32 moments are %s, more than the 79.19 GiB card before any activation. The "
                "forward and the first backward fit (2048 tokens); the first optimizer.step() fails creating the "
                "moments after %s of them. No activation fix helps: sharding the state (FSDP / ZeRO over the 8 GPUs) "
                "peaks at %s reserved." % (g(st), g(f["live_by_category"].get("optimizer_state", 0)), g(rf.a.peak_reserved)))

    return Spec("ddp_llama3_8b_a100_80gb_state_exceeds_card", "capacity", "DDP", make, program, describe,
                "state sharded over 8 GPUs", also_acceptable=[], rank_prefix=5)


def megatron_recompute_optimizer_state():
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace/Megatron-LM")
    model = M.LLAMA2_13B
    tp = 2

    def make():
        r = Run("A100-80", outside=int(1.6 * GiB), device=3)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        meg = "/workspace/Megatron-LM/megatron"
        user = "/workspace/Megatron-LM/pretrain_gpt.py"
        tokens = 4096 if fixed else 16384
        l = Loop(r, P, model, user, ckpt="reentrant", param_dtype=2, grad_dtype=4, shard=tp, opt_bytes=0,
                 fwd_frames=[(user, 290, "<module>", "pretrain("),
                             (meg + "/training/training.py", 1180, "train_step", "losses_reduced = forward_backward_func("),
                             (meg + "/core/pipeline_parallel/schedules.py", 275, "forward_step", "output_tensor, loss_func = forward_step_func(data_iterator, model)")],
                 layer_frames=P.call(meg + "/core/transformer/transformer_layer.py", 445, "forward", "attention_output_with_bias = self.self_attention("))
        init = [(user, 290, "<module>", "pretrain("),
                (meg + "/core/distributed/param_and_grad_buffer.py", 592, "__init__", "self.param_data = torch.zeros(")]
        l.load(init)
        with r.at(init[:1], [(meg + "/core/distributed/param_and_grad_buffer.py", 608, "__init__", "self.grad_data = torch.zeros(")]):
            r.alloc(4 * model.params // tp, "gradients")
        with r.at(init[:1], [(meg + "/core/optimizer/distrib_optimizer.py", 376, "_build_model_and_main_param_groups", "shard_main_param = shard_model_param.clone().float()")]):
            r.alloc(4 * model.params // tp // 2, "optimizer_state")
        l.hooks["make_grad"] = lambda i: []
        l.grads = {"head": [], "embed": []}
        l.zero_grad = lambda: None
        adam = []

        def after_step():
            if not adam:
                with r.at([(user, 290, "<module>", "pretrain("),
                           (P.sp + "/transformer_engine/pytorch/optimizers/fused_adam.py", 400, "step", "state[\"exp_avg\"] = torch.zeros_like(")]):
                    adam.extend(r.tensors([4 * model.params // tp // 2] * 2, "optimizer_state"))
        l.hooks["after_step"] = after_step
        for step in range(3):
            r.step = step
            l.step(tokens)

    def describe(r, rf):
        f = r.failure
        return ("Llama-2-13B-shaped pre-training with Megatron-LM on A100-80GB (TP=2, DP=2, distributed optimizer, "
                "--recompute-granularity full --recompute-method uniform, micro-batch of 16384 tokens, fp32 main_grad "
                "buffer). Step 0 runs to its end: Transformer Engine's FusedAdam had no state yet. Its first step "
                "creates the exp_avg and exp_avg_sq shards (%s), and the same micro-batch no longer fits beside them: "
                "step %d fails in its %s. Recompute is already on; a micro-batch of 4096 tokens fits with the state "
                "(peak reserved %s)." % (g(2 * 4 * M.LLAMA2_13B.params // 2 // 2), f["step"], f["phase"], g(rf.a.peak_reserved)))

    return Spec("megatron_llama2_13b_recompute_full_adam_state_second_step", "optimizer_step2", "Megatron-LM",
                make, program, describe, "micro-batch of 4096 tokens", checkpointing=True, rank_prefix=3)


def fsdp2_ckpt_logits_leak():
    P = F.Paths("/usr/local/lib/python3.11/site-packages", "/workspace")
    model = M.LLAMA32_3B
    world = 4

    def make():
        r = Run("L4", outside=int(0.6 * GiB), device=2)
        r.visible_devices = 4
        return r

    def program(r, fixed):
        user = "/workspace/finetune/train.py"
        l = Loop(r, P, model, user, ckpt="non_reentrant", param_dtype=4, grad_dtype=4, shard=world, opt_bytes=8)
        Fsdp2(l, world)
        l.load([(user, 120, "main", "fully_shard(model, mesh=mesh, mp_policy=mp_policy)"),
                (P.t + "/distributed/fsdp/_fully_shard/_fully_shard.py", 235, "fully_shard", "state._fsdp_param_group = FSDPParamGroup(")])
        kept = []
        for step in range(120):
            r.step = step
            l.step(2048)
            l.zero_grad()
            if not fixed:
                # for a token-accuracy metric at the epoch's end: preds.append(outputs.logits.argmax(-1)) was
                # written as preds.append(outputs.logits.detach()), the bf16 logits of every step
                with r.at([(user, 160, "train", "all_logits.append(outputs.logits.detach())")]):
                    kept.append(r.alloc(2048 * model.vocab * 2 // 8, "activations"))

    def describe(r, rf):
        f = r.failure
        return ("Llama-3.2-3B-shaped fine-tune with FSDP2 over 4 L4s (fp32 sharded parameters, bf16 compute, "
                "non-reentrant activation checkpointing), 2048 tokens per step. For an accuracy metric computed at the "
                "end of the epoch the loop keeps outputs.logits.detach() of the last 256 positions of every step "
                "(%s each) in a list on the GPU. Live memory at the start of each step grows by that much with the "
                "batch unchanged, until step %d fails in %s. Checkpointing is on and irrelevant: keeping "
                "logits.argmax(-1) (or .cpu()) runs all 120 steps (peak reserved %s)."
                % (m(2048 * M.LLAMA32_3B.vocab * 2 // 8), f["step"], f["phase"], g(rf.a.peak_reserved)))

    return Spec("fsdp2_llama32_3b_l4_checkpointed_logits_kept_leak", "leak", "FSDP2", make, program, describe,
                "keep argmax, not logits", checkpointing=True, rank_prefix=2)


def fsdp2_eval_keeps_logits():
    P = F.Paths("/usr/local/lib/python3.11/site-packages", "/workspace")
    model = M.QWEN25_1_5B
    world = 8

    def make():
        r = Run("A10G", outside=int(0.6 * GiB), device=4)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        from scen_rl import no_grad_forward
        sp = P.sp
        tr = sp + "/transformers/trainer.py"
        l = Loop(r, P, model, tr, ckpt="non_reentrant", param_dtype=4, grad_dtype=4, shard=world, opt_bytes=8)
        Fsdp2(l, world)
        l.load([(tr, 2392, "_inner_training_loop", "model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)"),
                (P.t + "/distributed/fsdp/_fully_shard/_fully_shard.py", 235, "fully_shard", "state._fsdp_param_group = FSDPParamGroup(")])
        for step in range(10):
            r.step = step
            l.step(4096)
            l.zero_grad()
        r.phase = "eval"
        ev = [(tr, 4254, "evaluation_loop", "losses, logits, labels = self.prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys)"),
              (tr, 4470, "prediction_step", "outputs = model(**inputs)")]
        kept = []
        for batch in range(400):
            r.notes["batch"] = batch
            no_grad_forward(r, model, 2048, ev, dtype_logits=0)
            with r.at([(tr, 4283, "evaluation_loop", "all_preds.add(logits)"),
                       (sp + "/transformers/trainer_pt_utils.py", 347, "add", "self.tensors = nested_concat(self.tensors, tensors, padding_index=self.padding_index)")]):
                kept.append(r.alloc(2048 * (1 if fixed else model.vocab) * 2, "activations"))

    def describe(r, rf):
        f = r.failure
        return ("Qwen2.5-1.5B fine-tuned with the Hugging Face Trainer under FSDP2 on 8 A10G (activation checkpointing on) "
                "for 10 steps, then evaluated with no eval_accumulation_steps and no preprocess_logits_for_metrics: "
                "every eval batch's bf16 logits (2048 tokens x 151936, %s) are kept on the GPU for compute_metrics. "
                "After %d batches they hold %s and the next one fails. Training itself is small; keeping argmax "
                "predictions (preprocess_logits_for_metrics) runs the whole evaluation (peak reserved %s)."
                % (m(2048 * M.QWEN25_1_5B.vocab * 2), r.notes["batch"], g(f["live_by_category"].get("activations", 0)),
                   g(rf.a.peak_reserved)))

    return Spec("fsdp2_qwen25_1_5b_a10g_trainer_eval_keeps_logits", "eval_accumulation", "FSDP2 + transformers Trainer",
                make, program, describe, "preprocess_logits_for_metrics (argmax)", checkpointing=True, phase="eval",
                rank_prefix=4)


ALL = [fsdp2_ckpt_first_backward, hf_reentrant_longest_batch, ddp_capacity,
       megatron_recompute_optimizer_state, fsdp2_ckpt_logits_leak, fsdp2_eval_keeps_logits]
