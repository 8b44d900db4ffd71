"""What the user pastes: the traceback with the OOM message of their PyTorch era, and
torch.cuda.memory_summary() at the failure, both computed from the emulated allocator."""

import textwrap

from allocator import KiB, MiB, GiB


def format_size(n):
    n = int(n)
    if n <= 1024:
        return f"{n} bytes"
    if n <= 1048576:
        return f"{n / 1024.0:.2f} KiB"
    if n <= 1073741824:
        return f"{n / 1048576.0:.2f} MiB"
    return f"{n / 1073741824.0:.2f} GiB"


def parse_size(text):
    """The byte value a label gives for a printed size: the decimal times its unit, rounded."""
    value, unit = text.split()
    scale = {"bytes": 1, "KiB": KiB, "MiB": MiB, "GiB": GiB}[unit]
    return int(round(float(value) * scale))


EXCEPTION = {"2.0": "torch.cuda.OutOfMemoryError", "2.1": "torch.cuda.OutOfMemoryError", "2.3": "torch.cuda.OutOfMemoryError",
             "2.4": "torch.cuda.OutOfMemoryError", "2.6": "torch.OutOfMemoryError", "2.8": "torch.OutOfMemoryError",
             "2.10": "torch.OutOfMemoryError"}


def oom_message(era, info, card_total, device, processes, allowed=None, device_name_prefix="CUDA"):
    """processes: [(pid or None for this process, bytes)] in NVML order."""
    req = format_size(info["alloc_size"])
    total = format_size(card_total)
    free = format_size(info["device_free"])
    allocated = info["allocated"]
    reserved = info["reserved"]
    allowed_clause = f"{format_size(allowed)} allowed; " if allowed else ""
    if era == "2.0":
        return (f"CUDA out of memory. Tried to allocate {req} (GPU {device}; {total} total capacity; {format_size(allocated)} already allocated; "
                f"{free} free; {allowed_clause}{format_size(reserved)} reserved in total by PyTorch) If reserved memory is >> allocated memory "
                f"try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
    procs = ""
    for pid, nbytes in processes:
        if pid is None:
            procs += f"Including non-PyTorch memory, this process has {format_size(nbytes)} memory in use. "
        else:
            procs += f"Process {pid} has {format_size(nbytes)} memory in use. "
    capacity = "capacty" if era == "2.1" else "capacity"
    head = (f"{device_name_prefix} out of memory. Tried to allocate {req}. GPU {device} has a total {capacity} of {total} of which {free} is free. "
            f"{procs}{allowed_clause}Of the allocated memory {format_size(allocated)} is allocated by PyTorch, and "
            f"{format_size(reserved - allocated)} is reserved by PyTorch but unallocated.")
    if era == "2.1":
        tail = (" If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  "
                "See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
    elif era in ("2.3", "2.4", "2.6"):
        tail = (" If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
                "fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
    else:
        tail = (" If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
                "fragmentation.  See documentation for Memory Management  "
                "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")
    return head + tail


# The statement a frame executes, by the function it calls (NEXT_CALL) or, for the innermost
# frame, by its own name (LEAF).
NEXT_CALL = {
    "main": "main()", "train_one_epoch": "train_one_epoch(model, train_loader, optimizer, epoch)",
    "build_model": "model = build_model(cfg)", "build_optimizer": "optimizer = build_optimizer(model, cfg)",
    "train": "trainer.train(resume_from_checkpoint=checkpoint)",
    "_inner_training_loop": "return inner_training_loop(",
    "training_step": "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)",
    "compute_loss": "loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)",
    "_prepare_inputs": "inputs = self._prepare_inputs(inputs)",
    "_maybe_log_save_evaluate": "self._maybe_log_save_evaluate(tr_loss, grad_norm, model, trial, epoch, ignore_keys_for_eval, start_time)",
    "evaluation_loop": "output = eval_loop(",
    "prediction_step": "losses, logits, labels = self.prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys)",
    "nested_concat": "all_preds = logits if all_preds is None else nested_concat(all_preds, logits, padding_index=-100)",
    "torch_pad_and_concatenate": "return torch_pad_and_concatenate(tensors, new_tensors, padding_index=padding_index)",
    "from_pretrained": "model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path, **model_kwargs)",
    "_load_pretrained_model": ") = cls._load_pretrained_model(",
    "_load_state_dict_into_meta_model": "disk_offload_index = _load_state_dict_into_meta_model(",
    "set_module_tensor_to_device": "set_module_tensor_to_device(model, param_name, param_device, value=param)",
    "to": "model = model.to(device)", "_apply": "module._apply(fn)", "convert": "param_applied = fn(param)",
    "__init__": "model = DDP(model, device_ids=[local_rank])", "_ddp_init_helper": "self._ddp_init_helper(",
    "_setup_for_real_optimizer": "self._setup_for_real_optimizer()",
    "training_function": "training_function(config, args)", "to_device": "batch = to_device(batch, device)",
    "send_to_device": "current_batch = send_to_device(current_batch, self.device, non_blocking=self._non_blocking)",
    "__iter__": "for step, batch in enumerate(train_dataloader):",
    "wrapped_fn": "ret_val = func(*args, **kwargs)", "_take_model_step": "self._take_model_step(lr_kwargs)",
    "decorate_context": "return func(*args, **kwargs)", "wrapper": "out = func(*args, **kwargs)",
    "_use_grad": "ret = func(self, *args, **kwargs)", "adamw": "adamw(", "_multi_tensor_adamw": "func(",
    "_init_group": "has_complex = self._init_group(", "init_state": "self.init_state(group, p, gindex, pindex)",
    "update_step": "self.update_step(group, p, gindex, pindex)", "_multi_tensor_sgd": "func(",
    "_wrapped_call_impl": "outputs = model(**batch)", "_call_impl": "return self._call_impl(*args, **kwargs)",
    "_engine_run_backward": "_engine_run_backward(", "_make_grads": "grad_tensors_ = _make_grads(tensors, grad_tensors_, is_grads_batched=False)",
    "_fn": "return fn(*args, **kwargs)", "__call__": "return compiled_fn(full_args)", "call": "return self.current_callable(inputs)",
    "worker": "worker(request_queue)", "admit": "self.admit(request)", "generate": "output = model.generate(**inputs, past_key_values=cache, max_new_tokens=self.max_new_tokens)",
    "_sample": "result = self._sample(", "_get_cache": "model_kwargs[cache_name] = self._get_cache(",
    "retrieval_recall": "recall = retrieval_recall(model, eval_queries, eval_corpus)", "hook": "return hook(self, args, result)",
    "log_router_stats": "self.log_router_stats(outputs)", "update_queue": "self.update_queue(z1, z2)",
    "train_step": "loss = self.train_step(batch)", "preload": "self.preload()",
    "evaluate": "metrics = evaluate(model, val_loader)",
}

LEAF = {
    "_init_group": "state[\"exp_avg_sq\"] = torch.zeros_like(p, memory_format=torch.preserve_format)",
    "_multi_tensor_adamw": "exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)",
    "init_state": "state[\"state2\"] = self.get_state_buffer(p, dtype=torch.uint8)",
    "update_step": "F.optimizer_update_8bit_blockwise(",
    "_multi_tensor_sgd": "buf = torch.clone(device_grads[i]).detach()",
    "convert": "return t.to(", "set_module_tensor_to_device": "new_value = value.to(device)",
    "_ddp_init_helper": "self.reducer = dist.Reducer(", "_setup_for_real_optimizer": "fp32_flat_buffer = bf16_partitions[partition_id].clone().float().detach()",
    "_make_grads": "new_grads.append(torch.ones_like(out, memory_format=torch.preserve_format))",
    "_engine_run_backward": "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass",
    "_conv_forward": "return F.conv2d(", "softmax": "ret = input.softmax(dim)",
    "dropout": "return _VF.dropout_(input, p, training) if inplace else _VF.dropout(input, p, training)",
    "scaled_dot_product_attention": "attn_output = torch.nn.functional.scaled_dot_product_attention(",
    "group_norm": "return torch.group_norm(input, num_groups, weight, bias, eps, torch.backends.cudnn.enabled)",
    "batch_norm": "return torch.batch_norm(", "log_softmax": "ret = input.log_softmax(dim)", "float": "return F.cross_entropy(",
    "dequantize_4bit": "out = torch.empty(quant_state.shape, dtype=quant_state.dtype, device=A.device)",
    "get_attention_scores": "attention_scores = torch.baddbmm(",
    "repeat_kv": "hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)",
    "torch_pad_and_concatenate": "return torch.cat((tensor1, tensor2), dim=0)",
    "call": "buf12 = empty_strided_cuda((s0, 2048, 8192), (16777216, 8192, 1), torch.bfloat16)",
    "to_device": "return {k: v.to(device, non_blocking=True) for k, v in batch.items()}",
    "_prepare_inputs": "return data.to(**kwargs)", "send_to_device": "return tensor.to(device, non_blocking=non_blocking)",
    "retrieval_recall": "scores = queries @ corpus.T", "hook": "self.activations.append(output.detach())",
    "log_router_stats": "self.expert_masks.append(torch.nn.functional.one_hot(selected_experts, num_classes=self.num_experts))",
    "update_queue": "self.queue.append(torch.cat([z1, z2]).detach().float())", "preload": "self.next_input = self.next_input.cuda(non_blocking=True)",
    "__init__": "new_layer_key_cache = torch.zeros(cache_shape, dtype=self._dtype, device=layer_device)",
    "forward": "hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))",
}

FORWARD_INTO = {
    "_conv_forward": "return self._conv_forward(input, self.weight, self.bias)", "softmax": "attn = attn.softmax(dim=-1)",
    "dropout": "attn_weights = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)",
    "scaled_dot_product_attention": "x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if self.training else 0.)",
    "group_norm": "hidden_states = self.norm1(hidden_states)", "batch_norm": "out = self.bn3(out)",
    "log_softmax": "loss = loss_fct(shift_logits.view(-1, self.config.vocab_size), shift_labels.view(-1))",
    "float": "logits = logits.float()", "dequantize_4bit": "out = bnb.matmul_4bit(x, self.weight.t(), bias=bias, quant_state=self.weight.quant_state)",
    "get_attention_scores": "attention_probs = attn.get_attention_scores(query, key, attention_mask)",
    "repeat_kv": "key_states = repeat_kv(key_states, self.num_key_value_groups)",
    "forward": "hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))",
    "_wrapped_call_impl": "layer_outputs = layer(hidden_states, attention_mask=attention_mask)",
    "_call_impl": "layer_outputs = layer(hidden_states, attention_mask=attention_mask)",
}


def source_line(frame, next_frame):
    file, line, name = frame
    nxt = next_frame[2] if next_frame else None
    if file.endswith("torch/_tensor.py"):
        return "torch.autograd.backward("
    if file.endswith("torch/autograd/__init__.py") and name == "backward":
        return "_engine_run_backward(" if nxt == "_engine_run_backward" else \
            "Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass"
    if nxt is None:
        return LEAF.get(name, "out = self.proj(x)")
    fixed = {"decorate_context": "return func(*args, **kwargs)", "_wrapped_call_impl": "return self._call_impl(*args, **kwargs)",
             "_call_impl": "return forward_call(*args, **kwargs)", "_use_grad": "ret = func(self, *args, **kwargs)",
             "wrapped_fn": "ret_val = func(*args, **kwargs)", "_fn": "return fn(*args, **kwargs)",
             "admit": "output = self.model.generate(**inputs, past_key_values=cache, max_new_tokens=self.max_new_tokens)",
             "_sample": "outputs = self(**model_inputs, return_dict=True)"}
    if name in fixed and not (name == "admit" and nxt != "decorate_context"):
        return fixed[name]
    if name == "wrapper" and "torch/optim/optimizer.py" in file:
        return "out = func(*args, **kwargs)"
    if nxt == "backward":
        if "accelerate/accelerator.py" in next_frame[0]:
            return "self.accelerator.backward(loss, **kwargs)" if "trainer" in file else "accelerator.backward(loss)"
        if "deepspeed" in next_frame[0]:
            return "self.optimizer.backward(loss, retain_graph=retain_graph)" if "engine" in file else "model_engine.backward(loss)"
        if "accelerate/accelerator.py" in file or "deepspeed" in file:
            return "loss.backward(**kwargs)"
        return "loss.backward()"
    if nxt == "step":
        if "accelerate/optimizer.py" in next_frame[0]:
            return "self.optimizer.step()"
        if "deepspeed/runtime/engine.py" in next_frame[0]:
            return "model_engine.step()"
        if "bf16_optimizer" in next_frame[0]:
            return "self.optimizer.step()"
        return "return func.__get__(opt, opt.__class__)(*args, **kwargs)" if "lr_scheduler" in file else \
            "self.optimizer.step(closure)" if "accelerate" in file else "optimizer.step()"
    if nxt == "wrapper" and "lr_scheduler" in next_frame[0]:
        return "self.optimizer.step()"
    if nxt == "wrapper" and "optimizer.py" in next_frame[0] and "torch/optim" not in file:
        return "self.optimizer.step()" if "/" in file else "optimizer.step()"
    if nxt == "forward":
        if "deepspeed/runtime/engine.py" in next_frame[0]:
            return "loss = model_engine(batch)"
        if "loss.py" in next_frame[0]:
            return "loss = criterion(outputs, targets)"
        if "aot_autograd" in next_frame[0]:
            return "return compiled_fn(full_args)"
        return "return forward_call(*args, **kwargs)" if "module.py" in file else FORWARD_INTO["forward"]
    if nxt in ("_wrapped_call_impl", "_call_impl"):
        if "module.py" in file:
            return "return self._call_impl(*args, **kwargs)"
        if "/" not in file or file.endswith(("trainer.py", "engine.py")):
            return "outputs = model(**inputs)" if "trainer" in file else "outputs = model(**batch)"
        return "layer_outputs = decoder_layer(hidden_states, attention_mask=causal_mask, position_ids=position_ids)"
    if name == "forward" and nxt in FORWARD_INTO:
        return FORWARD_INTO[nxt]
    if nxt == "evaluate":
        return "metrics = self.evaluate(ignore_keys=ignore_keys_for_eval)" if "trainer" in file else "metrics = evaluate(model, val_loader)"
    if nxt == "decorate_context":
        return {"generate": "out = self.model.generate(**inputs)"}.get(name, "metrics = evaluate(model, val_loader)")
    if nxt == "train" and "/" not in file:
        return "train(args, model_engine, train_loader)" if "pretrain" in file else "trainer.train()"
    return NEXT_CALL.get(nxt, "out = fn(x)")


def traceback_text(chain, paths, exception, message, wrap=None, prefix="", extra_before=""):
    lines = ["Traceback (most recent call last):"]
    for i, frame in enumerate(chain):
        nxt = chain[i + 1] if i + 1 < len(chain) else None
        lines.append(f'  File "{paths.path(frame[0])}", line {frame[1]}, in {frame[2]}')
        lines.append("    " + source_line(frame, nxt))
    body = f"{exception}: {message}"
    if wrap:
        lines.extend(textwrap.wrap(body, wrap, break_on_hyphens=False))
    else:
        lines.append(body)
    text = "\n".join(lines) + "\n"
    if extra_before:
        text = extra_before + text
    if prefix:
        text = "".join(prefix + line + "\n" for line in text.splitlines())
    return text


def _format_size(sz, pref_sz, legacy=False):
    prefixes = ["B ", "KB", "MB", "GB", "TB", "PB"] if legacy else ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"]
    prefix = prefixes[0]
    for new_prefix in prefixes[1:]:
        if pref_sz < 768 * 1024:
            break
        prefix = new_prefix
        sz //= 1024
        pref_sz /= 1024
    return f"{sz:{7 if legacy else 6}d} {prefix}"


def _format_count(cnt, pref_cnt):
    prefixes = [" ", "K", "M"]
    prefix = prefixes[0]
    for new_prefix in prefixes[1:]:
        if pref_cnt < 750 * 1000:
            break
        prefix = new_prefix
        cnt //= 1000
        pref_cnt /= 1000
    return f"{cnt:7d} {prefix} "


def memory_summary(alloc, device=0, legacy=False, abbreviated=False):
    stats = alloc.stats
    split_now = alloc.inactive_split_bytes()
    split_count = sum(1 for seg in alloc.segments if seg.head.next is not None for b in seg.blocks() if not b.allocated)
    lines = ["=" * 75, " {_:16} PyTorch CUDA memory summary, device ID {device:<17d} ", "-" * 75,
             "  {_:9} CUDA OOMs: {num_ooms:<12d} | {_:6} cudaMalloc retries: {num_alloc_retries:<8d}  ", "=" * 75,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    metrics = [("allocated_bytes", "Allocated memory", True), ("active_bytes", "Active memory", True)]
    if not legacy:
        metrics.append(("requested_bytes", "Requested memory", True))
    metrics += [("reserved_bytes", "GPU reserved memory", True), ("inactive_split_bytes", "Non-releasable memory", True),
                ("allocation", "Allocations", False), ("active", "Active allocs", False), ("segment", "GPU reserved segments", False),
                ("inactive_split", "Non-releasable allocs", False)]
    for key, name, is_size in metrics:
        lines.append("-" * 75)
        subs = [("all", name)] if abbreviated else [("all", name), ("large_pool", "      from large pool"), ("small_pool", "      from small pool")]
        ref = None
        for sub, subname in subs:
            if key in ("inactive_split_bytes", "inactive_split"):
                # non-releasable memory is read off the segments at the failure
                value = split_now if key == "inactive_split_bytes" else split_count
                share = {"all": 1.0, "large_pool": 0.97, "small_pool": 0.03}[sub]
                cur = int(value * share)
                alloc_total = stats.rows["allocated_bytes" if is_size else "allocation"][sub].allocated // 3
                row = (cur, max(cur, int(cur * 1.3)), alloc_total + cur, alloc_total)
            else:
                s = stats.rows[key][sub]
                row = (s.current, s.peak, s.allocated, s.freed)
            if ref is None:
                ref = row
            if is_size:
                cells = [_format_size(v, r, legacy) for v, r in zip(row, ref)]
            else:
                cells = [_format_count(v, r) for v, r in zip(row, ref)]
            lines.append(f" {subname:<21} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} ")
    for name in ("Oversize allocations", "Oversize GPU segments"):
        lines.append("-" * 75)
        lines.append(f" {name:<21} | {_format_count(0, 0)} | {_format_count(0, 0)} | {_format_count(0, 0)} | {_format_count(0, 0)} ")
    lines.append("=" * 75)
    fmt = {"_": "", "device": device, "num_ooms": stats.num_ooms, "num_alloc_retries": stats.num_alloc_retries}
    return "|" + "|\n|".join(lines).format(**fmt) + "|\n"


def nvidia_smi(card_name, card_total_mib, used_mib, processes, driver="550.54.15", cuda="12.4"):
    """processes: [(pid, name, mib)]."""
    lines = [
        "+-----------------------------------------------------------------------------------------+",
        f"| NVIDIA-SMI {driver:<22} Driver Version: {driver:<14} CUDA Version: {cuda:<9}|",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
        f"|   0  {card_name:<34} On  |   00000000:00:1E.0 Off |                    0 |",
        f"| N/A   41C    P0             71W /  300W | {used_mib:>7}MiB / {card_total_mib:>5}MiB |     38%      Default |",
        "|                                         |                        |             Disabled |",
        "+-----------------------------------------+------------------------+----------------------+",
        "",
        "+-----------------------------------------------------------------------------------------+",
        "| Processes:                                                                              |",
        "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
    ]
    for pid, name, mib in processes:
        lines.append(f"|    0   N/A  N/A   {pid:>8}      C   {name:<40}{mib:>8}MiB |")
    lines.append("+-----------------------------------------------------------------------------------------+")
    return "\n".join(lines) + "\n"
