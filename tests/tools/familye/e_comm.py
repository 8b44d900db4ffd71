"""communication_buffers: collectives' buffers kept alive beyond need because of a prefetch setting."""

from common import run_on
from allocator import GiB, MiB
import frames as F
import models as M
from loop import Loop, ENGINE_ACC
from fsdp2 import Fsdp2
from spec import Spec, g, m

AG = 0x562F0B1D47A0
RS = 0x562F0B1D4960


def zero3_prefetch_whole_model():
    """DeepSpeed ZeRO-3's PartitionedParameterCoordinator records the order in which submodules
    run during the first step and from the second step on prefetches the parameters of the
    submodules ahead, up to stage3_prefetch_bucket_size elements, keeping at most
    stage3_max_live_parameters gathered. A config with both at 1e10 (above the model's 7.6e9
    parameters) gathers the whole model at the first submodule of step 1's forward and again at
    the start of its backward; each gathered parameter is released after its submodule ran."""
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace")
    model = M.LLAMA2_13B
    world = 8
    tokens = 8192

    def make():
        return run_on("A100-40", outside=int(1.5 * GiB), device=0, visible=8)

    def program(r, fixed):
        sp = P.sp
        ds = sp + "/deepspeed/runtime/zero"
        user = "/workspace/LLaMA-Factory/src/llamafactory/train/sft/workflow.py"
        tr = sp + "/transformers/trainer.py"
        h, V = model.h, model.vocab
        init = [(tr, 2311, "_inner_training_loop", "model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)"),
                (sp + "/deepspeed/__init__.py", 193, "initialize", "engine = DeepSpeedEngine(args=args,"),
                (ds + "/partition_parameters.py", 1530, "_partition_param", "partitioned_tensor = get_accelerator().FloatTensor(tensor_size)")]
        r.phase = "load"
        with r.at(init):
            for i in range(model.layers):
                r.alloc(2 * model.layer_params // world, "parameters")
            r.alloc(2 * (model.embed_params + model.head_params) // world, "parameters")
        with r.at(init[:2], [(ds + "/stage3.py", 520, "_create_fp32_partitions", "self.fp32_partitioned_groups_flat.append(self.fp16_partitioned_groups_flat[i].to(self.device).clone().float().detach())")]):
            r.alloc(4 * model.params // world, "optimizer_state")
        with r.at(init[:2], [(ds + "/stage3.py", 460, "_setup_for_real_optimizer", "self.grad_partitions_flat_buffer = get_accelerator().pin_memory(torch.zeros(")]):
            r.alloc(4 * model.params // world, "gradients")
        fetch = [(ds + "/parameter_offload.py", 444, "_pre_forward_module_hook", "self.pre_sub_module_forward_function(module)"),
                 (ds + "/partitioned_param_coordinator.py", 339, "fetch_sub_module", "self.__all_gather_params(params_to_prefetch, forward)"),
                 (ds + "/partition_parameters.py", 1205, "all_gather_coalesced", "param_buffer = torch.empty(")]
        bfetch = [(ds + "/parameter_offload.py", 512, "_pre_backward_module_hook", "self.pre_sub_module_backward_function(module)"),
                  (ds + "/partitioned_param_coordinator.py", 339, "fetch_sub_module", "self.__all_gather_params(params_to_prefetch, forward)"),
                  (ds + "/partition_parameters.py", 1205, "all_gather_coalesced", "param_buffer = torch.empty(")]
        fwd = [(tr, 2481, "_inner_training_loop", "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)"),
               (tr, 3698, "compute_loss", "outputs = model(**inputs)"),
               (sp + "/deepspeed/runtime/engine.py", 2027, "forward", "loss = self.module(*inputs, **kwargs)")]
        layer = P.call(sp + "/transformers/models/llama/modeling_llama.py", 330, "forward", "hidden_states, self_attn_weights = self.self_attn(")
        bwd = [(tr, 2481, "_inner_training_loop", "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)"),
               (tr, 3740, "training_step", "self.accelerator.backward(loss, **kwargs)"),
               (sp + "/deepspeed/runtime/engine.py", 2170, "backward", "self.optimizer.backward(loss, retain_graph=retain_graph)")]
        ck = P.ckpt_reentrant_forward()
        adam = []
        for step in range(3):
            r.step = step
            # blocks whose parameters fit in stage3_prefetch_bucket_size elements
            ahead = min(model.layers, int(1e10 // model.layer_params)) if (step >= 1 and not fixed) else 2
            r.phase = "data"
            with r.at([(tr, 2470, "_inner_training_loop", "batch_samples, num_items_in_batch = self.get_batch_samples(epoch_iterator, num_batches)")]):
                ids = r.tensors([tokens * 8] * 3, "inputs")
            r.phase = "forward"
            live = {}
            saved = []
            with r.at(fwd):
                x = r.alloc(tokens * h * 2, "activations", extra=P.call(P.t + "/nn/modules/sparse.py", 190, "forward", "return F.embedding("))
                for i in range(model.layers):
                    with r.at(fetch):
                        for j in range(i, min(model.layers, i + ahead)):
                            if j not in live:
                                live[j] = r.alloc(2 * model.layer_params, "communication", stream=AG)
                    with r.at(ck, layer):
                        saved.append(r.alloc(tokens * h * 2, "activations"))
                        tmp = r.tensors([b for _, b in model.saved(tokens)], "temporaries")
                        for t in tmp:
                            r.free(t)
                    r.free(live.pop(i))
                with r.at(P.call(sp + "/transformers/models/llama/modeling_llama.py", 1190, "forward", "logits = self.lm_head(hidden_states[:, slice_indices, :])")):
                    logits = r.alloc(tokens * V * 2, "activations")
                with r.at(P.call(sp + "/transformers/models/llama/modeling_llama.py", 1197, "forward", "loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size, **kwargs)")):
                    lf = r.alloc(tokens * V * 4, "activations")
            r.phase = "backward"
            with r.at(bwd):
                dl = r.alloc(tokens * V * 4, "temporaries")
                r.free(lf)
                r.free(logits)
                for i in reversed(range(model.layers)):
                    with r.at(bfetch):
                        for j in range(i, max(-1, i - ahead), -1):
                            if j not in live:
                                live[j] = r.alloc(2 * model.layer_params, "communication", stream=AG)
                    if dl is not None:
                        r.free(dl)
                        dl = None
                    with r.at(P.ckpt_reentrant_recompute(), layer):
                        rec = r.tensors([b for _, b in model.saved(tokens)], "activations")
                    dx = r.alloc(tokens * h * 2, "temporaries")
                    with r.at([(ds + "/stage3.py", 1270, "reduce_independent_p_g_buckets_and_remove_grads", "self.__reduce_and_partition_ipg_grads()")]):
                        gr = r.alloc(2 * model.layer_params, "communication", cpp=ENGINE_ACC)
                    for t in rec:
                        r.free(t)
                    r.free(saved.pop())
                    r.free(gr)
                    r.free(dx)
                    r.free(live.pop(i))
                r.free(x)
            for t in ids:
                r.free(t)
            r.phase = "optimizer"
            with r.at([(tr, 2530, "_inner_training_loop", "self.optimizer.step()"),
                       (ds + "/stage3.py", 2100, "_optimizer_step", "self.optimizer.step()"),
                       (sp + "/deepspeed/ops/adam/fused_adam.py", 169, "step", "state['exp_avg'] = torch.zeros_like(p.data)")]):
                if not adam:
                    adam.extend(r.tensors([4 * model.params // world] * 2, "optimizer_state"))

    def describe(r, rf):
        f = r.failure
        return ("Llama-2-13B full fine-tune with LLaMA-Factory and DeepSpeed ZeRO-3 on 8 A100-40GB (bf16, reentrant "
                "gradient checkpointing, packed 8192-token sequences) with a ds_config carrying "
                "\"stage3_prefetch_bucket_size\": 1e10 and \"stage3_max_live_parameters\": 1e10. Step 0 records the "
                "module order and gathers one block at a time; from step 1 the coordinator prefetches the "
                "parameters of every block ahead that fits in 1e10 elements (%s per block, %s for the model), so the "
                "forward holds most of the unsharded model beside the sharded state. Step %d fails in its %s with %s of gathered "
                "parameters live. With the \"auto\" values (about one block ahead) the run peaks at %s reserved and "
                "completes." % (m(2 * model.layer_params), g(2 * model.layer_params * model.layers), f["step"],
                                f["phase"], g(f["live_by_category"].get("communication", 0)), g(rf.a.peak_reserved)))

    return Spec("zero3_llama2_13b_a100_40gb_prefetch_bucket_1e10", "communication_buffers",
                "DeepSpeed ZeRO-3 (LLaMA-Factory)", make, program, describe,
                "stage3_prefetch_bucket_size / stage3_max_live_parameters \"auto\"", checkpointing=True, rank_prefix=0)


def fsdp2_explicit_prefetch_many():
    """FSDP2's explicit prefetching (torchtitan's example): for every block
    block.set_modules_to_forward_prefetch(next k blocks) and set_modules_to_backward_prefetch(previous
    k blocks). Each prefetch all-gathers a block's parameters into unsharded bf16 tensors that live
    until that block has run; with k = 8 eight blocks are unsharded at any time instead of two."""
    P = F.Paths("/usr/local/lib/python3.11/site-packages", "/workspace/torchtitan")
    model = M.LLAMA2_7B
    world = 8

    def make():
        return run_on("A100-40", outside=int(1.3 * GiB), device=7, visible=8)

    def program(r, fixed):
        user = "/workspace/torchtitan/torchtitan/train.py"
        k = 1 if fixed else 8
        l = Loop(r, P, model, user, ckpt=None, param_dtype=4, grad_dtype=4, shard=world, opt_bytes=8,
                 layer_frames=P.call("/workspace/torchtitan/torchtitan/models/llama3/model/model.py", 313, "forward",
                                     "h = x + self.attention(self.attention_norm(x), freqs_cis)"))
        fs = Fsdp2(l, world)
        base_pre_fwd, base_pre_bwd = fs.pre_forward, fs.pre_backward

        def pre_forward(i):
            base_pre_fwd(i)
            for j in range(i + 1, min(model.layers, i + 1 + k)):
                fs._unshard(j, fs.pre_fwd)

        def pre_backward(i):
            base_pre_bwd(i)
            for j in range(i - 1, max(-1, i - 1 - k), -1):
                fs._unshard(j, fs.pre_bwd)

        def post_forward(i):
            for t in fs.unsharded.pop(i):
                r.free(t)

        l.hooks.update({"pre_forward": pre_forward, "pre_backward": pre_backward, "post_forward": post_forward})
        l.load([(user, 250, "__init__", "model = self.train_spec.parallelize_fn(model, parallel_dims, job_config)"),
                ("/workspace/torchtitan/torchtitan/models/llama3/infra/parallelize.py", 310, "apply_fsdp", "fully_shard(transformer_block, **fsdp_config, reshard_after_forward=reshard_after_forward)")])
        for step in range(3):
            r.step = step
            l.step(TOK_E[0])
            l.zero_grad()

    def describe(r, rf):
        f = r.failure
        return ("Llama-2-7B-shaped pre-training with torchtitan-style FSDP2 on 8 A100-40GB (fp32 sharded parameters, "
                "bf16 compute, no activation checkpointing, %d tokens per rank). The script adds "
                "explicit prefetching with 8 blocks ahead in forward and 8 behind in backward "
                "(set_modules_to_forward_prefetch / set_modules_to_backward_prefetch), so up to nine blocks' "
                "all-gathered bf16 parameters (%s each) are live at once. Step %d fails in its %s with %s of "
                "unsharded parameters and copy-in buffers live. With one block of prefetch the run peaks at %s "
                "reserved and completes." % (TOK_E[0], m(2 * model.layer_params), f["step"], f["phase"],
                                             g(f["live_by_category"].get("communication", 0)), g(rf.a.peak_reserved)))

    return Spec("fsdp2_llama2_7b_a100_40gb_explicit_prefetch_8_blocks", "communication_buffers", "FSDP2 (torchtitan)",
                make, program, describe, "prefetch 1 block ahead", rank_prefix=7)


ALL = [zero3_prefetch_whole_model, fsdp2_explicit_prefetch_many]

TOK_E = [5888]
