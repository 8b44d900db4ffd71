"""communication_buffers: buffers of collectives kept alive beyond need, growing with the layers or
the buckets: FSDP2 parameters not resharded after forward, unsharded gradients kept per layer while
the reduce-scatter is deferred, DDP's bucket copy of every gradient (gradient_as_bucket_view=False),
DeepSpeed ZeRO-2's oversized IPG and all-gather buckets."""

from allocator import GiB, MiB
from run import Run
import frames as F
import models as M
from loop import Loop
from fsdp2 import Fsdp2
from spec import Spec, g, m


def fsdp2_frames(P, user, line=118):
    return [(user, line, "main", "fully_shard(model, mesh=mesh, mp_policy=mp_policy, reshard_after_forward=False)"),
            (P.t + "/distributed/_composable/contract.py", 125, "wrapper", "updated = func(inp_module, *args, **kwargs)"),
            (P.t + "/distributed/fsdp/_fully_shard/_fully_shard.py", 235, "fully_shard", "state._fsdp_param_group = FSDPParamGroup("),
            (P.t + "/distributed/fsdp/_fully_shard/_fsdp_param.py", 330, "_init_sharded_param", "self._sharded_param_data = padded_sharded_param.view(-1)")]


def fsdp2_no_reshard():
    P = F.Paths("/usr/local/lib/python3.11/site-packages", "/workspace/torchtitan")
    model = M.QWEN25_32B
    world = 16
    tokens = 8192

    def make():
        r = Run("H100", outside=int(1.8 * GiB), device=1)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        user = "/workspace/torchtitan/torchtitan/train.py"
        l = Loop(r, P, model, user, ckpt="non_reentrant", param_dtype=4, grad_dtype=4, shard=world, opt_bytes=8)
        Fsdp2(l, world, reshard_after_forward=fixed)
        l.load(fsdp2_frames(P, "/workspace/torchtitan/torchtitan/models/llama3/parallelize_llama.py", 351))
        for step in range(3):
            r.step = step
            l.step(tokens)
            l.zero_grad()

    def describe(r, rf):
        f = r.failure
        return ("Qwen2.5-32B-shaped model trained with torchtitan-style FSDP2 over 16 H100s (2 nodes) (fp32 sharded parameters, "
                "bf16 compute, non-reentrant activation checkpointing per block, 8192 tokens per rank), every block "
                "wrapped with fully_shard(reshard_after_forward=False). Each block's all-gathered bf16 parameters "
                "(%s) stay unsharded from its forward to its backward, so the forward holds one more copy per block: "
                "%s of them when the forward of step %d fails beside %s of sharded parameters. "
                "With reshard_after_forward=True the same run peaks at %s reserved and completes."
                % (g(2 * M.QWEN25_32B.layer_params), g(f["live_by_category"].get("communication", 0)), f["step"],
                   g(f["live_by_category"].get("parameters", 0)),
                   g(rf.a.peak_reserved)))

    return Spec("fsdp2_qwen25_32b_h100_reshard_after_forward_false", "communication_buffers", "FSDP2 (torchtitan)",
                make, program, describe, "reshard_after_forward=True", checkpointing=True, rank_prefix=1)


def fsdp2_no_sync_accumulation():
    P = F.Paths("/opt/conda/lib/python3.11/site-packages", "/home/user/sft")
    model = M.LLAMA3_8B
    world = 4
    tokens = 4096

    def make():
        r = Run("L40S", outside=int(1.2 * GiB), device=0)
        r.visible_devices = 4
        return r

    def program(r, fixed):
        user = "/home/user/sft/train_sft.py"
        l = Loop(r, P, model, user, ckpt="non_reentrant", param_dtype=4, grad_dtype=4, shard=world, opt_bytes=8)
        fs = Fsdp2(l, world, reshard_after_forward=True, gradient_sync=fixed, reduce_bytes=4)
        l.load(fsdp2_frames(P, user, 88))
        for step in range(2):
            r.step = step
            for micro in range(4):
                fs.sync = fixed or micro == 3
                r.notes["micro"] = micro
                l.step(tokens, optimizer=False)
            l.optimizer_step()
            l.zero_grad()

    def describe(r, rf):
        f = r.failure
        return ("Llama-3-8B supervised fine-tuning with FSDP2 on 4 L40S (48 GB), fp32 sharded parameters, bf16 "
                "compute, activation checkpointing, 4 micro-batches of 4096 tokens per optimizer step. To save "
                "communication the loop calls model.set_requires_gradient_sync(False) for the first three micro-batches: "
                "FSDP2 then keeps every block's unsharded gradient in fp32 (reduce_dtype) until the last micro-batch's "
                "reduce-scatter, 0.81 GiB per block. Micro-batch %d of step %d fails in backward with %s of them held beside %s of "
                "sharded parameters, gradients and Adam state. Reducing every micro-batch peaks at %s and completes."
                % (r.notes["micro"], f["step"], g(f["live_by_category"].get("communication", 0)),
                   g(sum(v for k, v in f["live_by_category"].items() if k in ("parameters", "gradients", "optimizer_state"))),
                   g(rf.a.peak_reserved)))

    return Spec("fsdp2_llama3_8b_l40s_no_gradient_sync_accumulation", "communication_buffers", "FSDP2",
                make, program, describe, "gradient sync on every micro-batch", checkpointing=True)


def ddp_bucket_copy():
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace")
    model = M.LLAMA32_1B
    tokens = globals().get("_OVR", 8192)

    def make():
        r = Run("A100-40", outside=int(1.3 * GiB), device=6)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        user = "/workspace/pretrain/train.py"
        r.notes["tokens"] = tokens
        l = Loop(r, P, model, user, param_dtype=4, grad_dtype=4, opt_bytes=8)
        l.load(P.to_device(user, 171, "model = model.to(local_rank)"))
        ddp = [(user, 174, "main", "model = DDP(model, device_ids=[local_rank], bucket_cap_mb=100, gradient_as_bucket_view=%s)" % fixed),
               (P.t + "/nn/parallel/distributed.py", 873, "__init__", "self._ddp_init_helper("),
               (P.t + "/nn/parallel/distributed.py", 1245, "_ddp_init_helper", "self.reducer = dist.Reducer(")]
        cpp = [("reducer.cpp", 0, "c10d::Reducer::initialize_buckets(std::vector<c10d::Reducer::BucketIndices, std::allocator<c10d::Reducer::BucketIndices> >)", None),
               ("reducer.cpp", 0, "c10d::Reducer::Reducer(std::vector<at::Tensor, std::allocator<at::Tensor> >, std::vector<std::vector<unsigned long, std::allocator<unsigned long> >, std::allocator<std::vector<unsigned long, std::allocator<unsigned long> > > >, c10::intrusive_ptr<c10d::ProcessGroup, c10::detail::intrusive_target_default_null_type<c10d::ProcessGroup> >, std::vector<bool, std::allocator<bool> >, long, bool, bool, std::unordered_map<unsigned long, std::string, std::hash<unsigned long>, std::equal_to<unsigned long>, std::allocator<std::pair<unsigned long const, std::string> > >, long, bool)", None)]
        cap = 100 * MiB
        with r.at(ddp):
            left = 4 * model.params
            buckets = []
            while left > 0:
                n = min(cap, left)
                # gradient_as_bucket_view=True: the bucket is the gradients' storage (param.grad views it)
                buckets.append(r.alloc(n, "gradients" if fixed else "communication", cpp=cpp))
                left -= n
        if fixed:
            l.hooks["make_grad"] = lambda i: []
            l.grads = {"head": [], "embed": []}
        for step in range(3):
            r.step = step
            for micro in range(4):  # gradient accumulation: the gradients live through the next forwards
                l.step(tokens, optimizer=False)
            l.optimizer_step()
            if not fixed:
                l.zero_grad()

    def describe(r, rf):
        f = r.failure
        return ("Llama-3.2-1B-shaped pre-training under DDP on 8 A100-40GB (fp32 weights, bf16 autocast, AdamW, 4 micro-batches of %d "
                "tokens per optimizer step), DDP(model, bucket_cap_mb=100, gradient_as_bucket_view=False). DDP's reducer allocates its "
                "buckets at construction, %s (one fp32 copy of every gradient), and copies each gradient into them "
                "for the all-reduce. The gradients themselves (%s) live through the accumulation's next forwards, "
                "so every forward after the first holds both copies; with AdamW's moments the run fails in %s of step %d. With gradient_as_bucket_view=True the gradients live in the buckets and the same run "
                "peaks at %s reserved and completes."
                % (r.notes["tokens"], g(4 * M.LLAMA32_1B.params), g(4 * M.LLAMA32_1B.params), f["phase"], f["step"], g(rf.a.peak_reserved)))

    return Spec("ddp_llama32_1b_a100_bucket_copy_gradient_as_bucket_view_false", "communication_buffers", "DDP",
                make, program, describe, "gradient_as_bucket_view=True", rank_prefix=6)


def zero2_ipg_buckets():
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace")
    model = M.LLAMA3_8B
    world = 8
    tokens = 2048

    def make():
        r = Run("A100-40", outside=int(1.5 * GiB), device=0)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        user = "/workspace/LLaMA-Factory/src/llamafactory/train/sft/workflow.py"
        sp = P.sp
        ds = sp + "/deepspeed/runtime/zero/stage_1_and_2.py"
        tr = sp + "/transformers/trainer.py"
        l = Loop(r, P, model, user, ckpt="reentrant", param_dtype=2, grad_dtype=2, opt_bytes=0,
                 fwd_frames=[(tr, 2240, "train", "return inner_training_loop("),
                             (tr, 2555, "_inner_training_loop", "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)"),
                             (tr, 3745, "training_step", "loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)"),
                             (tr, 3810, "compute_loss", "outputs = model(**inputs)")])
        l.load([(tr, 2240, "train", "return inner_training_loop("),
                (tr, 2392, "_inner_training_loop", "model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)"),
                (sp + "/deepspeed/runtime/engine.py", 295, "__init__", "self._configure_distributed_model(model)"),
                (sp + "/deepspeed/runtime/engine.py", 1245, "_configure_distributed_model", "self.module.to(self.device)")])
        with r.at([(sp + "/deepspeed/runtime/engine.py", 1604, "_configure_zero_optimizer", "optimizer = DeepSpeedZeroOptimizer("),
                   (ds, 380, "__init__", "self.single_partition_of_fp32_groups.append(self.parallel_partitioned_bit16_groups[i][partition_id].to(")]):
            master = r.alloc(4 * model.params // world, "optimizer_state")
        bucket = 500_000_000 if fixed else 5_000_000_000
        ipg = []
        grads_part = []
        state = []

        def make_grad(i):
            if not ipg:
                with r.at([(ds, 2037, "backward", "buf_0 = torch.empty(int(self.reduce_bucket_size),")]):
                    ipg.append(r.alloc(2 * bucket, "communication"))
                with r.at([(ds, 2044, "backward", "buf_1 = torch.empty(int(self.reduce_bucket_size),")]):
                    ipg.append(r.alloc(2 * bucket, "communication"))
            return None

        def post_backward(i):
            # each layer's gradients are copied into the IPG bucket and freed (contiguous_gradients)
            for t in l.grads.pop(i):
                r.free(t)
            l.grads[i] = []

        def after_step():
            pass

        l.hooks.update({"make_grad": make_grad, "post_backward": post_backward})
        for step in range(2):
            r.step = step
            l.step(tokens, optimizer=False)
            r.phase = "optimizer"
            with r.at([(user, 96, "run_sft", "train_result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)"),
                       (sp + "/deepspeed/runtime/engine.py", 2213, "step", "self._take_model_step(lr_kwargs)"),
                       (ds, 1868, "step", "self.single_partition_of_fp32_groups[i].grad = single_grad_partition")]):
                if not grads_part:
                    grads_part.append(r.alloc(4 * model.params // world, "gradients"))
                if not state:
                    state.extend(r.tensors([4 * model.params // world] * 2, "optimizer_state"))
            l.zero_grad()

    def describe(r, rf):
        f = r.failure
        return ("Llama-3-8B full fine-tune with LLaMA-Factory and DeepSpeed ZeRO-2 on 8 A100-40GB (bf16 weights, reentrant "
                "gradient checkpointing, 2048 tokens per rank) with a ds_config copied from a larger job: "
                "\"overlap_comm\": true, \"contiguous_gradients\": true, \"reduce_bucket_size\": 5e9. ZeRO-2 allocates its "
                "independent-partition gradient (IPG) buckets at the first backward, two of reduce_bucket_size bf16 "
                "elements with overlap_comm: 9.31 GiB each. The first backward fails at the second (%s of communication "
                "buckets live beside %s of weights). With reduce_bucket_size 5e8 the run peaks at %s and completes."
                % (g(f["live_by_category"].get("communication", 0)), g(f["live_by_category"].get("parameters", 0)),
                   g(rf.a.peak_reserved)))

    return Spec("zero2_llama3_8b_a100_40gb_ipg_buckets_5e9_overlap_comm", "communication_buffers", "DeepSpeed ZeRO-2",
                make, program, describe, "reduce_bucket_size 5e8", checkpointing=True)


ALL = [fsdp2_no_reshard, fsdp2_no_sync_accumulation, ddp_bucket_copy, zero2_ipg_buckets]
