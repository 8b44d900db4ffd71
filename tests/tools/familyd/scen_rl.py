"""colocated_engine: RL post-training whose trainer state and colocated inference engine (weights,
KV cache) do not both fit in the phase that failed; and two inference servers without a trainer,
labelled by their own physics (not colocated_engine: nothing else shares the card)."""

from allocator import GiB, MiB
from run import Run
import frames as F
import models as M
from loop import Loop
from fsdp2 import Fsdp2
from engine import Engine
from spec import Spec, g, m


def verl_wake_up():
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace/verl")
    model = M.QWEN25_7B
    world = 4
    util = 0.85

    def make():
        r = Run("A100-80", outside=int(1.2 * GiB), device=2)
        r.visible_devices = 4
        return r

    def program(r, fixed):
        vw = "/workspace/verl/verl"
        top = [(vw + "/single_controller/ray/base.py", 439, "func", "return getattr(self.worker_dict[key], name)(*args, **kwargs)"),
               (vw + "/single_controller/base/decorator.py", 404, "inner", "return func(*args, **kwargs)")]
        actor_file = vw + "/workers/fsdp_workers.py"
        l = Loop(r, P, model, vw + "/workers/actor/dp_actor.py", ckpt="non_reentrant", param_dtype=4, grad_dtype=4,
                 shard=world, opt_bytes=8,
                 fwd_frames=top + [(actor_file, 560, "update_actor", "metrics = self.actor.update_policy(data=data)"),
                                   (vw + "/workers/actor/dp_actor.py", 300, "update_policy", "entropy, log_prob = self._forward_micro_batch(micro_batch=data, temperature=temperature)")])
        Fsdp2(l, world)
        r.phase = "load"
        l.load(top + [(actor_file, 400, "init_model", "self.actor_module_fsdp, self.actor_optimizer, self.actor_lr_scheduler, self.actor_model_config = self._build_model_optimizer(")])
        with r.at(top, [(actor_file, 440, "init_model", "self.ref_module_fsdp = self._build_model_optimizer(")]):
            ref = [r.alloc(2 * model.params // world, "parameters")]
        eng = Engine(r, P, model, tp=2, v1=False)
        rollout = top + [(actor_file, 300, "_build_rollout", "rollout = vLLMRollout(actor_module=self.actor_module_fsdp,")]
        eng.load_weights(rollout)
        # vLLM 0.6 sizes the cache once, at start: util x total minus what is in use then (no Adam state yet)
        kv = int(util * r.card.total) - r.outside - r.a.reserved - int(1.5 * GiB)
        eng.alloc_kv(kv, rollout)
        eng.free_kv()  # free_cache_engine=True: released until the first rollout
        r.notes["kv"] = kv
        gen = top + [(actor_file, 610, "generate_sequences", "output = self.rollout.generate_sequences(prompts=prompts)"),
                     (vw + "/workers/rollout/vllm_rollout/vllm_rollout.py", 190, "generate_sequences", "self.inference_engine.init_cache_engine()")]
        for it in range(3):
            r.step = it
            r.rl_phase = "wake_up"
            r.phase = "load"
            if fixed:
                # optimizer_offload / param_offload: Adam state and gradients go to the CPU for the rollout
                if l.state:
                    for t in l.state:
                        r.free(t)
                    l.state = None
                l.zero_grad()
            eng.alloc_kv(kv, gen)
            r.rl_phase = "rollout"
            r.phase = "forward"
            eng.generate(8192, 512, top)
            eng.free_kv()
            r.rl_phase = "update"
            for micro in range(2):
                l.step(4096, optimizer=False)
            l.optimizer_step()

    def describe(r, rf):
        f = r.failure
        tr = sum(v for k, v in f["live_by_category"].items() if k in ("gradients", "optimizer_state"))
        return ("GRPO on Qwen2.5-7B with verl (FSDP2 actor over 4 A100-80GB, a reference model, vLLM 0.6 rollout with "
                "tensor_model_parallel_size=2, gpu_memory_utilization=0.85, free_cache_engine=True, param_offload and "
                "optimizer_offload off). vLLM sized its KV cache once at start-up, %s, from what was in use then: the "
                "actor had no gradients or Adam state yet. Every rollout re-allocates the cache "
                "(init_cache_engine) and frees it afterwards. Iteration 0 fits; after the first update the actor "
                "keeps %s of gradients and AdamW state on the GPU, and the wake-up of iteration %d fails "
                "re-allocating the cache. With optimizer_offload=True and gradients released before the rollout "
                "every iteration fits (peak reserved %s)." % (g(r.notes["kv"]), g(tr), f["step"], g(rf.a.peak_reserved)))

    return Spec("verl_qwen25_7b_vllm_wake_up_optimizer_state_resident", "colocated_engine", "verl + vLLM 0.6",
                make, program, describe, "optimizer_offload=True (trainer state off the GPU during rollout)",
                rl_phase="wake_up", checkpointing=True, rank_prefix=None)


def trl_grpo_update():
    P = F.Paths("/opt/conda/lib/python3.11/site-packages", "/home/user/grpo")
    model = M.QWEN25_3B
    world = 8

    def make():
        r = Run("H100", outside=int(1.3 * GiB), device=0)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        sp = P.sp
        tr = sp + "/trl/trainer/grpo_trainer.py"
        l = Loop(r, P, model, tr, ckpt="reentrant", param_dtype=2, grad_dtype=2, shard=world, opt_bytes=8, master_bytes=4,
                 fwd_frames=[(sp + "/transformers/trainer.py", 3745, "training_step", "loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)"),
                             (tr, 1495, "compute_loss", "per_token_logps, entropies = self._get_per_token_logps_and_entropies(")])
        l.load([(sp + "/transformers/trainer.py", 2392, "_inner_training_loop", "model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)"),
                (sp + "/deepspeed/runtime/zero/partition_parameters.py", 1530, "_partition_param", "partitioned_tensor = get_accelerator().FloatTensor(tensor_size)")])
        eng = Engine(r, P, model, tp=1, v1=True)
        init = [(tr, 640, "__init__", "self.llm = LLM(")]
        eng.load_weights(init)
        kv = int(0.3 * r.card.total) - eng.m.params * 2 - int(1.0 * GiB)
        eng.alloc_kv(kv, init)
        r.notes["kv"] = kv
        gen = [(tr, 1180, "_generate_and_score_completions", "all_outputs = self.llm.generate(")]
        for it in range(2):
            r.step = it
            if fixed and not eng.kv:
                eng.load_weights(init)
                eng.alloc_kv(kv, init)
            r.rl_phase = "rollout"
            r.phase = "forward"
            eng.generate(8192, 256, gen)
            if fixed:
                # enable_sleep_mode: llm.sleep(level=1) before the update frees weights and KV cache
                eng.free_kv()
                eng.offload_weights()
            r.rl_phase = "update"
            l.step(12 * 2560)

    def describe(r, rf):
        f = r.failure
        eng = f["live_by_category"].get("kv_cache", 0)
        return ("GRPO with TRL on Qwen2.5-3B: DeepSpeed ZeRO-3 over 8 H100s, vllm_mode=\"colocate\" with "
                "vllm_gpu_memory_utilization=0.3 and no sleep mode, so every GPU keeps its vLLM engine's bf16 weights "
                "(%s) and KV cache (%s) through the update. The update runs 12 completions of 2560 tokens per device "
                "with gradient checkpointing; its fp32 logits and their gradients (151936-token vocabulary) do not fit "
                "beside the engine and the update (%s) of iteration %d fails. Putting the engine to sleep for the "
                "update (llm.sleep() / vllm_enable_sleep_mode) the same iterations peak at %s reserved."
                % (g(2 * M.QWEN25_3B.params), g(eng), f["phase"], f["step"], g(rf.a.peak_reserved)))

    return Spec("trl_grpo_qwen25_3b_h100_colocated_vllm_no_sleep_update", "colocated_engine", "TRL GRPO + vLLM",
                make, program, describe, "engine put to sleep during the update", rl_phase="update",
                checkpointing=True, rank_prefix=0)


def verl_sleep_mode_rollout():
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace/verl")
    model = M.QWEN25_7B
    world = 4
    util = 0.815

    def make():
        r = Run("H100", outside=int(1.2 * GiB), device=1)
        r.visible_devices = 4
        return r

    def program(r, fixed):
        vw = "/workspace/verl/verl"
        top = [(vw + "/single_controller/ray/base.py", 663, "func", "return getattr(self.worker_dict[key], name)(*args, **kwargs)"),
               (vw + "/single_controller/base/decorator.py", 540, "inner", "return func(*args, **kwargs)")]
        fw = vw + "/workers/fsdp_workers.py"
        l = Loop(r, P, model, vw + "/workers/actor/dp_actor.py", ckpt="non_reentrant", param_dtype=4, grad_dtype=4,
                 shard=world, opt_bytes=8,
                 fwd_frames=top + [(fw, 640, "update_actor", "metrics = self.actor.update_policy(data=data)"),
                                   (vw + "/workers/actor/dp_actor.py", 420, "update_policy", "entropy, log_prob = self._forward_micro_batch(")])
        Fsdp2(l, world)
        r.phase = "load"
        l.load(top + [(fw, 560, "init_model", "self.actor_module_fsdp, self.actor_optimizer, self.actor_lr_scheduler, self.actor_model_config = self._build_model_optimizer(")])
        eng = Engine(r, P, model, tp=1, v1=True, pools=True)
        rollout = top + [(fw, 606, "init_model", "self.rollout, self.rollout_sharding_manager = self._build_rollout("),
                         (vw + "/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", 130, "__init__", "self.inference_engine = LLM(")]
        eng.load_weights(rollout)
        kv = int(util * r.card.total) - 2 * model.params - int(2 * GiB)
        r.notes["kv"] = eng.alloc_kv(kv, rollout)
        eng.sleep()
        gen = top + [(fw, 760, "generate_sequences", "output = self.rollout.generate_sequences(prompts=prompts)"),
                     (vw + "/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", 290, "generate_sequences", "outputs = self.inference_engine.generate(")]
        shard = [(vw + "/workers/sharding_manager/fsdp_vllm.py", 180, "__enter__", "self.inference_engine.wake_up()")]
        for it in range(3):
            r.step = it
            r.rl_phase = "wake_up"
            r.phase = "load"
            if fixed:
                # param_offload=True: the actor's parameters and gradients leave the GPU for the rollout
                for t in l.weights:
                    r.free(t)
                l.zero_grad()
            r.a.empty_cache()
            eng.wake_up()
            r.rl_phase = "rollout"
            r.phase = "forward"
            with r.at(gen):
                eng.generate(16384, 1024)
            eng.sleep()
            if fixed:
                l.weights = []
                l.load(top + [(fw, 640, "update_actor", "load_fsdp_model_to_gpu(self.actor_module_fsdp)")])
            r.rl_phase = "update"
            l.step(4096, optimizer=False)
            l.step(4096, optimizer=False)
            l.optimizer_step()
            # optimizer_offload=True: the Adam state goes back to the CPU after each update
            for t in l.state or []:
                r.free(t)
            l.state = None

    def describe(r, rf):
        f = r.failure
        return ("GRPO on Qwen2.5-7B with verl: FSDP2 actor over 4 H100s with optimizer_offload=True but param_offload=False, "
                "and a vLLM (V1) rollout with enable_sleep_mode and gpu_memory_utilization=0.815: its weights and KV "
                "cache (%s) live in MemPools (0, 1) and (0, 2) whose physical memory is released while the engine "
                "sleeps (the segments stay in PyTorch's view). The cache was sized at start-up, before the actor had "
                "gradients; from iteration 1 on the actor's fp32 sharded parameters and gradients (%s) stay on the GPU "
                "through the rollout, and the rollout's prefill of iteration %d fails beside the awake engine. With "
                "param_offload=True every iteration fits (peak reserved %s)."
                % (g(2 * M.QWEN25_7B.params + r.notes["kv"]),
                   g(sum(v for k, v in f["live_by_category"].items() if k in ("parameters", "gradients")) - 2 * M.QWEN25_7B.params),
                   f["step"], g(rf.a.peak_reserved)))

    return Spec("verl_qwen25_7b_vllm_sleep_mode_pools_rollout_params_resident", "colocated_engine", "verl + vLLM sleep mode",
                make, program, describe, "param_offload=True", rl_phase="rollout", checkpointing=True, rank_prefix=None)


def no_grad_forward(r, model, tokens, frames, shard_gather=None, dtype_logits=4):
    """A reference or reward pass under torch.no_grad(): each layer's tensors die with the layer;
    the logits (and their fp32 log-softmax) are what is large."""
    with r.at(frames):
        x = r.alloc(tokens * model.h * 2, "activations")
        for i in range(model.layers):
            g_ = shard_gather(i) if shard_gather else []
            tmp = r.tensors([tokens * model.f * 2 * 2, tokens * model.h * 2], "temporaries")
            for t in tmp + g_:
                r.free(t)
        logits = r.alloc(tokens * model.vocab * 2, "activations")
        lp = r.alloc(tokens * model.vocab * dtype_logits, "activations")
        r.free(x)
        r.free(logits)
        r.free(lp)


def slime_weight_sync():
    P = F.Paths("/usr/local/lib/python3.12/dist-packages", "/root/slime")
    model = M.QWEN25_7B
    tp, dp = 2, 4

    def make():
        r = Run("H100", outside=int(2.0 * GiB), device=1)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        sw = "/root/slime/slime"
        meg = "/root/Megatron-LM/megatron"
        top = [(sw + "/ray/actor_group.py", 88, "async_train", "return [actor.train.remote(rollout_id, rollout_data_ref) for actor in self._actor_handlers]"),
               (sw + "/backends/megatron_utils/actor.py", 240, "train", "train(")]
        l = Loop(r, P, model, sw + "/backends/megatron_utils/model.py", ckpt="reentrant", param_dtype=2, grad_dtype=4,
                 shard=tp, opt_bytes=0,
                 fwd_frames=top + [(sw + "/backends/megatron_utils/model.py", 410, "train_one_step", "losses_reduced = forward_backward_func("),
                                   (meg + "/core/pipeline_parallel/schedules.py", 275, "forward_step", "output_tensor, loss_func = forward_step_func(data_iterator, model)")],
                 layer_frames=P.call(meg + "/core/transformer/transformer_layer.py", 445, "forward", "attention_output_with_bias = self.self_attention("))
        init = [(sw + "/backends/megatron_utils/actor.py", 61, "init", "(self.model, self.optimizer, self.opt_param_scheduler, loaded_rollout_id) = initialize_model_and_optimizer("),
                (meg + "/core/distributed/distributed_data_parallel.py", 246, "__init__", "self._allocate_buffers_for_parameters("),
                (meg + "/core/distributed/param_and_grad_buffer.py", 592, "__init__", "self.param_data = torch.zeros(")]
        l.load(init)
        with r.at(init[:2], [(meg + "/core/distributed/param_and_grad_buffer.py", 608, "__init__", "self.grad_data = torch.zeros(")]):
            grad_buffer = r.alloc(4 * model.params // tp, "gradients")
        with r.at(init[:1], [(meg + "/core/optimizer/distrib_optimizer.py", 376, "_build_model_and_main_param_groups", "shard_main_param = shard_model_param.clone().float()")]):
            main = r.alloc(4 * model.params // tp // dp, "optimizer_state")
        adam = []
        l.hooks["make_grad"] = lambda i: []
        l.grads = {"head": [], "embed": []}

        def after_step():
            if not adam:
                with r.at([(P.sp + "/transformer_engine/pytorch/optimizers/fused_adam.py", 400, "step", "state[\"exp_avg\"] = torch.zeros_like(")]):
                    adam.extend(r.tensors([4 * model.params // tp // dp] * 2, "optimizer_state"))
        l.hooks["after_step"] = after_step
        l.zero_grad = lambda: None
        eng = Engine(r, P, model, tp=tp, kind="sglang", pools=True)
        einit = [(sw + "/ray/rollout.py", 60, "__init__", "self.rollout_engines = create_rollout_engines(args, pg)"),
                 (P.sp + "/sglang/srt/entrypoints/engine.py", 120, "__init__", "tokenizer_manager, scheduler_info = _launch_subprocesses(")]
        eng.load_weights(einit)
        kv = int(0.45 * r.card.total) - 2 * model.params // tp
        eng.alloc_kv(kv, einit)
        r.notes["kv"] = kv
        gather = [(sw + "/ray/actor_group.py", 95, "async_update_weights", "return [actor.update_weights.remote() for actor in self._actor_handlers]"),
                  (sw + "/backends/megatron_utils/update_weight_utils.py", 180, "update_weights_from_tensor", "named_tensors = all_gather_param(name, param)"),
                  (sw + "/backends/megatron_utils/update_weight_utils.py", 96, "all_gather_param", "param_partitions = [torch.empty_like(param.data) for _ in range(mpu.get_tensor_model_parallel_world_size())]")]
        for it in range(2):
            r.step = it
            r.rl_phase = "rollout"
            r.phase = "forward"
            eng.generate(16384, 256)
            r.rl_phase = "update"
            for micro in range(2):
                l.step(4096, optimizer=False)
            l.optimizer_step()
            r.rl_phase = "weight_sync"
            r.phase = "load"
            bucket = []
            with r.at(gather):
                for i in range(model.layers):
                    for _, o, k in model.layer_linears():
                        bucket.append(r.alloc(2 * o * k, "parameters"))
                    # --update-weight-buffer-size: with a bucket of one layer the copies go out and die;
                    # the run as written keeps the whole gathered model until one call sends it
                    if fixed:
                        for t in bucket:
                            r.free(t)
                        bucket = []
                bucket.append(r.alloc(2 * (model.embed_params + model.head_params), "parameters"))
            for t in bucket:
                r.free(t)

    def describe(r, rf):
        f = r.failure
        return ("slime-style RL on Qwen2.5-7B: a Megatron actor (TP=2, DP=4, distributed optimizer, fp32 main_grad buffer) "
                "and an SGLang rollout engine (TP=2, mem_fraction_static=0.45, weights and KV cache in memory-saver "
                "pools of their own) colocated on 8 H100s. After each update the actor all-gathers its "
                "tensor-parallel shards into full bf16 tensors for update_weights_from_tensor, and this run gathers "
                "the whole model into one second copy before sending it (an --update-weight-buffer-size far above "
                "the model). With the actor's parameters, gradient buffer and optimizer state (%s) and the "
                "engine's weights and KV cache (%s) resident, the weight sync of iteration %d fails after %s of "
                "gathered copies. Syncing layer by layer the iterations peak at %s reserved."
                % (g(sum(v for k, v in f["live_by_category"].items() if k in ("gradients", "optimizer_state")) + 2 * M.QWEN25_7B.params // 2),
                   g(2 * M.QWEN25_7B.params // 2 + r.notes["kv"]), f["step"],
                   g(f["live_by_category"].get("parameters", 0) - 2 * 2 * M.QWEN25_7B.params // 2), g(rf.a.peak_reserved)))

    return Spec("slime_qwen25_7b_megatron_sglang_weight_sync_full_copy", "colocated_engine", "slime (Megatron + SGLang)",
                make, program, describe, "weights synced in per-layer buckets", rl_phase="weight_sync",
                checkpointing=True, phase="load")


def openrlhf_reference():
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/openrlhf")
    model = M.LLAMA3_8B
    world = 8

    def make():
        r = Run("H100", outside=int(1.4 * GiB), device=7)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        o = P.sp + "/openrlhf"
        r.phase = "load"
        with r.at([(o + "/trainer/ray/ppo_actor.py", 380, "init_model_from_pretrained", "actor = Actor("),
                   (P.sp + "/deepspeed/runtime/zero/partition_parameters.py", 1530, "_partition_param", "partitioned_tensor = get_accelerator().FloatTensor(tensor_size)")]):
            actor = [r.alloc(2 * model.params // world, "parameters"),
                     r.alloc(4 * model.params // world, "optimizer_state"),  # fp32 master partition
                     r.alloc(8 * model.params // world, "optimizer_state")]  # Adam moments
        with r.at([(o + "/trainer/ray/launcher.py", 120, "init_model_from_pretrained", "model = Actor(pretrain, use_flash_attention_2=strategy.args.flash_attn"),
                   (P.sp + "/deepspeed/runtime/zero/partition_parameters.py", 1530, "_partition_param", "partitioned_tensor = get_accelerator().FloatTensor(tensor_size)")]):
            ref = r.alloc(2 * model.params // world, "parameters")
            rm = r.alloc(2 * model.params // world, "parameters")
        eng = Engine(r, P, model, tp=1, v1=True)
        einit = [(o + "/trainer/ray/vllm_engine.py", 80, "__init__", "self.llm = vllm.LLM(*args, **kwargs)")]
        eng.load_weights(einit)
        kv = int(0.5 * r.card.total) - 2 * model.params - int(1.0 * GiB)
        eng.alloc_kv(kv, einit)
        r.notes["kv"] = kv
        exp = [(o + "/trainer/ppo_trainer.py", 240, "fit", "experiences = self.experience_maker.make_experience_list(rand_prompts, **self.generate_kwargs)"),
               (o + "/trainer/ppo_utils/experience_maker.py", 420, "make_experience", "base_action_log_probs_ref = self.initial_model.forward.remote(")]
        ref_fwd = [(o + "/trainer/ray/launcher.py", 140, "forward", "log_probs = self.model(sequences.to(device), num_actions, attention_mask.to(device))"),
                   (o + "/models/actor.py", 231, "forward", "log_probs = log_probs_from_logits(logits[:, :-1, :], sequences[:, 1:], temperature=self.temperature)")]
        for it in range(2):
            r.step = it
            r.rl_phase = "rollout"
            r.phase = "forward"
            eng.generate(16384, 256, [(o + "/trainer/ppo_utils/experience_maker.py", 160, "generate_samples", "all_outputs = sum(ray.get(all_output_refs), [])")])
            if fixed:
                eng.free_kv()
                eng.offload_weights()
            r.rl_phase = "reference"
            with r.at(exp):
                no_grad_forward(r, model, 8 * 8192, ref_fwd)
            if fixed:
                eng.load_weights(einit)
                eng.alloc_kv(kv, einit)

    def describe(r, rf):
        f = r.failure
        return ("PPO with OpenRLHF on Llama-3-8B with --colocate_all_models on 8 H100s: DeepSpeed ZeRO-3 actor (bf16 "
                "partition, fp32 master and Adam moments), reference and reward models, and a vLLM engine per GPU "
                "(vllm_gpu_memory_utilization=0.5, no --vllm_enable_sleep) whose weights and KV cache (%s) stay "
                "resident after generation. The reference model's log-probabilities for 8 sequences of 8192 tokens "
                "need the bf16 logits and their fp32 log-softmax over the 128256-token vocabulary; the reference "
                "pass of iteration %d fails with %s of them live. Putting the engine to sleep after generation "
                "(--vllm_enable_sleep) the iterations peak at %s reserved."
                % (g(2 * M.LLAMA3_8B.params + r.notes["kv"]), f["step"],
                   g(f["live_by_category"].get("activations", 0)), g(rf.a.peak_reserved)))

    return Spec("openrlhf_llama3_8b_colocate_all_reference_pass_engine_awake", "colocated_engine", "OpenRLHF + vLLM",
                make, program, describe, "engine asleep after generation", rl_phase="reference", rank_prefix=7)


def hf_static_cache_server():
    P = F.Paths("/usr/local/lib/python3.11/site-packages", "/srv/app")
    model = M.LLAMA3_8B

    def make():
        return Run("L40S", outside=int(0.7 * GiB), device=0)

    def program(r, fixed):
        sp = P.sp
        app = "/srv/app/server.py"
        r.phase = "load"
        with r.at([(app, 41, "<module>", "model = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=torch.bfloat16, device_map=\"cuda\")"),
                   (sp + "/transformers/modeling_utils.py", 4900, "_load_pretrained_model", "caching_allocator_warmup(model_to_load, expanded_device_map, factor=2 if hf_quantizer is None else 4)")]):
            for i in range(model.layers):
                for _, o, k in model.layer_linears():
                    r.alloc(2 * o * k, "parameters")
            r.alloc(2 * model.embed_params, "parameters")
            r.alloc(2 * model.head_params, "parameters")
        r.phase = "eval"
        batch = 16 if fixed else 32
        with r.at([(app, 52, "<module>", "cache = StaticCache(config=model.config, max_batch_size=MAX_BATCH, max_cache_len=8192, device=\"cuda\", dtype=torch.bfloat16)"),
                   (sp + "/transformers/cache_utils.py", 1230, "__init__", "new_layer_key_cache = torch.zeros(cache_shape, dtype=self._dtype, device=layer_device)")]):
            for i in range(model.layers):
                r.alloc(batch * 8192 * model.hkv * 2, "kv_cache")
                r.alloc(batch * 8192 * model.hkv * 2, "kv_cache")

    def describe(r, rf):
        f = r.failure
        return ("Not training and nothing else on the card: a Llama-3-8B chat service with transformers' StaticCache "
                "on one L40S (44.39 GiB). The bf16 weights take %s; the cache is created up front for "
                "max_batch_size=32 x max_cache_len=8192, 128 KiB per token, 32.00 GiB, one 512 MiB key or value "
                "tensor per layer. Creating it fails after %s: the state the server is configured to hold (weights "
                "plus the whole cache) is larger than the card, no single request is large, and nothing grows. "
                "max_batch_size=16 (or a paged cache that grows with the traffic) fits (peak reserved %s)."
                % (g(f["live_by_category"].get("parameters", 0)), g(f["live_by_category"].get("kv_cache", 0)),
                   g(rf.a.peak_reserved)))

    return Spec("hf_llama3_8b_l40s_static_cache_server_too_large", "capacity", "transformers StaticCache", make,
                program, describe, "max_batch_size=16", also_acceptable=["working_set"], phase="eval")


def vllm_prompt_logprobs():
    P = F.Paths("/usr/local/lib/python3.12/dist-packages", "/app")
    model = M.QWEN25_7B

    def make():
        return Run("H100", outside=int(0.9 * GiB), device=0)

    def program(r, fixed):
        v = P.sp + "/vllm"
        eng = Engine(r, P, model, tp=1, v1=False)
        top = [(v + "/engine/multiprocessing/engine.py", 248, "run_engine_loop", "request_outputs = self.engine_step()")]
        r.phase = "load"
        eng.load_weights(top)
        kv = int(0.7 * r.card.total) - r.a.reserved - r.outside
        eng.alloc_kv(kv, top)
        r.phase = "eval"
        prompt = 40960
        with r.at(top, [(v + "/engine/llm_engine.py", 1390, "step", "outputs = self.model_executor.execute_model("),
                        (v + "/worker/model_runner.py", 1775, "execute_model", "logits = self.model.compute_logits(hidden_or_intermediate_states,"),
                        (v + "/model_executor/layers/logits_processor.py", 75, "forward", "logits = self._get_logits(hidden_states, lm_head, embedding_bias)")]):
            tmp = r.tensors([8192 * model.f * 2 * 2, 8192 * model.h * 2], "temporaries")
            for t in tmp:
                r.free(t)
            rows = 1 if fixed else prompt
            lg = r.alloc(rows * model.vocab * 2, "temporaries")
            lf = r.alloc(rows * model.vocab * 4, "temporaries",
                         extra=[(v + "/model_executor/layers/sampler.py", 290, "forward", "logprobs = torch.log_softmax(logits, dim=-1, dtype=torch.float)")])
            r.free(lg)
            r.free(lf)

    def describe(r, rf):
        f = r.failure
        return ("Not training: a vLLM (0.6, V0 engine) server for Qwen2.5-7B on one H100 with gpu_memory_utilization=0.7. "
                "A client asks for prompt_logprobs on a 40960-token document: vLLM computes logits for every prompt "
                "token instead of only the last, %s in bf16 and then one fp32 log_softmax of %s (%.0f%% of the card) "
                "in a single request, beside the preallocated KV cache (%s) and the weights. It fails on that one "
                "tensor; without prompt_logprobs (or with a shorter prompt / chunked prefill of the logprobs) the "
                "request runs." % (g(40960 * M.QWEN25_7B.vocab * 2), g(f["requested"]), 100.0 * f["requested"] / r.card.total,
                                   g(f["live_by_category"].get("kv_cache", 0))))

    return Spec("vllm_qwen25_7b_h100_prompt_logprobs_40k_tokens", "large_allocation", "vLLM server", make, program,
                describe, "prompt_logprobs=None", phase="eval")


ALL = [verl_wake_up, verl_sleep_mode_rollout, trl_grpo_update, slime_weight_sync, openrlhf_reference, hf_static_cache_server, vllm_prompt_logprobs]
