#!/usr/bin/env python3
"""Writes tests/data/text_c/: OOM messages, tracebacks and logs as people paste them, without a
snapshot, each with its label in labels.json (the family-B text format). The numbers in a label
are the printed decimals times their binary unit, so they are read back from the text itself.

    python3 tests/tools/familyc/messages.py [--out DIR]"""

import argparse
import json
import os
import re
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from texts import format_size, parse_size  # noqa: E402
from allocator import GiB, MiB  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "..", "data", "text_c"))

TAIL_T1 = (" If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  "
           "See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
TAIL_T2 = (" If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  "
           "See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
TAIL_T3 = (" If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
           "fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
TAIL_T4 = (" If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
           "fragmentation.  See documentation for Memory Management  "
           "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")


def new_template(era, req, total, free, allocated, unallocated, procs=(), allowed=None, device=0, backend="CUDA"):
    """T2 (2.1, 'capacty'), T3 (2.2-2.7), T4 (2.8+); procs: [(pid or None, bytes)]."""
    cap = "capacty" if era == "T2" else "capacity"
    text = (f"{backend} out of memory. Tried to allocate {format_size(req)}. GPU {device} has a total {cap} of {format_size(total)} "
            f"of which {format_size(free)} is free. ")
    for pid, n in procs:
        text += (f"Including non-PyTorch memory, this process has {format_size(n)} memory in use. " if pid is None
                 else f"Process {pid} has {format_size(n)} memory in use. ")
    if allowed:
        text += f"{format_size(allowed)} allowed; "
    text += (f"Of the allocated memory {format_size(allocated)} is allocated by PyTorch, and {format_size(unallocated)} is reserved "
             f"by PyTorch but unallocated.")
    return text + {"T2": TAIL_T2, "T3": TAIL_T3, "T4": TAIL_T4}[era]


def old_template(era, req, total, allocated, free, reserved=None, cached=None, allowed=None, device=0):
    allowed_clause = f"{format_size(allowed)} allowed; " if allowed else ""
    if era == "T0":
        return (f"CUDA out of memory. Tried to allocate {format_size(req)} (GPU {device}; {format_size(total)} total capacity; "
                f"{format_size(allocated)} already allocated; {format_size(free)} free; {format_size(cached)} cached)")
    return (f"CUDA out of memory. Tried to allocate {format_size(req)} (GPU {device}; {format_size(total)} total capacity; "
            f"{format_size(allocated)} already allocated; {format_size(free)} free; {allowed_clause}{format_size(reserved)} reserved in "
            f"total by PyTorch)" + TAIL_T1)


def tb(frames, exception, message, wrap=None):
    lines = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines.append(f'  File "{path}", line {line}, in {func}')
        if code:
            lines.append(f"    {code}")
    body = f"{exception}: {message}"
    lines.extend(textwrap.wrap(body, wrap, break_on_hyphens=False) if wrap else [body])
    return "\n".join(lines) + "\n"


SP = "/usr/local/lib/python3.10/dist-packages"
BACKWARD_23 = [(f"{SP}/torch/_tensor.py", 522, "backward", "torch.autograd.backward("),
               (f"{SP}/torch/autograd/__init__.py", 266, "backward", "_engine_run_backward("),
               (f"{SP}/torch/autograd/graph.py", 744, "_engine_run_backward",
                "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass")]
MODULE_24 = [(f"{SP}/torch/nn/modules/module.py", 1553, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
             (f"{SP}/torch/nn/modules/module.py", 1562, "_call_impl", "return forward_call(*args, **kwargs)")]


def numbers(message):
    """The label's numeric fields, read from the message the way a careful reader would."""
    flat = " ".join(message.split())
    size = r"(\d+ bytes|\d+\.\d{2} (?:KiB|MiB|GiB))"
    out = {}
    m = re.search(r"Tried to allocate " + size, flat)
    if m:
        out["requested_bytes"] = parse_size(m.group(1))
    m = re.search(r"total capac(?:i)?ty of " + size + " of which " + size + " is free", flat)
    if m:
        out["total_bytes"], out["free_bytes"] = parse_size(m.group(1)), parse_size(m.group(2))
    m = re.search(r"Of the allocated memory " + size + " is allocated by PyTorch", flat)
    if m:
        out["allocated_bytes"] = parse_size(m.group(1))
    m = re.search(r"\(GPU \d+; " + size + " total capacity; " + size + " already allocated; " + size + " free; ", flat)
    if m:
        out["total_bytes"], out["allocated_bytes"], out["free_bytes"] = (parse_size(m.group(i)) for i in (1, 2, 3))
    m = re.search(size + " reserved in total by PyTorch", flat)
    if m:
        out["reserved_bytes"] = parse_size(m.group(1))
    m = re.search(size + " allowed;", flat)
    if m:
        out["allowed_bytes"] = parse_size(m.group(1))
    return out


MESSAGES = []


def message(file, case, text, phase=None, also=None, numeric=True):
    MESSAGES.append((file, case, text, phase, also or [], numeric))


# --- other_process ------------------------------------------------------------------------
message("t3_two_other_processes.txt", "other_process", tb(
    [("/home/ana/proj/finetune_whisper.py", 311, "<module>", "trainer.train()")] + [],
    "torch.cuda.OutOfMemoryError",
    new_template("T3", 80 * MiB, int(23.64 * GiB), int(54.81 * MiB), int(5.12 * GiB), int(301.37 * MiB),
                 procs=[(4410, int(9.86 * GiB)), (4571, int(7.62 * GiB)), (None, int(5.96 * GiB))])))

smi = """+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.154.05             Driver Version: 535.154.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|=========================================+======================+======================|
|   0  NVIDIA RTX A6000               Off | 00000000:41:00.0 Off |                  Off |
| 30%   52C    P2             148W / 300W |  48641MiB / 49140MiB |     97%      Default |
+-----------------------------------------+----------------------+----------------------+

+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    0   N/A  N/A    771203      C   ...envs/sdxl/bin/python                    38912MiB |
|    0   N/A  N/A    771988      C   python train_lora.py                        9718MiB |
+---------------------------------------------------------------------------------------+
"""
message("t4_nvidia_smi_shared_workstation.txt", "other_process", "$ python train_lora.py --config configs/lora.yaml\n" + tb(
    [("/home/lab/train_lora.py", 140, "<module>", "main(cfg)"), ("/home/lab/train_lora.py", 121, "main", "pred = unet(noisy, t, enc).sample")]
    + [(f"{SP}/torch/nn/modules/module.py", 1773, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
       (f"{SP}/torch/nn/modules/module.py", 1784, "_call_impl", "return forward_call(*args, **kwargs)")],
    "torch.OutOfMemoryError",
    new_template("T4", 640 * MiB, int(47.41 * GiB), int(330.56 * MiB), int(8.71 * GiB), int(402.17 * MiB),
                 procs=[(771203, int(38.00 * GiB)), (None, int(9.49 * GiB))])) + "\n$ nvidia-smi\n" + smi, phase="forward")

# --- memory_fraction_cap --------------------------------------------------------------------
message("t4_fraction_allowed_backward.txt", "memory_fraction_cap", tb(
    [("/srv/jobs/7781/train.py", 98, "<module>", "loss.backward()")] + BACKWARD_23, "torch.OutOfMemoryError",
    new_template("T4", 1.5 * GiB, int(79.19 * GiB), int(58.42 * GiB), int(18.77 * GiB), int(502.31 * MiB),
                 procs=[(None, int(20.31 * GiB))], allowed=int(19.80 * GiB))), phase="backward")

message("t2_fraction_allowed_load.txt", "memory_fraction_cap", tb(
    [("/workspace/serve.py", 22, "<module>", "model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.float16).cuda()"),
     (f"{SP}/torch/nn/modules/module.py", 918, "cuda", "return self._apply(lambda t: t.cuda(device))"),
     (f"{SP}/torch/nn/modules/module.py", 810, "_apply", "module._apply(fn)"),
     (f"{SP}/torch/nn/modules/module.py", 833, "_apply", "param_applied = fn(param)"),
     (f"{SP}/torch/nn/modules/module.py", 918, "<lambda>", "return self._apply(lambda t: t.cuda(device))")],
    "torch.cuda.OutOfMemoryError",
    new_template("T2", 250 * MiB, int(39.39 * GiB), int(29.61 * GiB), int(9.61 * GiB), int(1.25 * MiB),
                 procs=[(None, int(10.12 * GiB))], allowed=int(9.85 * GiB))), phase="load")

# --- fragmentation --------------------------------------------------------------------------
message("t1_reserved_far_above_allocated.txt", "fragmentation", tb(
    [("train_detector.py", 402, "<module>", "losses = model(images, targets)")] + [
        (f"{SP}/torch/nn/modules/module.py", 1501, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{SP}/torchvision/models/detection/generalized_rcnn.py", 104, "forward", "proposals, proposal_losses = self.rpn(images, features, targets)")],
    "torch.cuda.OutOfMemoryError",
    old_template("T1", int(2.31 * GiB), int(31.75 * GiB), int(19.07 * GiB), int(118.56 * MiB), reserved=int(30.98 * GiB))), phase="forward")

message("t3_wrapped_80_columns_fragmentation.txt", "fragmentation", tb(
    [("/opt/ml/code/train.py", 233, "<module>", "outputs = model(**batch)")] + MODULE_24,
    "torch.OutOfMemoryError",
    new_template("T3", int(1.95 * GiB), int(22.05 * GiB), int(81.12 * MiB), int(13.44 * GiB), int(7.93 * GiB),
                 procs=[(None, int(21.97 * GiB))]), wrap=80), phase="forward")

message("deepspeed_see_memory_usage_then_fragmentation.txt", "fragmentation",
        "[2026-03-02 11:04:51,233] [INFO] [utils.py:781:see_memory_usage] After forward\n"
        "[2026-03-02 11:04:51,234] [INFO] [utils.py:782:see_memory_usage] MA 51.37 GB         Max_MA 58.02 GB         CA 71.44 GB         Max_CA 72 GB \n"
        "[2026-03-02 11:04:51,234] [INFO] [utils.py:789:see_memory_usage] CPU Virtual Memory:  used = 187.2 GB, percent = 18.6%\n"
        + tb([("pretrain_gpt.py", 288, "<module>", "model_engine.backward(loss)"),
              (f"{SP}/deepspeed/utils/nvtx.py", 18, "wrapped_fn", "ret_val = func(*args, **kwargs)"),
              (f"{SP}/deepspeed/runtime/engine.py", 2048, "backward", "self.optimizer.backward(loss, retain_graph=retain_graph)")] + BACKWARD_23,
             "torch.OutOfMemoryError",
             new_template("T3", int(4.50 * GiB), int(79.15 * GiB), int(3.06 * GiB), int(54.12 * GiB), int(21.46 * GiB),
                          procs=[(None, int(76.08 * GiB))])), phase="backward")

message("windows_garbage_nvml_fragmentation.txt", "fragmentation", tb(
    [(r"C:\Users\kim\Documents\seg\train.py", 176, "<module>", "out = net(img)"),
     (r"C:\Users\kim\miniconda3\envs\seg\lib\site-packages\torch\nn\modules\module.py", 1518, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
     (r"C:\Users\kim\miniconda3\envs\seg\lib\site-packages\torch\nn\modules\module.py", 1527, "_call_impl", "return forward_call(*args, **kwargs)")],
    "torch.cuda.OutOfMemoryError",
    new_template("T2", 512 * MiB, int(11.99 * GiB), 0, int(8.27 * GiB), int(2.41 * GiB), procs=[(None, 17179869184 * GiB)])), phase="forward")

# --- first_backward / optimizer_step2 / capacity --------------------------------------------
message("t2_first_iteration_backward_log.txt", "first_backward",
        "Epoch 1/3:   0%|          | 0/3125 [00:00<?, ?it/s]\n"
        "trainable params: 1,235,814,400 || all params: 1,235,814,400 || trainable%: 100.0000\n"
        + tb([("finetune.py", 187, "<module>", "accelerator.backward(loss)"),
              (f"{SP}/accelerate/accelerator.py", 2013, "backward", "loss.backward(**kwargs)"),
              (f"{SP}/torch/_tensor.py", 492, "backward", "torch.autograd.backward("),
              (f"{SP}/torch/autograd/__init__.py", 251, "backward",
               "Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass")],
             "torch.cuda.OutOfMemoryError",
             new_template("T2", int(1.96 * GiB), int(39.39 * GiB), int(1.31 * GiB), int(35.86 * GiB), int(1.63 * GiB),
                          procs=[(None, int(38.07 * GiB))])), phase="backward")

message("t3_adamw_init_group_first_step.txt", "optimizer_step2",
        "Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.61s/it]\n"
        "model dtype: torch.bfloat16, optimizer: adamw_torch\n"
        "***** Running training *****\n  Num examples = 52,002\n  Num Epochs = 3\n"
        "  Instantaneous batch size per device = 4\n  Total optimization steps = 39,000\n"
        "  Number of trainable parameters = 1,543,714,304\n"
        "  0%|          | 0/39000 [00:00<?, ?it/s]\n"
        + tb([("train_sft.py", 92, "<module>", "trainer.train()"),
              (f"{SP}/transformers/trainer.py", 1938, "train", "return inner_training_loop("),
              (f"{SP}/transformers/trainer.py", 2341, "_inner_training_loop", "self.optimizer.step()"),
              (f"{SP}/accelerate/optimizer.py", 170, "step", "self.optimizer.step(closure)"),
              (f"{SP}/torch/optim/lr_scheduler.py", 75, "wrapper", "return wrapped(*args, **kwargs)"),
              (f"{SP}/torch/optim/optimizer.py", 391, "wrapper", "out = func(*args, **kwargs)"),
              (f"{SP}/torch/optim/optimizer.py", 76, "_use_grad", "ret = func(self, *args, **kwargs)"),
              (f"{SP}/torch/optim/adamw.py", 177, "step", "has_complex = self._init_group("),
              (f"{SP}/torch/optim/adamw.py", 128, "_init_group", "state[\"exp_avg_sq\"] = torch.zeros_like(p, memory_format=torch.preserve_format)")],
             "torch.cuda.OutOfMemoryError",
             new_template("T3", 172 * MiB, int(23.68 * GiB), int(101.56 * MiB), int(22.86 * GiB), int(233.40 * MiB),
                          procs=[(None, int(23.37 * GiB))])), phase="optimizer")

message("container_self_listed_at_load_capacity.txt", "capacity", tb(
    [("/app/finetune.py", 61, "<module>", "model.to(\"cuda\")"),
     (f"{SP}/transformers/modeling_utils.py", 2905, "to", "return super().to(*args, **kwargs)"),
     (f"{SP}/torch/nn/modules/module.py", 1340, "to", "return self._apply(convert)"),
     (f"{SP}/torch/nn/modules/module.py", 900, "_apply", "module._apply(fn)"),
     (f"{SP}/torch/nn/modules/module.py", 927, "_apply", "param_applied = fn(param)"),
     (f"{SP}/torch/nn/modules/module.py", 1326, "convert", "return t.to(")],
    "torch.OutOfMemoryError",
    new_template("T3", 500 * MiB, int(23.65 * GiB), int(17.06 * MiB), int(22.81 * GiB), int(1.44 * MiB),
                 procs=[(48213, int(23.24 * GiB))])), phase="load")

message("jupyter_fp32_7b_to_cuda_capacity.txt", "capacity",
        "---------------------------------------------------------------------------\n"
        "OutOfMemoryError                          Traceback (most recent call last)\n"
        "Cell In[7], line 3\n"
        "      1 model = AutoModelForCausalLM.from_pretrained(\"mistralai/Mistral-7B-v0.1\")\n"
        "      2 print(f\"{sum(p.numel() for p in model.parameters()):,} parameters\")\n"
        "----> 3 model = model.to(\"cuda\")\n\n"
        f"File {SP}/torch/nn/modules/module.py:1340, in Module.to(self, *args, **kwargs)\n"
        "   1337         else:\n   1338             raise\n-> 1340 return self._apply(convert)\n\n"
        "OutOfMemoryError: " + new_template("T3", 224 * MiB, int(14.75 * GiB), int(77.06 * MiB), int(14.52 * GiB), int(1.06 * MiB),
                                             procs=[(None, int(14.67 * GiB))]) + "\n", phase="load")

message("trainable_params_fused_adamw_capacity.txt", "capacity",
        "trainable params: 2,779,683,840 || all params: 2,779,683,840 || trainable%: 100.0000\n"
        "Using fused AdamW, lr=1e-5, bf16 autocast, fp32 weights\n"
        + tb([("train.py", 204, "<module>", "optimizer.step()"),
              (f"{SP}/torch/optim/optimizer.py", 487, "wrapper", "out = func(*args, **kwargs)"),
              (f"{SP}/torch/optim/optimizer.py", 91, "_use_grad", "ret = func(self, *args, **kwargs)"),
              (f"{SP}/torch/optim/adamw.py", 209, "step", "has_complex = self._init_group("),
              (f"{SP}/torch/optim/adamw.py", 153, "_init_group", "state[\"exp_avg\"] = torch.zeros_like(p, memory_format=torch.preserve_format)")],
             "torch.OutOfMemoryError",
             new_template("T3", 100 * MiB, int(39.39 * GiB), int(27.12 * MiB), int(38.61 * GiB), int(152.80 * MiB),
                          procs=[(None, int(39.35 * GiB))])), phase="optimizer")

# --- longest_batch / leak ---------------------------------------------------------------------
lines = []
for step, (seq, mem) in enumerate([(412, 17.9), (388, 17.6), (506, 18.4), (444, 18.0), (471, 18.2), (397, 17.7), (463, 18.1), (429, 17.9)]):
    lines.append(f"step {1200 + step:5d} | loss {2.41 - 0.003 * step:.4f} | seq_len {seq:4d} | max_mem {mem:.1f} GiB | 1.92 it/s")
lines.append("step  1208 | batch padded to 4096 tokens (longest sample 4096)")
message("hip_seq_len_log_longest_batch.txt", "longest_batch", "\n".join(lines) + "\n" + tb(
    [("train_mi250.py", 301, "<module>", "logits = model(input_ids).logits")] + MODULE_24 +
    [(f"{SP}/transformers/models/llama/modeling_llama.py", 1190, "forward", "logits = self.lm_head(hidden_states)")],
    "torch.OutOfMemoryError",
    new_template("T3", int(3.91 * GiB), int(63.98 * GiB), int(2.36 * GiB), int(57.71 * GiB), int(3.77 * GiB), backend="HIP")), phase="forward")

lines = []
for i, mem in enumerate([6.02, 6.27, 6.52, 6.77, 7.02, 7.27, 7.52, 7.77, 8.02, 8.27, 8.52, 8.77]):
    lines.append(f"[train] epoch 0 iter {100 * (i + 1):5d}  loss={1.93 - 0.01 * i:.3f}  bs=32  torch.cuda.memory_allocated()={mem:.2f}GB")
message("memory_allocated_grows_leak.txt", "leak", "\n".join(lines) + "\n" + tb(
    [("main.py", 77, "<module>", "out = model(x)")] + MODULE_24,
    "torch.OutOfMemoryError",
    new_template("T3", 96 * MiB, int(10.75 * GiB), int(61.44 * MiB), int(9.88 * GiB), int(184.91 * MiB),
                 procs=[(None, int(10.44 * GiB))])), phase="forward")

# --- eval_accumulation ----------------------------------------------------------------------
message("t0_validate_torch_cat_outputs.txt", "eval_accumulation", tb(
    [("validate.py", 88, "<module>", "validate(model, loader)"),
     ("validate.py", 61, "validate", "all_logits = torch.cat([all_logits, logits], dim=0)")],
    "RuntimeError", old_template("T0", int(1.48 * GiB), int(11.17 * GiB), int(9.02 * GiB), int(1.21 * GiB), cached=int(38.25 * MiB))), phase="eval")

message("rank1_trainer_predictions_nested_concat.txt", "eval_accumulation", "".join("[rank1]: " + l + "\n" for l in tb(
    [("run_clm.py", 655, "<module>", "main()"), ("run_clm.py", 612, "main", "metrics = trainer.evaluate()"),
     (f"{SP}/transformers/trainer.py", 4051, "evaluate", "output = eval_loop("),
     (f"{SP}/transformers/trainer.py", 4281, "evaluation_loop", "all_preds = logits if all_preds is None else nested_concat(all_preds, logits, padding_index=-100)"),
     (f"{SP}/transformers/trainer_pt_utils.py", 128, "nested_concat", "return torch_pad_and_concatenate(tensors, new_tensors, padding_index=padding_index)"),
     (f"{SP}/transformers/trainer_pt_utils.py", 84, "torch_pad_and_concatenate", "return torch.cat((tensor1, tensor2), dim=0)")],
    "torch.OutOfMemoryError",
    new_template("T4", int(14.69 * GiB), int(79.19 * GiB), int(11.07 * GiB), int(66.89 * GiB), int(603.44 * MiB),
                 procs=[(None, int(68.08 * GiB))], device=1)).splitlines()), phase="eval")

message("lightning_validation_step_outputs.txt", "eval_accumulation",
        "Validation DataLoader 0:  71%|███████   | 355/500 [01:12<00:29,  4.91it/s]\n" + tb(
            [("fit.py", 44, "<module>", "trainer.fit(model, dm)"),
             (f"{SP}/lightning/pytorch/loops/evaluation_loop.py", 141, "run", "self._evaluation_step(batch, batch_idx, dataloader_idx, dataloader_iter)"),
             (f"{SP}/lightning/pytorch/loops/evaluation_loop.py", 403, "_evaluation_step", "output = call._call_strategy_hook(trainer, hook_name, *step_args)"),
             ("/work/seg/module.py", 118, "validation_step", "self.validation_step_outputs.append({\"probs\": probs, \"mask\": mask})"),
             ("/work/seg/module.py", 112, "validation_step", "probs = torch.softmax(logits, dim=1)")],
            "torch.OutOfMemoryError",
            new_template("T3", 800 * MiB, int(23.65 * GiB), int(305.44 * MiB), int(22.04 * GiB), int(442.10 * MiB),
                         procs=[(None, int(23.35 * GiB))])), phase="eval")

# --- large_allocation -------------------------------------------------------------------------
message("t4_cdist_all_pairs_huge.txt", "large_allocation", tb(
    [("mine_negatives.py", 53, "<module>", "dist = torch.cdist(emb, emb)"),
     (f"{SP}/torch/functional.py", 1478, "cdist", "return _VF.cdist(x1, x2, p, None)  # type: ignore[attr-defined]")],
    "torch.OutOfMemoryError",
    new_template("T4", int(48.83 * GiB), int(79.19 * GiB), int(76.11 * GiB), int(1.92 * GiB), int(26.00 * MiB),
                 procs=[(None, int(2.55 * GiB))])))  # a module-level torch.cdist: the text shows no training phase

message("t1_attention_scores_8k_image_tokens.txt", "large_allocation", tb(
    [("sample.py", 201, "<module>", "img = pipe(prompt, height=2048, width=2048).images[0]"),
     (f"{SP}/diffusers/models/attention_processor.py", 688, "get_attention_scores", "attention_scores = torch.baddbmm(")],
    "torch.cuda.OutOfMemoryError",
    old_template("T1", int(32.00 * GiB), int(23.69 * GiB), int(4.71 * GiB), int(17.96 * GiB), reserved=int(4.98 * GiB))), phase="forward")

# --- host_memory ------------------------------------------------------------------------------
message("torchrun_sigkill_exitcode_minus9.txt", "host_memory",
        "[2026-01-19 03:11:42,771] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 90212 closing signal SIGTERM\n"
        "[2026-01-19 03:11:42,772] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 90213 closing signal SIGTERM\n"
        "[2026-01-19 03:11:43,102] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 0 (pid: 90211) of binary: /opt/conda/bin/python\n"
        "Traceback (most recent call last):\n"
        "  File \"/opt/conda/bin/torchrun\", line 8, in <module>\n    sys.exit(main())\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n  time      : 2026-01-19_03:11:42\n  host      : node-a17\n  rank      : 0 (local_rank: 0)\n"
        "  exitcode  : -9 (pid: 90211)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 90211\n"
        "============================================================\n", numeric=False)

message("slurm_oom_kill_event.txt", "host_memory",
        "Epoch 0:  12%|█▏        | 611/5000 [07:41<55:12,  1.32it/s, loss=3.11]\n"
        "slurmstepd: error: Detected 1 oom_kill event in StepId=4419907.0. Some of the step tasks have been OOM Killed.\n"
        "srun: error: gpu-node-31: task 0: Out Of Memory\n", numeric=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    labels = {}
    for file, case, text, phase, also, numeric in MESSAGES:
        with open(os.path.join(args.out, file), "w") as f:
            f.write(text)
        label = {"case": case}
        if also:
            label["also_acceptable"] = also
        if phase:
            label["phase"] = phase
        if numeric:
            label.update(numbers(text))
        labels[file] = label
    with open(os.path.join(args.out, "labels.json"), "w") as f:
        json.dump(labels, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
