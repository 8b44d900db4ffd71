"""colocated_engine: RL post-training with the inference engine on the trainer's GPUs."""

from common import run_on
from allocator import GiB, MiB
import frames as F
import models as M
from engine import Engine
from spec import Spec, g, m

AG = 0x562F0B1D47A0


def zero3_update(r, P, model, world, tokens, fwd, layer, gather_frames, ds):
    """One ZeRO-3 micro-batch with reentrant gradient checkpointing: each block's parameters are
    gathered before it runs and released after; the fp32 logits and their loss dominate."""
    h, V = model.h, model.vocab
    r.phase = "forward"
    saved = []
    with r.at(fwd):
        x = r.alloc(tokens * h * 2, "activations")
        for i in range(model.layers):
            with r.at(gather_frames):
                p = r.alloc(2 * model.layer_params, "communication", stream=AG)
            with r.at(P.ckpt_reentrant_forward(), layer):
                saved.append(r.alloc(tokens * h * 2, "activations"))
                tmp = r.tensors([b for _, b in model.saved(tokens)], "temporaries")
                for t in tmp:
                    r.free(t)
            r.free(p)
        logits = r.alloc(tokens * V * 4, "activations")
    r.phase = "backward"
    with r.at(fwd[:1], [(P.sp + "/deepspeed/runtime/engine.py", 2170, "backward", "self.optimizer.backward(loss, retain_graph=retain_graph)")]):
        dl = r.alloc(tokens * V * 4, "temporaries")
        r.free(logits)
        for i in reversed(range(model.layers)):
            with r.at(gather_frames):
                p = r.alloc(2 * model.layer_params, "communication", stream=AG)
            if dl is not None:
                r.free(dl)
                dl = None
            with r.at(P.ckpt_reentrant_recompute(), layer):
                rec = r.tensors([b for _, b in model.saved(tokens)], "activations")
            with r.at([(ds + "/stage3.py", 1270, "reduce_independent_p_g_buckets_and_remove_grads", "self.__reduce_and_partition_ipg_grads()")]):
                gr = r.alloc(2 * model.layer_params, "communication")
            for t in rec:
                r.free(t)
            r.free(saved.pop())
            r.free(gr)
            r.free(p)
        r.free(x)


def trl_ds3_gather_for_generation():
    """TRL's GRPOTrainer with vllm_mode="colocate" moves the policy's weights into the colocated
    vLLM engine before each generation step (_move_model_to_vllm). Under ZeRO-3 with
    ds3_gather_for_generation=True (the default) it does so inside
    unwrap_model_for_generation(..., gather_deepspeed3_params=True), which all-gathers every
    parameter of the model at once; with False it gathers and loads one parameter at a time."""
    P = F.Paths("/usr/local/lib/python3.11/site-packages", "/workspace")
    model = M.QWEN25_14B
    world = 8

    def make():
        return run_on("H100", outside=int(2.2 * GiB), device=4, visible=8)

    def program(r, fixed):
        sp = P.sp
        ds = sp + "/deepspeed/runtime/zero"
        trl = sp + "/trl/trainer/grpo_trainer.py"
        tr = sp + "/transformers/trainer.py"
        top = [("/workspace/grpo.py", 88, "main", "trainer.train()"),
               (tr, 2245, "train", "return inner_training_loop(")]
        init = top + [(tr, 2311, "_inner_training_loop", "model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)"),
                      (ds + "/partition_parameters.py", 1530, "_partition_param", "partitioned_tensor = get_accelerator().FloatTensor(tensor_size)")]
        r.phase = "load"
        r.rl_phase = "load"
        eng = Engine(r, P, model, tp=2, kind="vllm", v1=True)
        with r.at([("/workspace/grpo.py", 80, "main", "trainer = GRPOTrainer(model=args.model, reward_funcs=reward_fn, args=training_args, train_dataset=ds)"),
                   (trl, 640, "__init__", "self.llm = LLM(")]):
            eng.load_weights()
            eng.alloc_kv(int(12.8 * GiB))
        with r.at(init):
            for i in range(model.layers):
                r.alloc(2 * model.layer_params // world, "parameters")
            r.alloc(2 * (model.embed_params + model.head_params) // world, "parameters")
        with r.at(init[:3], [(ds + "/stage3.py", 520, "_create_fp32_partitions", "self.fp32_partitioned_groups_flat.append(self.fp16_partitioned_groups_flat[i].to(self.device).clone().float().detach())")]):
            r.alloc(4 * model.params // world, "optimizer_state")
        with r.at(init[:3], [(ds + "/stage3.py", 700, "initialize_optimizer_states", "self.optimizer.step()"),
                             (sp + "/deepspeed/ops/adam/fused_adam.py", 169, "step", "state['exp_avg'] = torch.zeros_like(p.data)")]):
            r.tensors([4 * model.params // world] * 2, "optimizer_state")
        with r.at(init[:3], [(ds + "/stage3.py", 460, "_setup_for_real_optimizer", "self.grad_partitions_flat_buffer = torch.zeros(")]):
            r.alloc(2 * model.params // world, "gradients")
        step_frames = top + [(tr, 2481, "_inner_training_loop", "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)"),
                             (tr, 3698, "training_step", "inputs = self._prepare_inputs(inputs)"),
                             (trl, 1010, "_prepare_inputs", "generation_batch = self._generate_and_score_completions(generation_batch)")]
        fwd = top + [(tr, 2481, "_inner_training_loop", "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)"),
                     (tr, 3720, "compute_loss", "loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)"),
                     (trl, 1380, "_get_per_token_logps", "logits = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=logits_to_keep + 1).logits")]
        layer = P.call(sp + "/transformers/models/qwen2/modeling_qwen2.py", 259, "forward", "hidden_states, self_attn_weights = self.self_attn(")
        gather = [(ds + "/parameter_offload.py", 444, "_pre_forward_module_hook", "self.pre_sub_module_forward_function(module)"),
                  (ds + "/partitioned_param_coordinator.py", 339, "fetch_sub_module", "self.__all_gather_params(params_to_prefetch, forward)"),
                  (ds + "/partition_parameters.py", 1205, "all_gather_coalesced", "param_buffer = torch.empty(")]
        for it in range(3):
            r.step = it
            if it > 0:
                r.phase = "load"
                r.rl_phase = "weight_sync"
                sync = step_frames + [(trl, 1105, "_generate_and_score_completions", "self._move_model_to_vllm()")]
                if not fixed:
                    with r.at(sync, [(trl, 905, "_move_model_to_vllm", "with unwrap_model_for_generation("),
                                     (sp + "/trl/models/utils.py", 210, "unwrap_model_for_generation", "with deepspeed.zero.GatheredParameters(model.parameters()):"),
                                     (ds + "/partition_parameters.py", 2230, "__enter__", "self.params[0].all_gather(param_list=self.params)"),
                                     (ds + "/partition_parameters.py", 1205, "all_gather_coalesced", "param_buffer = torch.empty(")]):
                        full = [r.alloc(2 * o * k, "parameters", stream=AG) for i in range(model.layers)
                                for _, o, k in model.layer_linears()]
                        full.append(r.alloc(2 * model.embed_params, "parameters", stream=AG))
                        full.append(r.alloc(2 * model.head_params, "parameters", stream=AG))
                    for t in full:
                        r.free(t)
                else:
                    with r.at(sync, [(trl, 880, "_move_model_to_vllm", "with deepspeed.zero.GatheredParameters([param]):"),
                                     (ds + "/partition_parameters.py", 2230, "__enter__", "self.params[0].all_gather(param_list=self.params)"),
                                     (ds + "/partition_parameters.py", 1205, "all_gather_coalesced", "param_buffer = torch.empty(")]):
                        for i in range(model.layers):
                            for _, o, k in model.layer_linears():
                                r.free(r.alloc(2 * o * k, "parameters", stream=AG))
            r.phase = "forward"
            r.rl_phase = "rollout"
            with r.at(step_frames, [(trl, 1130, "_generate_and_score_completions", "all_outputs = self.llm.generate(all_prompts_text, sampling_params=sampling_params, use_tqdm=False)")]):
                eng.generate(4096, 256)
            r.rl_phase = "update"
            zero3_update(r, P, model, world, 4 * 1536, fwd, layer, gather, ds)
            r.phase = "optimizer"

    def describe(r, rf):
        f = r.failure
        return ("GRPO with TRL on Qwen2.5-14B over 8 H100s: DeepSpeed ZeRO-3 (bf16 partitions, fp32 master and Adam "
                "moments, %s of sharded state per GPU) and vllm_mode=\"colocate\" with "
                "vllm_tensor_parallel_size=2 and vllm_gpu_memory_utilization=0.35 and no sleep mode, so every GPU keeps "
                "its engine's bf16 weight shard and KV cache (%s). Iteration 0 generates with the loaded weights and "
                "updates; iteration 1 first moves the policy's weights into vLLM, and with ds3_gather_for_generation "
                "left True TRL all-gathers the whole model into full bf16 tensors (%s) before loading them: the weight "
                "sync fails after %s. With ds3_gather_for_generation=False (one parameter gathered and loaded at a "
                "time) the iterations peak at %s reserved."
                % (g(16 * model.params // world), g(f["live_by_category"].get("kv_cache", 0) + 2 * model.params // 2),
                   g(2 * model.params), g(f["live_by_category"].get("parameters", 0) - 2 * model.params // world
                                          - 2 * model.params // 2), g(rf.a.peak_reserved)))

    return Spec("trl_grpo_qwen25_14b_zero3_colocate_weight_sync_gathers_whole_model", "colocated_engine", "TRL + DeepSpeed ZeRO-3 + vLLM",
                make, program, describe, "ds3_gather_for_generation=False", checkpointing=True, rank_prefix=4,
                rl_phase="weight_sync")


def verl_v0_cache_reinit_adam_resident():
    """verl with the vLLM 0.6 (V0) rollout and free_cache_engine=True: the rollout's sharding manager
    re-creates vLLM's KV cache on entering each rollout (init_cache_engine) and frees it on leaving.
    The cache's size was fixed at engine start-up from gpu_memory_utilization, when the FSDP actor's
    AdamW moments did not exist yet (torch.optim creates them at the first step)."""
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace/verl")
    model = M.LLAMA3_8B
    world = 8

    def make():
        return run_on("A100-80", outside=int(2.0 * GiB), device=3, visible=8)

    def program(r, fixed):
        sp = P.sp
        verl = "/workspace/verl/verl"
        fsdp_w = verl + "/workers/fsdp_workers.py"
        top = [(verl + "/trainer/main_ppo.py", 170, "run", "trainer.fit()"),
               (verl + "/trainer/ppo/ray_trainer.py", 980, "fit", "gen_batch_output = self.actor_rollout_wg.generate_sequences(gen_batch)"),
               (fsdp_w, 560, "generate_sequences", "with self.rollout_sharding_manager:")]
        r.phase = "load"
        with r.at([(fsdp_w, 380, "init_model", "self.actor_module_fsdp, self.actor_optimizer, self.actor_lr_scheduler, self.actor_model_config = self._build_model_optimizer("),
                   (P.t + "/distributed/fsdp/fully_sharded_data_parallel.py", 483, "__init__", "_init_param_handle_from_module("),
                   (P.t + "/distributed/fsdp/_flat_param.py", 780, "flatten_tensors", "return torch.cat(flat_tensors, dim=0)")]):
            actor_params = [r.alloc(4 * model.layer_params // world, "parameters") for _ in range(model.layers)]
            actor_params.append(r.alloc(4 * (model.embed_params + model.head_params) // world, "parameters"))
        eng = Engine(r, P, model, tp=2, kind="vllm", v1=False)
        with r.at([(fsdp_w, 420, "init_model", "self.rollout, self.rollout_sharding_manager = self._build_rollout()"),
                   (verl + "/workers/rollout/vllm_rollout/vllm_rollout.py", 90, "__init__", "self.inference_engine = LLM(")]):
            eng.load_weights()
        # vLLM 0.6 sizes the cache at start-up: gpu_memory_utilization of the card minus what the
        # process holds after the profile run (the actor's sharded parameters, the engine's weights
        # and the profile's peak activations)
        kv_bytes = int(0.91 * r.card.total) - r.outside - r.a.reserved - 1 * GiB
        r.notes["kv"] = kv_bytes
        kv_frames = [(verl + "/workers/sharding_manager/fsdp_vllm.py", 82, "__enter__", "self.inference_engine.init_cache_engine()"),
                     (sp + "/vllm/worker/worker.py", 312, "_init_cache_engine", "self.cache_engine = ["),
                     (sp + "/vllm/worker/cache_engine.py", 64, "__init__", "self.gpu_cache = self._allocate_kv_cache("),
                     (sp + "/vllm/worker/cache_engine.py", 83, "_allocate_kv_cache", "torch.zeros(kv_cache_shape,")]
        eng.kv_frames = kv_frames
        upd = [(verl + "/trainer/main_ppo.py", 170, "run", "trainer.fit()"),
               (verl + "/trainer/ppo/ray_trainer.py", 1060, "fit", "actor_output = self.actor_rollout_wg.update_actor(batch)"),
               (fsdp_w, 520, "update_actor", "metrics = self.actor.update_policy(data=data)"),
               (verl + "/workers/actor/dp_actor.py", 300, "update_policy", "entropy, log_prob = self._forward_micro_batch(micro_batch=data, temperature=temperature)")]
        layer = P.call(sp + "/transformers/models/llama/modeling_llama.py", 330, "forward", "hidden_states, self_attn_weights = self.self_attn(")
        adam = []
        step_fr = [(verl + "/workers/actor/dp_actor.py", 330, "update_policy", "self.actor_optimizer.step()")] + P.optimizer_step(fsdp_w, 0)[1:]
        for it in range(4):
            r.step = it
            r.phase = "forward"
            r.rl_phase = "rollout"
            if fixed and adam:
                for t in adam:  # optimizer_offload=True: the moments go to the CPU for the rollout
                    r.free(t)
                adam = []
            with r.at(top):
                eng.alloc_kv(kv_bytes)
                with r.at([(verl + "/workers/rollout/vllm_rollout/vllm_rollout.py", 210, "generate_sequences", "output = self.inference_engine.generate(")]):
                    for _ in range(4):
                        eng.generate(8192, 512)
                eng.free_kv()
            r.rl_phase = "update"
            with r.at(upd):
                for mb in range(2):
                    tokens = 16384
                    r.phase = "forward"
                    saved = []
                    for i in range(model.layers):
                        with r.at([(P.t + "/distributed/fsdp/_runtime_utils.py", 420, "_pre_forward_unshard", "_unshard(state, handle, state._unshard_stream, state._pre_unshard_stream)"),
                                   (P.t + "/distributed/fsdp/_flat_param.py", 1390, "_alloc_padded_unsharded_flat_param", "_alloc_storage(unsharded_flat_param, flat_param._padded_unsharded_size)")]):
                            p = r.alloc(2 * model.layer_params, "communication")
                        with r.at(P.ckpt_nonreentrant_forward(), layer):
                            saved.append(r.alloc(tokens * model.h * 2, "activations"))
                            for t in r.tensors([b for _, b in model.saved(tokens)], "temporaries"):
                                r.free(t)
                        r.free(p)
                    lg = r.alloc(tokens * model.vocab * 4, "activations")
                    r.phase = "backward"
                    dl = r.alloc(tokens * model.vocab * 4, "temporaries")
                    r.free(lg)
                    for i in reversed(range(model.layers)):
                        with r.at([(P.t + "/distributed/fsdp/_runtime_utils.py", 700, "_pre_backward_hook", "_unshard(state, handle, state._unshard_stream, state._pre_unshard_stream)")]):
                            p = r.alloc(2 * model.layer_params, "communication")
                        if dl is not None:
                            r.free(dl)
                            dl = None
                        with r.at(P.ckpt_nonreentrant_recompute(), layer):
                            rec = r.tensors([b for _, b in model.saved(tokens)], "activations")
                        gr = r.alloc(4 * model.layer_params, "communication")
                        for t in rec:
                            r.free(t)
                        r.free(saved.pop())
                        r.free(gr)
                        r.free(p)
                r.phase = "optimizer"
                with r.at(step_fr):
                    if not adam:
                        adam.extend(r.tensors([4 * model.params // world] * 2, "optimizer_state"))

    def describe(r, rf):
        f = r.failure
        return ("PPO with verl on Llama-3-8B over 8 A100-80GB: FSDP1 actor (fp32 sharded parameters, bf16 compute, "
                "non-reentrant checkpointing, param_offload=False, optimizer_offload=False) and a vLLM 0.6 rollout "
                "(V0, tensor_model_parallel_size=2, gpu_memory_utilization=0.91, free_cache_engine=True). The KV cache "
                "(%s) is created on entering each rollout and freed on leaving, sized at start-up when the actor's "
                "AdamW moments did not exist. Iteration 0 rolls out and updates; its optimizer step creates the moments "
                "(%s), which stay on the GPU, and the rollout of iteration %d fails re-creating the KV cache. With "
                "optimizer_offload=True (the moments leave the GPU during rollout) the iterations peak at %s reserved."
                % (g(r.notes["kv"]), g(8 * model.params // world), f["step"],
                   g(rf.a.peak_reserved)))

    return Spec("verl_llama3_8b_vllm_v0_cache_reinit_adam_moments_resident", "colocated_engine", "verl (FSDP1 + vLLM V0)",
                make, program, describe, "optimizer_offload=True", checkpointing=True, rank_prefix=3, rl_phase="rollout")


ALL = [trl_ds3_gather_for_generation, verl_v0_cache_reinit_adam_resident]
