"""Hugging Face transformers `model.generate()` and diffusers pipelines run from a user's script, and
the two controls: training runs whose consoles look like inference (an RL trainer with a vLLM engine
beside it, a fine-tune that prints sample generations) and whose cause is a training cause."""

from common import GiB, MiB, LLAMA31_8B, QWEN25_7B, Clock, allocation_size, format_size, gib, torch_oom
from text import Log, traceback

CONDA = "/opt/conda/lib/python3.11/site-packages"
VENV = "/home/dev/.venv/lib/python3.10/site-packages"
DOCKER = "/usr/local/lib/python3.10/dist-packages"


def module_call(root, a=1553, b=1562):
    return [(f"{root}/torch/nn/modules/module.py", a, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
            (f"{root}/torch/nn/modules/module.py", b, "_call_impl", "return forward_call(*args, **kwargs)")]


def hf_generate_llama31_8b_eager_attention_32k():
    """transformers 4.44.2: Llama-3.1-8B-Instruct loaded with attn_implementation="eager" summarises a
    32768-token filing with generate(). The eager attention materialises the 32 heads' 32768 x 32768
    score matrix of the prompt in one tensor."""
    m = LLAMA31_8B
    total = gib(79.15)
    prompt = 32768
    weights = m.weight_bytes() + 32 * MiB
    scores = m.heads * prompt * prompt * 2
    qkv_live = prompt * m.hidden * 2 * 4 + 2 * prompt * m.kv_heads * m.head_dim * 2  # q, k, v repeated, residual; cache
    allocated = weights + qkv_live
    reserved = allocated + 18 * MiB
    msg = torch_oom(scores, total, allocated, reserved, gib(0.45), torch_version=(2, 4))
    log = Log()
    log.add("(py311) ana@gpu-box-07:~/filings$ python summarize_filings.py --doc 10-K_2023_full.txt",
            "Loading checkpoint shards: 100%|██████████| 4/4 [00:05<00:00,  1.31s/it]",
            f"prompt tokens: {prompt}",
            "Setting `pad_token_id` to `eos_token_id`:128001 for open-end generation.")
    log.extend(traceback([
        ("/home/ana/filings/summarize_filings.py", 44, "<module>",
         "out = model.generate(**inputs, max_new_tokens=1024, do_sample=False)"),
        (f"{CONDA}/torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
        (f"{CONDA}/transformers/generation/utils.py", 2024, "generate", "result = self._sample("),
        (f"{CONDA}/transformers/generation/utils.py", 2982, "_sample", "outputs = self(**model_inputs, return_dict=True)"),
    ] + module_call(CONDA) + [
        (f"{CONDA}/transformers/models/llama/modeling_llama.py", 1189, "forward", "outputs = self.model("),
    ] + module_call(CONDA) + [
        (f"{CONDA}/transformers/models/llama/modeling_llama.py", 1001, "forward", "layer_outputs = decoder_layer("),
    ] + module_call(CONDA) + [
        (f"{CONDA}/transformers/models/llama/modeling_llama.py", 734, "forward",
         "hidden_states, self_attn_weights, present_key_value = self.self_attn("),
    ] + module_call(CONDA) + [
        (f"{CONDA}/transformers/models/llama/modeling_llama.py", 339, "forward",
         "attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)"),
    ], msg))
    return "hf_generate_llama31_8b_eager_attention_32k_prompt.log", log.text(), dict(
        engine="hf_generate", version="transformers 4.44.2", stage="prefill", expected="large_allocation",
        first_fix_knob='attn_implementation="sdpa"',
        physics=(f"Eager attention of the first layer builds softmax inputs for 32 heads x {prompt} x {prompt} in bf16: "
                 f"{format_size(scores)}, {scores / total * 100:.0f}% of the {total / GiB:.2f} GiB A100 beside "
                 f"{weights / GiB:.2f} GiB of weights. SDPA (flash or memory-efficient) never materialises the matrix."),
        noise=["shell prompt", "generate warning"])


def hf_generate_llama31_8b_beam_search_batch16():
    """transformers 4.45.2: 16 prompts padded to 3072 tokens, num_beams=4. Beam search expands the
    batch to 64 sequences before the prefill, so one forward carries 196608 tokens; the 4-D padding
    mask, the growing DynamicCache and the MLP of that many tokens run out at layer 5."""
    m = LLAMA31_8B
    total = gib(39.38)
    batch, beams, length = 16, 4, 3072
    seqs = batch * beams
    tokens = seqs * length
    weights = m.weight_bytes() + 32 * MiB
    mask = seqs * length * length * 2
    hidden = tokens * m.hidden * 2
    inter = tokens * m.intermediate * 2
    kv_layer = tokens * m.kv_bytes_per_token() // m.layers
    ctx = gib(0.45)
    layer = 0
    while weights + mask + (layer + 1) * kv_layer + 2 * hidden + 2 * inter + allocation_size(inter) + ctx + 8 * MiB <= total:
        layer += 1
    allocated = weights + mask + (layer + 1) * kv_layer + 2 * hidden + 2 * inter
    reserved = allocated + 8 * MiB
    msg = torch_oom(inter, total, allocated, reserved, ctx, torch_version=(2, 5))
    log = Log()
    log.add(">>> outs = model.generate(**batch_inputs, num_beams=4, max_new_tokens=512, early_stopping=True)",
            "Starting from v4.46, the `logits` model output will have the same type as the model (except at train time, "
            "where it will always be FP32)")
    log.extend(traceback([
        ("<stdin>", 1, "<module>", None),
        (f"{VENV}/torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
        (f"{VENV}/transformers/generation/utils.py", 2307, "generate", "result = self._beam_search("),
        (f"{VENV}/transformers/generation/utils.py", 3485, "_beam_search", "outputs = self(**model_inputs, return_dict=True)"),
    ] + module_call(VENV, 1736, 1747) + [
        (f"{VENV}/transformers/models/llama/modeling_llama.py", 1190, "forward", "outputs = self.model("),
    ] + module_call(VENV, 1736, 1747) + [
        (f"{VENV}/transformers/models/llama/modeling_llama.py", 945, "forward", "layer_outputs = decoder_layer("),
    ] + module_call(VENV, 1736, 1747) + [
        (f"{VENV}/transformers/models/llama/modeling_llama.py", 692, "forward", "hidden_states = self.mlp(hidden_states)"),
    ] + module_call(VENV, 1736, 1747) + [
        (f"{VENV}/transformers/models/llama/modeling_llama.py", 258, "forward",
         "down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))"),
    ], msg))
    log.lines = [l for l in log.lines if l != "    None"]
    return "hf_generate_llama31_8b_beam_search_batch16.log", log.text(), dict(
        engine="hf_generate", version="transformers 4.45.2", stage="prefill", expected="engine_batch",
        first_fix_knob="num_beams",
        physics=(f"{batch} prompts x {beams} beams = {seqs} sequences of {length} tokens prefilled at once ({tokens} tokens): "
                 f"MLP intermediates {format_size(inter)} each, hidden states {format_size(hidden)}, a {format_size(mask)} "
                 f"4-D padding mask and {format_size(kv_layer)} of cache per layer; layer {layer} runs out on a "
                 f"{total / GiB:.2f} GiB A100. Greedy (num_beams=1) or 4 prompts per call divides all of it by 4."),
        noise=["interactive session", "transformers warning"])


def diffusers_module_to(root, a=1174, b=780, c=805, d=1160):
    return [(f"{root}/torch/nn/modules/module.py", a, "to", "return self._apply(convert)")] + \
        [(f"{root}/torch/nn/modules/module.py", b, "_apply", "module._apply(fn)")] * 3 + [
        (f"{root}/torch/nn/modules/module.py", c, "_apply", "param_applied = fn(param)"),
        (f"{root}/torch/nn/modules/module.py", d, "convert", "return t.to("),
    ]


def diffusers_sdxl_to_cuda_beside_comfyui():
    """diffusers 0.30.3: a script moves SDXL (fp16) onto an RTX 4090 on which a ComfyUI server holds
    18.3 GiB; the UNet's move runs out."""
    total = gib(23.64)
    other = gib(18.31)
    ctx = gib(0.29)
    request = 10240 * 1280 * 2  # a GEGLU projection of the UNet
    allocated = total - other - ctx - 3 * MiB - 11 * MiB
    reserved = allocated + 3 * MiB
    msg = torch_oom(request, total, allocated, reserved, ctx, others=[(48211, other)], torch_version=(2, 4))
    log = Log()
    log.add("root@render-02:/workspace/app# python render.py --prompt \"isometric harbour town at dusk\"",
            "Loading pipeline components...: 100%|██████████| 7/7 [00:01<00:00,  4.09it/s]")
    log.extend(traceback([
        ("/workspace/app/render.py", 18, "<module>", 'pipe.to("cuda")'),
        (f"{DOCKER}/diffusers/pipelines/pipeline_utils.py", 454, "to", "module.to(device, dtype)"),
    ] + diffusers_module_to(DOCKER), msg))
    log.add("root@render-02:/workspace/app# nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
            "pid, process_name, used_gpu_memory [MiB]",
            f"48211, /opt/ComfyUI/.venv/bin/python, {other // MiB} MiB")
    return "diffusers_sdxl_pipe_to_cuda_beside_comfyui.log", log.text(), dict(
        engine="diffusers", version="diffusers 0.30.3", stage="load_weights", expected="other_process",
        first_fix_knob="enable_sequential_cpu_offload()",
        physics=(f"SDXL in fp16 needs 6.5 GiB (UNet 2.57e9 x 2 B, two text encoders, VAE), but process 48211 (ComfyUI) holds "
                 f"{other / GiB:.2f} GiB of the {total / GiB:.2f} GiB card, leaving 5 GiB. Stopping it fixes the run; from "
                 "this script, sequential CPU offload keeps only the running layer on the GPU."),
        noise=["shell prompt", "nvidia-smi output"])


def diffusers_flux_dev_to_cuda_4090():
    """diffusers 0.31.0: FLUX.1-dev in bf16 moved with pipe.to("cuda") onto a 24 GB RTX 4090. The
    T5-XXL encoder (8.9 GiB) goes first; the 12B transformer (22.2 GiB) cannot follow."""
    total = gib(23.64)
    ctx = gib(0.27)
    vae, clip, t5, transformer = 83_819_683 * 2, 123_060_480 * 2, 4_762_310_656 * 2, 11_901_408_320 * 2
    request = 3072 * 12288 * 2  # proj_mlp of a single-stream block
    allocated = total - ctx - 4 * MiB - 61 * MiB
    moved = allocated - vae - clip - t5
    assert 0 < moved < transformer
    reserved = allocated + 4 * MiB
    msg = torch_oom(request, total, allocated, reserved, ctx, torch_version=(2, 5))
    log = Log()
    log.add("Loading checkpoint shards: 100%|██████████| 2/2 [00:00<00:00,  5.49it/s]",
            "Loading checkpoint shards: 100%|██████████| 3/3 [00:01<00:00,  2.03it/s]",
            "Loading pipeline components...: 100%|██████████| 7/7 [00:03<00:00,  2.20it/s]",
            "You set `add_prefix_space`. The tokenizer needs to be converted from the slow tokenizers")
    log.extend(traceback([
        ("/home/kim/flux/gen.py", 9, "<module>", 'pipe.to("cuda")'),
        (f"{VENV}/diffusers/pipelines/pipeline_utils.py", 461, "to", "module.to(device, dtype)"),
        (f"{VENV}/diffusers/models/modeling_utils.py", 1077, "to", "return super().to(*args, **kwargs)"),
    ] + diffusers_module_to(VENV, 1340, 900, 927, 1326), msg))
    total_bytes = vae + clip + t5 + transformer
    return "diffusers_flux_dev_bf16_pipe_to_cuda_4090.log", log.text(), dict(
        engine="diffusers", version="diffusers 0.31.0", stage="load_weights", expected="capacity",
        first_fix_knob="enable_model_cpu_offload()",
        physics=(f"FLUX.1-dev in bf16 is {total_bytes / GiB:.1f} GiB (transformer 11.9e9 x 2 B = {transformer / GiB:.2f} GiB, "
                 f"T5-XXL {t5 / GiB:.2f} GiB, CLIP, VAE) against {total / GiB:.2f} GiB; the move stops with "
                 f"{moved / GiB:.2f} GiB of the transformer on the card. Model CPU offload keeps one component at a time "
                 "(the transformer alone fits)."),
        noise=["progress bars", "tokenizer warning"])


def diffusers_sdxl_vae_decode_4096():
    """diffusers 0.30.3: SDXL asked for a 4096 x 4096 image in one pass on an RTX 4090. Denoising
    completes; the VAE (upcast to fp32) decodes the 512 x 512 latent and its nearest-neighbour
    upsampling to 4096 x 4096 with 256 channels is a single 16 GiB tensor."""
    total = gib(23.64)
    ctx = gib(0.42)
    unet, te, te2, vae32 = 2_567_463_684 * 2, 123_060_480 * 2, 694_659_840 * 2, 83_653_863 * 4
    request = 256 * 4096 * 4096 * 4
    x = 256 * 2048 * 2048 * 4
    allocated = unet + te + te2 + vae32 + x + 512 * 512 * 4 * 4 + 2 * MiB
    reserved = allocated + gib(0.61)
    msg = torch_oom(request, total, allocated, reserved, ctx, torch_version=(2, 4))
    log = Log()
    log.add("Loading pipeline components...: 100%|██████████| 7/7 [00:01<00:00,  5.12it/s]",
            "100%|██████████| 30/30 [03:41<00:00,  7.38s/it]")
    log.extend(traceback([
        ("/home/lea/posters/make_poster.py", 27, "<module>",
         "image = pipe(prompt, height=4096, width=4096, num_inference_steps=30).images[0]"),
        (f"{VENV}/torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
        (f"{VENV}/diffusers/pipelines/stable_diffusion_xl/pipeline_stable_diffusion_xl.py", 1276, "__call__",
         "image = self.vae.decode(latents, return_dict=False)[0]"),
        (f"{VENV}/diffusers/utils/accelerate_utils.py", 46, "wrapper", "return method(self, *args, **kwargs)"),
        (f"{VENV}/diffusers/models/autoencoders/autoencoder_kl.py", 321, "decode", "decoded = self._decode(z).sample"),
        (f"{VENV}/diffusers/models/autoencoders/autoencoder_kl.py", 292, "_decode", "dec = self.decoder(z)"),
    ] + module_call(VENV) + [
        (f"{VENV}/diffusers/models/autoencoders/vae.py", 337, "forward", "sample = up_block(sample, latent_embeds)"),
    ] + module_call(VENV) + [
        (f"{VENV}/diffusers/models/unets/unet_2d_blocks.py", 2753, "forward", "hidden_states = upsampler(hidden_states)"),
    ] + module_call(VENV) + [
        (f"{VENV}/diffusers/models/upsampling.py", 180, "forward",
         'hidden_states = F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")'),
        (f"{VENV}/torch/nn/functional.py", 4565, "interpolate",
         "return torch._C._nn.upsample_nearest2d(input, output_size, scale_factors)"),
    ], msg))
    return "diffusers_sdxl_vae_decode_4096px.log", log.text(), dict(
        engine="diffusers", version="diffusers 0.30.3", stage="vae_decode", expected="large_allocation",
        first_fix_knob="enable_vae_tiling()",
        physics=(f"The fp32 VAE upsamples a 256-channel 2048 x 2048 map to 4096 x 4096: one {format_size(request)} tensor, "
                 f"{request / total * 100:.0f}% of the {total / GiB:.2f} GiB card, with the UNet and text encoders still "
                 "resident. VAE tiling decodes 512 px tiles (about 64x smaller buffers)."),
        noise=["progress bars"])


def control_trl_grpo_qwen25_7b_backward():
    """Control (training): TRL 0.15 GRPO on Qwen2.5-7B over 8 H100s, a vLLM 0.7.3 engine on the last
    GPU generating completions, DeepSpeed ZeRO-3 on the other seven. The console is full of vLLM's
    start-up lines; the failure is the policy's first backward: the fp32 log-softmax over 8 x 1024
    tokens of a 152064 vocabulary without gradient checkpointing."""
    m = QWEN25_7B
    total = gib(79.19)
    tokens = 8 * 1024  # 8 completions of up to 1024 tokens (prompt and completion) per device
    logits32 = tokens * m.vocab * 4
    logits16 = tokens * m.vocab * 2
    sharded = m.params * 16 // 7  # bf16 params and grads, fp32 master and Adam moments, over 7 ranks
    per_token_layer = 8 * m.hidden * 2 + 4 * m.intermediate * 2  # saved inputs of norms, attention and MLP
    acts = tokens * per_token_layer * m.layers
    gathered = gib(1.2)  # ZeRO-3's gathered parameters in flight
    # The backward has made the fp32 gradient of the log-probabilities and asks for the logits' one.
    allocated = sharded + acts + logits16 + 2 * logits32 + gathered
    reserved = allocated + gib(0.35)
    ctx = gib(0.83)
    msg = torch_oom(logits32, total, allocated, reserved, ctx, torch_version=(2, 5), device=3)
    c = Clock(2025, 3, 12, 10, 0, 41)
    log = Log()
    v = lambda lvl, where, s: f"{lvl} {c.vllm_v0()} {where}] {s}"  # noqa: E731
    log.add(v("INFO", "__init__.py:207", "Automatically detected platform cuda."),
            v("INFO", "config.py:549", "This model supports multiple tasks: {'generate', 'reward', 'classify', 'score', 'embed'}. Defaulting to 'generate'."),
            v("INFO", "llm_engine.py:234", f"Initializing a V0 LLM engine (v0.7.3) with config: model='{m.hf_id}', "
              "device_config=cuda:7, max_seq_len=1024, enable_prefix_caching=True, seed=0"))
    c.tick(9)
    log.add(v("INFO", "model_runner.py:1115", f"Loading model weights took {m.weight_bytes() / GiB:.4f} GB"),
            v("INFO", "worker.py:267", "Memory profiling takes 1.93 seconds"),
            v("INFO", "worker.py:267", "the current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB"),
            v("INFO", "worker.py:267", f"model weights take {m.weight_bytes() / GiB:.2f}GiB; non_torch_memory takes 0.21GiB; "
              "PyTorch activation peak memory takes 1.43GiB; the rest of the memory reserved for KV Cache is 55.44GiB."),
            v("INFO", "executor_base.py:111", "# cuda blocks: 64877, # CPU blocks: 4681"),
            v("INFO", "executor_base.py:116", "Maximum concurrency for 1024 tokens per request: 1013.70x"))
    c.tick(21)
    log.add(v("INFO", "model_runner.py:1562", "Graph capturing finished in 21 secs, took 0.49 GiB"),
            v("INFO", "llm_engine.py:436", "init engine (profile, create kv cache, warmup model) took 24.18 seconds"))
    log.add("  0%|          | 0/1869 [00:00<?, ?it/s]",
            "Processed prompts: 100%|██████████| 448/448 [00:31<00:00, 14.27it/s, est. speed input: 2843.66 toks/s, output: 12018.20 toks/s]")
    tail = traceback([
        ("/home/rl/grpo/train_grpo.py", 112, "<module>", "trainer.train()"),
        (f"{CONDA}/transformers/trainer.py", 2241, "train", "return inner_training_loop("),
        (f"{CONDA}/transformers/trainer.py", 2548, "_inner_training_loop",
         "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)"),
        (f"{CONDA}/transformers/trainer.py", 3740, "training_step", "self.accelerator.backward(loss, **kwargs)"),
        (f"{CONDA}/accelerate/accelerator.py", 2238, "backward", "self.deepspeed_engine_wrapped.backward(loss, **kwargs)"),
        (f"{CONDA}/accelerate/utils/deepspeed.py", 261, "backward", "self.engine.backward(loss, **kwargs)"),
        (f"{CONDA}/deepspeed/utils/nvtx.py", 18, "wrapped_fn", "ret_val = func(*args, **kwargs)"),
        (f"{CONDA}/deepspeed/runtime/engine.py", 2020, "backward", "self.optimizer.backward(loss, retain_graph=retain_graph)"),
        (f"{CONDA}/deepspeed/runtime/zero/stage3.py", 2250, "backward", "self.loss_scaler.backward(loss.float(), retain_graph=retain_graph)"),
        (f"{CONDA}/deepspeed/runtime/fp16/loss_scaler.py", 63, "backward", "scaled_loss.backward(retain_graph=retain_graph)"),
        (f"{CONDA}/torch/_tensor.py", 581, "backward", "torch.autograd.backward("),
        (f"{CONDA}/torch/autograd/__init__.py", 347, "backward", "_engine_run_backward("),
        (f"{CONDA}/torch/autograd/graph.py", 825, "_engine_run_backward", "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass"),
    ], msg)
    log.extend(tail, prefix="[rank3]: ")
    log.add("  0%|          | 0/1869 [00:52<?, ?it/s]")
    return "control_trl_grpo_qwen25_7b_vllm_first_backward.log", log.text(), dict(
        engine="vllm", version="trl 0.15.2 + vllm 0.7.3", workload="training", stage="train_backward",
        expected="first_backward", control=True, first_fix_knob="gradient_checkpointing=True",
        physics=(f"Not an engine failure: the vLLM engine on cuda:7 started and generated. Rank 3's first backward holds "
                 f"ZeRO-3 state ({sharded / GiB:.1f} GiB), 28 layers of activations for 8 x 1024 tokens without checkpointing "
                 f"({acts / GiB:.1f} GiB) and the fp32 log-softmax logits ({format_size(logits32)}), and the gradient of the "
                 "logits does not fit. Gradient checkpointing (or a smaller per-device batch) is the fix; no engine knob helps."),
        noise=["vLLM start-up lines", "rank prefixes", "tqdm bars"])


def control_sft_qwen25_1_5b_sample_generations_optimizer_step():
    """Control (training): a full fine-tune of Qwen2.5-1.5B in fp32 with the HF Trainer on an RTX 4090;
    a callback prints sample generations before training (generate() warnings in the console). The
    first optimizer.step() creates AdamW's two moments and the second one does not fit."""
    params = 1_543_714_304
    total = gib(23.64)
    weights = grads = params * 4
    misc = gib(0.33)  # the batch, loss and the allocator's small blocks
    ctx = gib(0.45)
    request = 8960 * 1536 * 4  # exp_avg_sq of layer 27's mlp.down_proj, among the last parameters
    # AdamW creates exp_avg and exp_avg_sq parameter by parameter; the ones created before the failure:
    states = total - ctx - 20 * MiB - 30 * MiB - weights - grads - misc
    assert 0 < states < 2 * params * 4
    allocated = weights + grads + states + misc
    reserved = allocated + 20 * MiB
    msg = torch_oom(request, total, allocated, reserved, ctx, torch_version=(2, 5))
    log = Log()
    log.add("***** sample generations (step 0) *****",
            "A decoder-only architecture is being used, but right-padding was detected! For correct generation results, "
            "please set `padding_side='left'` when initializing the tokenizer.",
            "Setting `pad_token_id` to `eos_token_id`:151643 for open-end generation.",
            "[0] Q: Summarise the refund policy. A: The refund policy allows customers to return items within 30 days...",
            "[1] Q: Translate 'invoice overdue' to German. A: Rechnung überfällig",
            "  0%|          | 0/2350 [00:00<?, ?it/s]")
    log.extend(traceback([
        ("/srv/ft/sft.py", 88, "<module>", "trainer.train()"),
        (f"{VENV}/transformers/trainer.py", 2123, "train", "return inner_training_loop("),
        (f"{VENV}/transformers/trainer.py", 2534, "_inner_training_loop", "self.optimizer.step()"),
        (f"{VENV}/accelerate/optimizer.py", 171, "step", "self.optimizer.step(closure)"),
        (f"{VENV}/torch/optim/lr_scheduler.py", 137, "wrapper", "return func.__get__(opt, opt.__class__)(*args, **kwargs)"),
        (f"{VENV}/torch/optim/optimizer.py", 487, "wrapper", "out = func(*args, **kwargs)"),
        (f"{VENV}/torch/optim/optimizer.py", 91, "_use_grad", "ret = func(self, *args, **kwargs)"),
        (f"{VENV}/torch/optim/adamw.py", 209, "step", "has_complex = self._init_group("),
        (f"{VENV}/torch/optim/adamw.py", 152, "_init_group",
         'state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)'),
    ], msg))
    return "control_sft_qwen25_1_5b_sample_generations_first_optimizer_step.log", log.text(), dict(
        engine="hf_generate", version="transformers 4.47.1", workload="training", stage="optimizer_step",
        expected="optimizer_step2", control=True, first_fix_knob='optim="adamw_bnb_8bit"',
        physics=(f"Not a generate() failure: the sample generations ran. Full fp32 fine-tuning of 1.54e9 parameters keeps "
                 f"weights and gradients ({2 * weights / GiB:.2f} GiB); the first optimizer.step() adds AdamW's exp_avg and "
                 f"exp_avg_sq ({2 * params * 4 / GiB:.2f} GiB) and 16 B/parameter exceed the {total / GiB:.2f} GiB card; it fails "
                 f"with {states / (2 * params * 4) * 100:.0f}% of the moments created. An 8-bit "
                 "optimizer (or bf16 weights with fp32 master copies sharded/offloaded) fits."),
        noise=["sample generation output", "generate() warnings", "tqdm bar"])


SCENARIOS = [
    hf_generate_llama31_8b_eager_attention_32k,
    hf_generate_llama31_8b_beam_search_batch16,
    diffusers_sdxl_to_cuda_beside_comfyui,
    diffusers_flux_dev_to_cuda_4090,
    diffusers_sdxl_vae_decode_4096,
    control_trl_grpo_qwen25_7b_backward,
    control_sft_qwen25_1_5b_sample_generations_optimizer_step,
]
