#!/usr/bin/env python3
"""Writes tests/data/text_b/: pasted messages only (no snapshot), one file each, and labels.json.

    python3 tests/tools/familyb/messages.py [--out DIR]

Each message is written in the shape people paste them (cut first words, re-wrapped lines,
launcher prefixes, logs around them) across eras and backends. The label gives the top diagnosis
a careful reader would give from that text alone, the failing phase when the text shows it, and
every number the message prints, in bytes: the printed decimal times its binary unit, rounded to
the nearest byte (so "3.89 GiB" is 4176855695).
"""

import argparse
import json
import os
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "..", "data", "text_b"))

UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}


def size(text):
    """'3.89 GiB' / '16.00GiB' / '512 bytes' -> bytes, rounded half up."""
    text = text.strip()
    number = text.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ").strip()
    unit = text[len(number):].strip()
    value = Fraction(number) * UNITS[unit]
    return int(value + Fraction(1, 2)) if value.denominator != 1 else int(value)


SITE = "/opt/conda/lib/python3.10/site-packages"
SITE311 = "/home/user/miniconda3/envs/train/lib/python3.11/site-packages"

MESSAGES = []


def message(name, case, text, phase=None, also=(), **numbers):
    label = {"case": case}
    if also:
        label["also_acceptable"] = list(also)
    if phase:
        label["phase"] = phase
    for key, value in numbers.items():
        label[key + "_bytes"] = size(value) if isinstance(value, str) else value
    MESSAGES.append((name, text, label))


BACKWARD_TB = '''Traceback (most recent call last):
  File "/workspace/train.py", line 214, in <module>
    main()
  File "/workspace/train.py", line 188, in main
    loss.backward()
  File "{site}/torch/_tensor.py", line 522, in backward
    torch.autograd.backward(
  File "{site}/torch/autograd/__init__.py", line 266, in backward
    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
'''.format(site=SITE)

# -- messages without their first words ------------------------------------------------------------

message("parenthesis_only_fragmentation.txt", "fragmentation", '''step 18400 | lr 2.4e-04 | loss 2.113 | tok/s 41233
step 18410 | lr 2.4e-04 | loss 2.090 | tok/s 40987
(GPU 0; 23.65 GiB total capacity; 14.20 GiB already allocated; 41.06 MiB free; 21.93 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF
''', total="23.65 GiB", allocated="14.20 GiB", free="41.06 MiB", reserved="21.93 GiB")

message("tried_to_allocate_first_backward.txt", "first_backward", '''Epoch 1/3:   0%|          | 0/1250 [00:14<?, ?it/s]
''' + BACKWARD_TB + '''Tried to allocate 3.06 GiB (GPU 0; 39.39 GiB total capacity; 34.12 GiB already allocated; 2.43 GiB free; 35.80 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF
''', phase="backward", requested="3.06 GiB", total="39.39 GiB", allocated="34.12 GiB", free="2.43 GiB", reserved="35.80 GiB")

message("tried_to_allocate_new_template_fragmentation.txt", "fragmentation", '''  File "/home/ana/proj/train_seg.py", line 97, in train_one_epoch
    outputs = model(images)
  File "{site}/torch/nn/modules/module.py", line 1532, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 6.75 MiB is free. Including non-PyTorch memory, this process has 79.13 GiB memory in use. Of the allocated memory 61.02 GiB is allocated by PyTorch, and 17.48 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
'''.format(site=SITE), phase="forward", requested="20.00 MiB", total="79.15 GiB", free="6.75 MiB", allocated="61.02 GiB")

# -- Intel XPU -----------------------------------------------------------------------------------------

message("xpu_platform_4gb_limit.txt", "large_allocation", '''Traceback (most recent call last):
  File "/root/bench/run_llm.py", line 71, in <module>
    out = model.generate(input_ids, max_new_tokens=256)
  File "/root/.local/lib/python3.10/site-packages/transformers/generation/utils.py", line 1764, in generate
    result = self._sample(
  File "/root/.local/lib/python3.10/site-packages/torch/nn/functional.py", line 1858, in softmax
    ret = input.softmax(dim, dtype=dtype)
RuntimeError: Current platform can NOT allocate memory block with size larger than 4GB! Tried to allocate 6.00 GiB (GPU  0; 15.11 GiB total capacity; 2.37 GiB already allocated; 2.41 GiB reserved in total by PyTorch)
''', requested="6.00 GiB", total="15.11 GiB", allocated="2.37 GiB", reserved="2.41 GiB")

message("xpu_out_of_memory_fragmentation.txt", "fragmentation", '''[2025-02-03 11:20:17] step 3120/20000 loss=1.874
torch.OutOfMemoryError: XPU out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 47.98 GiB of which 0 bytes is free. Of the allocated memory 44.81 GiB is allocated by PyTorch, and 2.87 GiB is reserved by PyTorch but unallocated. Please use `empty_cache` to release all unoccupied cached memory.
''', requested="512.00 MiB", total="47.98 GiB", free="0 bytes", allocated="44.81 GiB")

# -- XLA / JAX -----------------------------------------------------------------------------------------

message("jax_resource_exhausted_buffer_stats.txt", "large_allocation", '''Traceback (most recent call last):
  File "/home/kim/flax_lm/train.py", line 301, in <module>
    state, metrics = p_train_step(state, batch)
jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 21474836480 bytes.
BufferAssignment OOM Debugging.
BufferAssignment stats:
             parameter allocation:    7.50GiB
              constant allocation:         0B
        maybe_live_out allocation:    7.50GiB
     preallocated temp allocation:   20.00GiB
  preallocated temp fragmentation:    1.19GiB (5.95%)
                 total allocation:   35.00GiB
              total fragmentation:    1.19GiB (3.40%)
Peak buffers:
	Buffer 1:
		Size: 3.00GiB
		Operator: op_name="pjit(train_step)/jit(main)/transpose(jvp(...))/dot_general" source_file="/home/kim/flax_lm/model.py" source_line=88
		XLA Label: fusion
		Shape: bf16[16,2048,49152]
''', also=("first_backward",), requested=21474836480)

message("xla_bfc_ran_out_of_memory.txt", "large_allocation", '''2024-03-11 09:12:44.120851: W external/tsl/tsl/framework/bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of memory trying to allocate 9.00GiB (rounded to 9663676416)requested by op 
2024-03-11 09:12:44.120977: W external/tsl/tsl/framework/bfc_allocator.cc:497] ****************************************************************************________________________
2024-03-11 09:12:44.121044: E external/xla/xla/pjrt/pjrt_stream_executor_client.cc:2732] Execution of replica 0 failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 9663676416 bytes.
''', requested=9663676416)

# -- cudaMallocAsync, shortened --------------------------------------------------------------------------

message("mallocasync_large_vae_decode.txt", "large_allocation", '''!!! Exception during processing !!! Allocation on device 0 would exceed allowed memory. (out of memory)
Currently allocated     : 7.12 GiB
Requested               : 8.00 GiB
Device limit            : 15.57 GiB
Free (according to CUDA): 6.81 GiB
PyTorch limit (set by user-supplied memory fraction)
                        : 17179869184.00 GiB
''', requested="8.00 GiB", allocated="7.12 GiB", total="15.57 GiB", free="6.81 GiB")

message("mallocasync_two_lines_backward.txt", "first_backward", '''  0%|          | 0/500 [00:03<?, ?it/s]
''' + BACKWARD_TB + '''torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)
Currently allocated     : 21.87 GiB
Requested               : 768.00 MiB
Device limit            : 23.65 GiB
Free (according to CUDA): 14.06 MiB
''', phase="backward", requested="768.00 MiB", allocated="21.87 GiB", total="23.65 GiB", free="14.06 MiB")

# -- pre-1.0 -----------------------------------------------------------------------------------------------

message("thcudacheck_backward.txt", "first_backward", '''Train Epoch: 1 [0/50000 (0%)]
THCudaCheck FAIL file=/pytorch/torch/lib/THC/generic/THCStorage.cu line=66 error=2 : out of memory
Traceback (most recent call last):
  File "main.py", line 231, in <module>
    train(epoch)
  File "main.py", line 160, in train
    loss.backward()
  File "/usr/local/lib/python3.6/dist-packages/torch/autograd/variable.py", line 167, in backward
    torch.autograd.backward(self, gradient, retain_graph, create_graph, retain_variables)
  File "/usr/local/lib/python3.6/dist-packages/torch/autograd/__init__.py", line 99, in backward
    variables, grad_variables, retain_graph)
RuntimeError: cuda runtime error (2) : out of memory at /pytorch/torch/lib/THC/generic/THCStorage.cu:66
''', phase="backward")

message("cuda_runtime_error_2_evaluate.txt", "eval_accumulation", '''==> Epoch 12 finished, evaluating
Traceback (most recent call last):
  File "train_cifar.py", line 301, in <module>
    acc = evaluate(net, testloader)
  File "train_cifar.py", line 244, in evaluate
    all_outputs = torch.cat([all_outputs, outputs], 0)
RuntimeError: cuda runtime error (2) : out of memory at /opt/conda/conda-bld/pytorch_1524584710464/work/aten/src/THC/generic/THCStorage.cu:58
''', phase="eval")

# -- evaluation named only by the user's code ------------------------------------------------------------

message("evaluate_torch_cat_logits.txt", "eval_accumulation", '''Traceback (most recent call last):
  File "/data/exp/train_lm.py", line 412, in <module>
    main(args)
  File "/data/exp/train_lm.py", line 377, in main
    val_loss, val_ppl = evaluate(model, val_loader, args)
  File "/data/exp/train_lm.py", line 298, in evaluate
    all_logits = torch.cat((all_logits, logits.float()), dim=0)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.50 GiB. GPU 0 has a total capacity of 39.39 GiB of which 9.44 GiB is free. Including non-PyTorch memory, this process has 29.94 GiB memory in use. Of the allocated memory 28.83 GiB is allocated by PyTorch, and 623.71 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
''', phase="eval", requested="12.50 GiB", total="39.39 GiB", free="9.44 GiB", allocated="28.83 GiB")

message("validation_step_outputs.txt", "eval_accumulation", '''Epoch 0: 100%|##########| 2000/2000 [21:13<00:00,  1.57it/s, v_num=3, train_loss=0.811]
Validation DataLoader 0:  87%|########7 | 348/400 [01:52<00:16,  3.10it/s]
Traceback (most recent call last):
  File "/home/jo/seg/fit.py", line 58, in <module>
    trainer.fit(model, datamodule=dm)
  File "{site}/lightning/pytorch/loops/evaluation_loop.py", line 437, in _evaluation_step
    output = call._call_strategy_hook(trainer, hook_name, *step_args)
  File "{site}/lightning/pytorch/strategies/strategy.py", line 411, in validation_step
    return self.lightning_module.validation_step(*args, **kwargs)
  File "/home/jo/seg/module.py", line 83, in validation_step
    self.val_probs.append(logits.softmax(dim=1))
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 640.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 201.56 MiB is free. Including non-PyTorch memory, this process has 23.44 GiB memory in use. Of the allocated memory 22.88 GiB is allocated by PyTorch, and 112.40 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)
'''.format(site=SITE311), phase="eval", requested="640.00 MiB", total="23.65 GiB", free="201.56 MiB", allocated="22.88 GiB")

message("compute_metrics_on_gpu.txt", "eval_accumulation", '''***** Running Evaluation *****
  Num examples = 20000
  Batch size = 64
100%|██████████| 313/313 [02:41<00:00,  1.94it/s]
Traceback (most recent call last):
  File "/workspace/finetune_cls.py", line 190, in <module>
    metrics = trainer.evaluate()
  File "{site}/transformers/trainer.py", line 4051, in evaluate
    output = eval_loop(
  File "{site}/transformers/trainer.py", line 4339, in evaluation_loop
    metrics = self.compute_metrics(EvalPrediction(predictions=all_preds, label_ids=all_labels))
  File "/workspace/finetune_cls.py", line 121, in compute_metrics
    logits = torch.tensor(eval_pred.predictions, device="cuda")
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.52 GiB. GPU 0 has a total capacity of 39.39 GiB of which 27.01 GiB is free. Including non-PyTorch memory, this process has 12.37 GiB memory in use. Of the allocated memory 11.40 GiB is allocated by PyTorch, and 461.55 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
'''.format(site=SITE), phase="eval", requested="30.52 GiB", total="39.39 GiB", free="27.01 GiB", allocated="11.40 GiB")

message("predict_keeps_outputs.txt", "eval_accumulation", '''Traceback (most recent call last):
  File "infer.py", line 88, in <module>
    preds = predict(model, test_loader)
  File "infer.py", line 61, in predict
    outputs.append(model(x.cuda()))
  File "{site}/torch/nn/modules/module.py", line 1511, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
  File "{site}/torch/nn/modules/module.py", line 1520, in _call_impl
    return forward_call(*args, **kwargs)
  File "/home/r/models/unet.py", line 140, in forward
    x = self.up4(x, skip1)
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacty of 15.77 GiB of which 187.12 MiB is free. Including non-PyTorch memory, this process has 15.58 GiB memory in use. Of the allocated memory 15.19 GiB is allocated by PyTorch, and 24.20 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF
'''.format(site=SITE), phase="eval", requested="256.00 MiB", total="15.77 GiB", free="187.12 MiB", allocated="15.19 GiB")

# -- a request alone -----------------------------------------------------------------------------------------

message("bare_request_larger_than_any_card.txt", "large_allocation", '''Traceback (most recent call last):
  File "knn.py", line 40, in <module>
    d = torch.cdist(q, db)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1556.25 GiB
''', requested="1556.25 GiB")

message("huge_request_t3_full.txt", "large_allocation", '''torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 283.20 GiB. GPU 0 has a total capacity of 79.15 GiB of which 75.31 GiB is free. Including non-PyTorch memory, this process has 3.84 GiB memory in use. Of the allocated memory 3.21 GiB is allocated by PyTorch, and 114.06 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
''', requested="283.20 GiB", total="79.15 GiB", free="75.31 GiB", allocated="3.21 GiB")

# -- host memory -------------------------------------------------------------------------------------------------

message("host_bare_killed.txt", "host_memory", '''Epoch 3:  41%|████      | 1203/2931 [12:41<18:13,  1.58it/s, loss=0.412]Killed
''')

message("host_exit_code_137.txt", "host_memory", '''[INFO] building vocabulary cache from 48 shards ...
[INFO] 31/48 shards loaded (RSS 58.2 GB)

Process finished with exit code 137 (interrupted by signal 9: SIGKILL)
''')

message("host_dmesg_oom_killer.txt", "host_memory", '''$ sudo dmesg -T | tail -3
[Tue Mar  4 02:11:47 2025] Out of memory: Killed process 28311 (python) total-vm:118943212kB, anon-rss:61723420kB, file-rss:67204kB, shmem-rss:12288kB, UID:1000 pgtables:126344kB oom_score_adj:0
[Tue Mar  4 02:11:49 2025] oom_reaper: reaped process 28311 (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:12288kB
''')

message("host_cgroup_oomkilled.txt", "host_memory", '''$ kubectl describe pod train-llm-7f9c4-0 | grep -A4 "Last State"
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Mon, 10 Feb 2025 08:02:11 +0000
Memory cgroup out of memory: Killed process 9917 (pt_main_thread) total-vm:92233720kB, anon-rss:33554432kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:70212kB oom_score_adj:-997
''')

message("host_dataloader_worker_killed.txt", "host_memory", '''Traceback (most recent call last):
  File "{site}/torch/utils/data/dataloader.py", line 1133, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
  File "/opt/conda/lib/python3.10/multiprocessing/queues.py", line 113, in get
    if not self._poll(timeout):
  File "{site}/torch/utils/data/_utils/signal_handling.py", line 66, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 18234) is killed by signal: Killed. 
'''.format(site=SITE), phase="data")

# -- CUDA templates of other eras ----------------------------------------------------------------------------------

message("t0_cached_backward.txt", "first_backward", '''=> epoch 0, iter 0
''' + BACKWARD_TB.replace(SITE, "/usr/lib/python3.6/site-packages") + '''RuntimeError: CUDA out of memory. Tried to allocate 144.00 MiB (GPU 0; 10.92 GiB total capacity; 9.86 GiB already allocated; 122.56 MiB free; 201.73 MiB cached)
''', phase="backward", requested="144.00 MiB", total="10.92 GiB", allocated="9.86 GiB", free="122.56 MiB")

message("t2_capacty_other_process.txt", "other_process", '''torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total capacty of 23.69 GiB of which 18.75 MiB is free. Process 3391 has 17.80 GiB memory in use. Including non-PyTorch memory, this process has 5.61 GiB memory in use. Of the allocated memory 4.87 GiB is allocated by PyTorch, and 318.47 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF
''', requested="1.02 GiB", total="23.69 GiB", free="18.75 MiB", allocated="4.87 GiB")

message("t4_fraction_allowed.txt", "memory_fraction_cap", '''torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 80.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 47.03 GiB is free. Including non-PyTorch memory, this process has 32.12 GiB memory in use. 31.66 GiB allowed; Of the allocated memory 31.40 GiB is allocated by PyTorch, and 200.18 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)
''', requested="80.00 MiB", total="79.15 GiB", free="47.03 GiB", allocated="31.40 GiB", allowed="31.66 GiB")

message("t1_fraction_allowed.txt", "memory_fraction_cap", '''RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 1; 31.75 GiB total capacity; 7.83 GiB already allocated; 23.51 GiB free; 7.94 GiB allowed; 7.90 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF
''', requested="64.00 MiB", total="31.75 GiB", allocated="7.83 GiB", free="23.51 GiB", allowed="7.94 GiB", reserved="7.90 GiB")

message("hip_fragmentation.txt", "fragmentation", '''torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 63.98 GiB of which 1.08 GiB is free. Of the allocated memory 55.62 GiB is allocated by PyTorch, and 6.45 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
''', requested="1.50 GiB", total="63.98 GiB", free="1.08 GiB", allocated="55.62 GiB")

message("rank_prefixed_first_optimizer_step.txt", "optimizer_step2", '''[rank3]: Traceback (most recent call last):
[rank3]:   File "/fsx/runs/pretrain.py", line 402, in <module>
[rank3]:     train(cfg)
[rank3]:   File "/fsx/runs/pretrain.py", line 355, in train
[rank3]:     optimizer.step()
[rank3]:   File "/fsx/venv/lib/python3.11/site-packages/torch/optim/optimizer.py", line 487, in wrapper
[rank3]:     out = func(*args, **kwargs)
[rank3]:   File "/fsx/venv/lib/python3.11/site-packages/torch/optim/adamw.py", line 220, in step
[rank3]:     adamw(
[rank3]:   File "/fsx/venv/lib/python3.11/site-packages/torch/optim/adamw.py", line 590, in _multi_tensor_adamw
[rank3]:     exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)
[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 3 has a total capacity of 79.10 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.88 GiB memory in use. Of the allocated memory 75.12 GiB is allocated by PyTorch, and 1.86 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
[rank3]: step 1/100000 never completed (first optimizer step)
''', phase="optimizer", requested="1.96 GiB", total="79.10 GiB", free="1.21 GiB", allocated="75.12 GiB")

message("wrapped_load_capacity.txt", "capacity", '''Loading checkpoint shards:  62%|██████▏   | 18/29 [03:02<01:51, 10.12s/it]
Traceback (most recent call last):
  File "/srv/ft/load.py", line 19, in <module>
    model = AutoModelForCausalLM.from_pretrained("./llama-70b", torch_dtype=torch.bfloat16,
device_map="cuda:0")
  File "{site}/transformers/modeling_utils.py", line 4225, in from_pretrained
    ) = cls._load_pretrained_model(
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 0 has a total
capacity of 79.15 GiB of which 392.69 MiB is free. Including non-PyTorch memory, this process
has 78.76 GiB memory in use. Of the allocated memory 78.26 GiB is allocated by PyTorch, and
2.35 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large
try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See
documentation for Memory Management
(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
'''.format(site=SITE), phase="load", requested="448.00 MiB", total="79.15 GiB", free="392.69 MiB", allocated="78.26 GiB")

message("container_process_is_this_run.txt", "capacity", '''trainable params: 13,015,864,320 || all params: 13,015,864,320 || trainable%: 100.0000
  0%|          | 0/3000 [00:00<?, ?it/s]
''' + BACKWARD_TB + '''torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 270.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 222.69 MiB is free. Process 22817 has 78.68 GiB memory in use. Of the allocated memory 77.91 GiB is allocated by PyTorch, and 262.03 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
''', phase="backward", requested="270.00 MiB", total="79.15 GiB", free="222.69 MiB", allocated="77.91 GiB")

message("longest_batch_in_log.txt", "longest_batch", '''step  4400 | seq_len  384 | mem 14.2 GiB | loss 1.92
step  4410 | seq_len  512 | mem 15.1 GiB | loss 1.90
step  4420 | seq_len  320 | mem 13.9 GiB | loss 1.95
step  4430 | seq_len 4096 |
Traceback (most recent call last):
  File "train.py", line 133, in <module>
    logits = model(input_ids, attention_mask=mask).logits
  File "{site}/transformers/models/gpt2/modeling_gpt2.py", line 206, in _attn
    attn_weights = torch.matmul(query, key.transpose(-1, -2))
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 3.12 GiB is free. Including non-PyTorch memory, this process has 20.52 GiB memory in use. Of the allocated memory 19.83 GiB is allocated by PyTorch, and 226.37 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
'''.format(site=SITE), phase="forward", requested="6.00 GiB", total="23.65 GiB", free="3.12 GiB", allocated="19.83 GiB")

message("leak_growing_log.txt", "leak", '''iter   100  allocated 6.02 GB  reserved 6.50 GB  batch 16x512
iter   200  allocated 8.41 GB  reserved 8.90 GB  batch 16x512
iter   300  allocated 10.80 GB  reserved 11.30 GB  batch 16x512
iter   400  allocated 13.19 GB  reserved 13.70 GB  batch 16x512
iter   500  allocated 15.58 GB  reserved 16.10 GB  batch 16x512
Traceback (most recent call last):
  File "loop.py", line 77, in <module>
    out = model(batch)
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 96.00 MiB. GPU 0 has a total capacity of 15.77 GiB of which 53.12 MiB is free. Including non-PyTorch memory, this process has 15.71 GiB memory in use. Of the allocated memory 15.21 GiB is allocated by PyTorch, and 90.44 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
''', phase="forward", requested="96.00 MiB", total="15.77 GiB", free="53.12 MiB", allocated="15.21 GiB")


README = """# Pasted messages (family B text)

Written by `tests/tools/familyb/messages.py`: OOM messages and host-memory kills as people paste
them, without a snapshot: cut first words, CUDA templates of every era, HIP, XPU (including its
4 GB per-allocation limit), XLA/JAX `RESOURCE_EXHAUSTED` with BufferAssignment stats, XLA BFC logs,
shortened `cudaMallocAsync`, pre-1.0 `THCudaCheck`, evaluation named only by user code, a request
alone, host kills (`Killed`, exit 137, dmesg, cgroup, DataLoader worker), `[rank3]:` prefixes,
re-wrapped lines and the logs around them.

`labels.json` maps each file to its label:

```
{"case": "<the top diagnosis a careful reader gives from this text alone>",
 "also_acceptable": [optional],
 "phase": "<the failing phase, only when the text shows it>",
 "requested_bytes" / "total_bytes" / "free_bytes" / "allocated_bytes" / "reserved_bytes" / "allowed_bytes":
     every number the message prints, in bytes: the printed decimal times its binary unit (GB = GiB
     for the old MPS/log units), rounded to the nearest byte}
```

`reserved_bytes` is given only where a message prints the reserved total (`reserved in total by
PyTorch`); the 2.1+ templates print "reserved but unallocated" instead, and the <=1.3 `cached`
figure is the cached-but-unallocated part, so neither is given as a reserved total.

| file | case | phase |
|---|---|---|
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    labels = {}
    for name, text, label in MESSAGES:
        with open(os.path.join(args.out, name), "w") as f:
            f.write(text)
        labels[name] = label
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(README + "".join("| `%s` | `%s` | %s |\n" % (n, l["case"], l.get("phase", "")) for n, _, l in MESSAGES))
    with open(os.path.join(args.out, "labels.json"), "w") as f:
        json.dump(labels, f, indent=2, ensure_ascii=False)
        f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
