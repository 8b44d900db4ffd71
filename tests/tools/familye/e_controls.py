"""Classic causes inside distributed recipes, each with its classic counterfactual."""

from common import run_on
from allocator import GiB, MiB
from run import Run
import frames as F
import models as M
from loop import Loop, ENGINE_ACC
from fsdp2 import Fsdp2
from scen_rl import no_grad_forward
from spec import Spec, g, m

GEMMA2_9B = M.Decoder("Gemma-2-9B", 42, 3584, 14336, 16, 8, 256000, tied=True)


def ddp_buckets(r, P, model, user, line, dtype=2):
    with r.at([(user, line, "main", "model = DDP(model, device_ids=[local_rank], gradient_as_bucket_view=True)"),
               (P.t + "/nn/parallel/distributed.py", 1245, "_ddp_init_helper", "self.reducer = dist.Reducer(")]):
        left = dtype * model.params
        while left > 0:
            n = min(25 * MiB, left)
            r.alloc(n, "gradients", cpp=[("reducer.cpp", 0, "c10d::Reducer::initialize_buckets(std::vector<c10d::Reducer::BucketIndices, std::allocator<c10d::Reducer::BucketIndices> >)", None)])
            left -= n


def grads_are_buckets(l):
    l.hooks["make_grad"] = lambda i: []
    l.grads = {"head": [], "embed": []}
    l.zero_grad = lambda: None


def ddp_contrastive_queue_leak():
    """A MoCo-style queue of negatives for an embedding model under DDP: each step all-gathers the
    batch's embeddings from the 8 ranks and appends them with torch.cat to the queue, whose
    dequeue (keeping the last K) was left out."""
    P = F.Paths("/opt/conda/lib/python3.11/site-packages", "/workspace")
    # an embedding model: the decoder without an LM head; its "logits" are the batch's similarity
    # scores, tokens x 16
    model = M.Decoder("gte-Qwen2-1.5B-shaped", 28, 1536, 8960, 12, 2, 151936, tied=True)
    model.vocab = 16

    def make():
        return run_on("L40S", outside=int(0.9 * GiB), device=5, visible=8)

    def program(r, fixed):
        user = "/workspace/embed/train_contrastive.py"
        l = Loop(r, P, model, user, param_dtype=2, grad_dtype=2, opt_bytes=8, master_bytes=4,
                 fwd_frames=[(user, 201, "training_step", "q = model(**batch[\"query\"]).last_hidden_state")],
                 layer_frames=P.call(P.sp + "/transformers/models/qwen2/modeling_qwen2.py", 259, "forward", "hidden_states, self_attn_weights = self.self_attn("))
        l.load(P.to_device(user, 160, "model = AutoModel.from_pretrained(args.model, torch_dtype=torch.bfloat16).to(device)"))
        ddp_buckets(r, P, model, user, 163)
        grads_are_buckets(l)
        queue = None
        qlen = 0
        per_step = 8 * 256 * model.h * 4  # 8 ranks x 256 pooled fp32 passage embeddings
        for step in range(600):
            r.step = step
            l.step(512 * 16)
            r.phase = "optimizer"
            with r.at([(user, 214, "training_step", "self.queue = torch.cat([self.queue, all_gather(k.detach())], dim=0)")]):
                qlen += per_step
                if fixed:
                    qlen = min(qlen, 32 * per_step)  # queue kept at 65536 negatives
                new = r.alloc(qlen, "activations")
                if queue is not None:
                    r.free(queue)
                queue = new
            r.notes["queue"] = qlen

    def describe(r, rf):
        f = r.failure
        return ("Contrastive fine-tuning of a Qwen2.5-1.5B embedding model under DDP on 8 L40S (bf16 weights, fp32 "
                "master copy and AdamW moments, gradient_as_bucket_view=True), 256 queries and 256 passages of 16 tokens per rank. "
                "A MoCo-style queue of negatives grows by the all-gathered embeddings of every step (%s) with "
                "torch.cat and is never dequeued: live memory between steps grows by that much with the batch "
                "unchanged, until step %d fails in its %s with the queue at %s. Keeping the queue at 65536 "
                "negatives (the dequeue) runs all 600 steps (peak reserved %s)."
                % (m(8 * 256 * model.h * 4), f["step"], f["phase"], g(r.notes["queue"]), g(rf.a.peak_reserved)))

    return Spec("ddp_qwen25_1_5b_l40s_contrastive_queue_never_dequeued", "leak", "DDP", make, program, describe,
                "queue dequeued to 65536 negatives", rank_prefix=5, ring=4000)


def fsdp2_adam_second_step():
    P = F.Paths("/usr/local/lib/python3.11/site-packages", "/workspace/torchtitan")
    model = M.LLAMA3_8B
    world = 8

    def make():
        return run_on("A100-40", outside=int(1.2 * GiB), device=0, visible=8)

    def program(r, fixed):
        user = "/workspace/torchtitan/torchtitan/train.py"
        tokens = TOK[1] if fixed else TOK[0]
        l = Loop(r, P, model, user, param_dtype=4, grad_dtype=4, shard=world, opt_bytes=8,
                 layer_frames=P.call("/workspace/torchtitan/torchtitan/models/llama3/model/model.py", 313, "forward",
                                     "h = x + self.attention(self.attention_norm(x), freqs_cis)"))
        Fsdp2(l, world)
        l.load([(user, 250, "__init__", "model = self.train_spec.parallelize_fn(model, parallel_dims, job_config)"),
                ("/workspace/torchtitan/torchtitan/models/llama3/infra/parallelize.py", 310, "apply_fsdp", "fully_shard(transformer_block, **fsdp_config, reshard_after_forward=reshard_after_forward)")])
        for step in range(3):
            r.step = step
            l.step(tokens)
            l.zero_grad()

    def describe(r, rf):
        f = r.failure
        return ("Llama-3-8B pre-training with torchtitan-style FSDP2 on 8 A100-40GB (fp32 sharded parameters and "
                "gradients, bf16 compute, no activation checkpointing, %d tokens per rank). Step 0 runs to its end: "
                "AdamW had no state yet. Its step creates the sharded exp_avg and exp_avg_sq (%s), and the same batch "
                "no longer fits beside them: step %d fails in its %s. A local batch of %d tokens fits with the state "
                "(peak reserved %s)." % (TOK[0], g(8 * model.params // world), f["step"], f["phase"], TOK[1],
                                         g(rf.a.peak_reserved)))

    return Spec("fsdp2_llama3_8b_a100_40gb_adam_state_first_step_then_forward", "optimizer_step2", "FSDP2 (torchtitan)",
                make, program, describe, "smaller local batch", rank_prefix=0)


TOK = [5120, 2048]


def lightning_validation_outputs():
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace")
    model = M.LLAMA32_3B

    def make():
        return run_on("A100-80", outside=int(1.3 * GiB), device=1, visible=4)

    def program(r, fixed):
        pl = P.sp + "/lightning/pytorch"
        user = "/workspace/lit/module.py"
        fit = [("/workspace/lit/train.py", 60, "main", "trainer.fit(module, datamodule=dm)"),
               (pl + "/trainer/trainer.py", 981, "_run_stage", "self.fit_loop.run()")]
        l = Loop(r, P, model, user, ckpt=None, param_dtype=4, grad_dtype=4, opt_bytes=8,
                 fwd_frames=fit + [(pl + "/loops/training_epoch_loop.py", 250, "advance", "batch_output = self.automatic_optimization.run(trainer.optimizers[0], batch_idx, kwargs)"),
                                   (user, 41, "training_step", "logits = self.model(batch[\"input_ids\"]).logits")])
        l.load(fit[:1] + [(pl + "/strategies/ddp.py", 120, "model_to_device", "self.model.to(self.root_device)")])
        ddp_buckets(r, P, model, pl + "/strategies/ddp.py", 180, dtype=4)
        grads_are_buckets(l)
        for step in range(20):
            r.step = step
            l.step(2 * 2048)
        r.phase = "eval"
        ev = fit + [(pl + "/loops/evaluation_loop.py", 430, "_evaluation_step", "output = call._call_strategy_hook(trainer, hook_name, *step_args)"),
                    (user, 58, "validation_step", "logits = self.model(batch[\"input_ids\"]).logits")]
        kept = []
        for batch in range(200):
            r.notes["batch"] = batch
            no_grad_forward(r, model, 2 * 2048, ev, dtype_logits=0)
            with r.at(fit, [(user, 61, "validation_step", "self.validation_step_outputs.append({\"logits\": logits, \"labels\": batch[\"labels\"]})")]):
                kept.append(r.alloc(2 * 2048 * (8 if fixed else model.vocab * 4), "activations"))

    def describe(r, rf):
        f = r.failure
        return ("Llama-3.2-3B-shaped model fine-tuned with PyTorch Lightning's DDP strategy on 4 A100-80GB (fp32 weights, "
                "AdamW, 2 x 2048 tokens per rank) for 20 steps, then validated: validation_step appends its fp32 "
                "logits (%s per batch) to self.validation_step_outputs for on_validation_epoch_end, as Lightning 2's "
                "migration notes show for outputs. After %d validation batches they hold %s and the next batch "
                "fails. Appending logits.argmax(-1) instead (or computing the metric per batch) runs the whole "
                "validation (peak reserved %s)." % (m(2 * 2048 * model.vocab * 4), r.notes["batch"],
                                                    g(f["live_by_category"].get("activations", 0)), g(rf.a.peak_reserved)))

    return Spec("lightning_ddp_llama32_3b_validation_step_outputs_logits", "eval_accumulation", "PyTorch Lightning (DDP)",
                make, program, describe, "append argmax predictions", phase="eval", rank_prefix=1)


def zero2_one_long_sample():
    P = F.Paths("/opt/conda/lib/python3.10/site-packages", "/workspace")
    model = M.MISTRAL_7B
    world = 8

    def make():
        return run_on("A100-80", outside=int(1.7 * GiB), device=6, visible=8)

    def program(r, fixed):
        import random
        sp = P.sp
        tr = sp + "/transformers/trainer.py"
        ds = sp + "/deepspeed/runtime/zero"
        l = Loop(r, P, model, tr, param_dtype=2, grad_dtype=2, opt_bytes=0,
                 fwd_frames=[(tr, 2481, "_inner_training_loop", "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)"),
                             (tr, 3698, "compute_loss", "outputs = model(**inputs)")],
                 layer_frames=P.call(sp + "/transformers/models/mistral/modeling_mistral.py", 250, "forward", "hidden_states, self_attn_weights = self.self_attn("))
        l.load([(tr, 2311, "_inner_training_loop", "model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)"),
                (sp + "/deepspeed/runtime/engine.py", 1180, "_configure_distributed_model", "self.module.to(self.device)")])
        init = [(tr, 2311, "_inner_training_loop", "model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)"),
                (ds + "/stage_1_and_2.py", 375, "__init__", "self.single_partition_of_fp32_groups.append(")]
        with r.at(init):
            r.alloc(4 * model.params // world, "optimizer_state")
        with r.at(init[:1], [(ds + "/stage_1_and_2.py", 640, "initialize_optimizer_states", "self.optimizer.step()"),
                             (sp + "/deepspeed/ops/adam/fused_adam.py", 169, "step", "state['exp_avg'] = torch.zeros_like(p.data)")]):
            r.tensors([4 * model.params // world] * 2, "optimizer_state")
        with r.at(init[:1], [(ds + "/stage_1_and_2.py", 1090, "reduce_independent_p_g_buckets_and_remove_grads", "self.ipg_buffer.append(torch.empty(")]):
            r.tensors([2 * 200000000, 2 * 200000000], "communication")
        with r.at(init[:1], [(ds + "/stage_1_and_2.py", 560, "__init__", "self.averaged_gradients[i] = torch.zeros(")]):
            r.alloc(2 * model.params // world, "gradients")
        grads_are_buckets(l)
        rng = random.Random(11)
        for step in range(40):
            r.step = step
            longest = rng.choice([384, 512, 768, 1024, 1536, 2048])
            if step == 33 and not fixed:
                longest = 9216  # one sample of the mix is a 9216-token document; no max_length
            r.notes.setdefault("lens", []).append(longest)
            l.step(2 * longest)

    def describe(r, rf):
        f = r.failure
        return ("Mistral-7B full fine-tune with the Hugging Face Trainer and DeepSpeed ZeRO-2 on 8 A100-80GB (bf16 "
                "weights, fp32 master and Adam partitions, overlap_comm buckets of 2e8, no gradient checkpointing), "
                "per_device_train_batch_size=2 with dynamic padding and no packing or max_length. 33 batches pad "
                "to at most %d tokens per sample; batch 33 holds one 9216-token document, so the whole batch pads to "
                "2 x 9216 tokens, and it fails in its %s. Truncating at max_length=2048 (or packing) runs all 40 steps "
                "(peak reserved %s)." % (max(r.notes["lens"][:-1]), f["phase"], g(rf.a.peak_reserved)))

    return Spec("zero2_mistral_7b_a100_one_long_sample_pads_batch", "longest_batch", "DeepSpeed ZeRO-2 + transformers Trainer",
                make, program, describe, "max_length=2048", rank_prefix=6)


def zero2_state_exceeds_card():
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace")
    model = M.LLAMA3_8B
    world = 4

    def make():
        return run_on("A100-40", outside=int(1.1 * GiB), device=2, visible=4)

    def program(r, fixed):
        sp = P.sp
        ds = sp + "/deepspeed/runtime/zero"
        user = "/workspace/axolotl/src/axolotl/train.py"
        l = Loop(r, P, model, user, param_dtype=2, grad_dtype=2, opt_bytes=0)
        l.load([(user, 180, "train", "trainer.train(resume_from_checkpoint=resume_from_checkpoint)"),
                (sp + "/deepspeed/runtime/engine.py", 1180, "_configure_distributed_model", "self.module.to(self.device)")])
        init = [(user, 180, "train", "trainer.train(resume_from_checkpoint=resume_from_checkpoint)"),
                (ds + "/stage_1_and_2.py", 375, "__init__", "self.single_partition_of_fp32_groups.append(")]
        if not fixed:  # offload_optimizer: cpu keeps the fp32 partitions and Adam's moments on the host
            with r.at(init):
                r.alloc(4 * model.params // world, "optimizer_state")
            with r.at(init[:1], [(ds + "/stage_1_and_2.py", 640, "initialize_optimizer_states", "self.optimizer.step()"),
                                 (sp + "/deepspeed/ops/adam/fused_adam.py", 169, "step", "state['exp_avg'] = torch.zeros_like(p.data)")]):
                r.tensors([4 * model.params // world] * 2, "optimizer_state")
        with r.at(init[:1], [(ds + "/stage_1_and_2.py", 560, "__init__", "self.averaged_gradients[i] = torch.zeros(")]):
            r.alloc(2 * model.params // world, "gradients")
        grads_are_buckets(l)
        l.ckpt = "reentrant"
        for step in range(3):
            r.step = step
            l.step(2048)

    def describe(r, rf):
        f = r.failure
        return ("Llama-3-8B full fine-tune with axolotl and DeepSpeed ZeRO-2 on 4 A100-40GB. ZeRO-2 keeps every rank's "
                "bf16 weights whole (%s) and partitions the rest over 4: gradients (%s), fp32 master weights (%s) and "
                "Adam's moments (%s), which DeepSpeed creates at initialisation. That state is %s per GPU, more than "
                "the 39.39 GiB card before any batch: initialisation fails creating the moments. No batch size or "
                "checkpointing fixes it; offload_optimizer to the CPU peaks at %s reserved."
                % (g(2 * model.params), g(2 * model.params // world), g(4 * model.params // world),
                   g(8 * model.params // world), g(2 * model.params + 14 * model.params // world), g(rf.a.peak_reserved)))

    return Spec("zero2_llama3_8b_4x_a100_40gb_state_exceeds_card", "capacity", "DeepSpeed ZeRO-2 (axolotl)", make,
                program, describe, "offload_optimizer: cpu", rank_prefix=2)


def gemma2_eager_attention_eval():
    P = F.Paths("/usr/local/lib/python3.11/site-packages", "/workspace")
    model = GEMMA2_9B

    def make():
        return run_on("L40S", outside=int(0.8 * GiB), device=3, visible=4)

    def program(r, fixed):
        sp = P.sp
        lm = sp + "/lm_eval"
        g2 = sp + "/transformers/models/gemma2/modeling_gemma2.py"
        r.phase = "load"
        with r.at([(lm + "/models/huggingface.py", 560, "_create_model", "self._model = self.AUTO_MODEL_CLASS.from_pretrained("),
                   (sp + "/accelerate/big_modeling.py", 420, "dispatch_model", "model.to(device)")]):
            for i in range(model.layers):
                r.alloc(2 * model.layer_params, "parameters")
            r.alloc(2 * model.embed_params, "parameters")
        r.phase = "eval"
        B, T = 5, 8192
        h, heads = model.h, model.heads
        top = [(lm + "/evaluator.py", 460, "evaluate", "resps = getattr(lm, reqtype)(cloned_reqs)"),
               (lm + "/models/huggingface.py", 1010, "loglikelihood_rolling", "string_nll = self._loglikelihood_tokens("),
               (lm + "/models/huggingface.py", 1180, "_loglikelihood_tokens", "self._model_call(batched_inps, **call_kwargs), dim=-1"),
               (lm + "/models/huggingface.py", 880, "_model_call", "return self.model(inps).logits")]
        attn = P.call(g2, 250, "forward", "attn_output, attn_weights = attention_interface(")
        for batch in range(30):
            r.notes["batch"] = batch
            with r.at(top):
                x = r.alloc(B * T * h * 2, "activations")
                for i in range(model.layers):
                    with r.at(attn):
                        qkv = r.tensors([B * T * h * 2, B * T * model.hkv * 2, B * T * model.hkv * 2], "temporaries")
                        if fixed:  # attn_implementation="sdpa": no T x T matrix
                            out = r.alloc(B * T * h * 2, "temporaries")
                        else:
                            with r.at([(g2, 180, "eager_attention_forward", "attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling")]):
                                s = r.alloc(B * heads * T * T * 2, "temporaries")
                            with r.at([(g2, 190, "eager_attention_forward", "attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)")]):
                                p32 = r.alloc(B * heads * T * T * 4, "temporaries")
                                r.free(s)
                                p = r.alloc(B * heads * T * T * 2, "temporaries")
                                r.free(p32)
                            out = r.alloc(B * T * h * 2, "temporaries")
                            r.free(p)
                        for t in qkv:
                            r.free(t)
                    mlp = r.tensors([B * T * model.f * 2 * 2], "temporaries")
                    for t in mlp:
                        r.free(t)
                    r.free(out)
                logits = r.alloc(B * T * model.vocab * 2 // 8, "activations")  # the continuation's positions only
                r.free(logits)
                r.free(x)

    def describe(r, rf):
        f = r.failure
        B, T = 5, 8192
        return ("Not training: lm-evaluation-harness scoring 8192-token documents (loglikelihood_rolling, batch 5) with "
                "Gemma-2-9B in bf16 on each of 4 L40S (accelerate data parallel, one whole model per GPU), loaded with "
                "attn_implementation=\"eager\" as transformers recommends for Gemma-2's logit soft-capping. Eager "
                "attention materialises each layer's 5 x 16 x 8192 x 8192 scores: %s in bf16, then the fp32 softmax, "
                "one %s request (%.0f%% of the card), which fails in the first layer. With attn_implementation=\"sdpa\" "
                "(no T x T tensor) every batch runs (peak reserved %s)."
                % (g(B * 16 * T * T * 2), g(f["requested"]), 100.0 * f["requested"] / r.card.total, g(rf.a.peak_reserved)))

    return Spec("lm_eval_gemma2_9b_l40s_eager_attention_8k_scores", "large_allocation", "lm-evaluation-harness + transformers",
                make, program, describe, "attn_implementation=\"sdpa\"", phase="eval", rank_prefix=3)


ALL = [ddp_contrastive_queue_leak, fsdp2_adam_second_step, lightning_validation_outputs, zero2_one_long_sample,
       zero2_state_exceeds_card, gemma2_eager_attention_eval]
