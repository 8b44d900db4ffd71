"""graph_capture: a whole training step captured with torch.cuda.graph under DDP.

The recipe of PyTorch's CUDA-graphs notes: warm up on a side stream (DDP needs 11 eager
iterations there before capture), then capture forward, backward and optimizer.step() into a graph.
The warm-up's activations were cached in the side stream's segments of the default pool; a
capture allocates only from its private pool, and while a capture is under way the allocator may
not release cached segments (release_cached_blocks needs captures_underway to be empty), so the
capture needs a second copy of the step's activations beside the warm-up's cached one."""

from common import run_on
from allocator import GiB, MiB
from run import Run
import frames as F
import models as M
from loop import Loop
from spec import Spec, g, m

SIDE = 0x5611C2A0B8F0
CAP = 0x5611C2A0BA70


def on_stream(r, stream):
    def alloc(nbytes, category, extra=(), stream_=0, cpp=None, tag=None, **kw):
        return Run.alloc(r, nbytes, category, extra, stream=stream, cpp=cpp, tag=tag)
    r.alloc = alloc


def ddp_whole_step_graph_after_warmup():
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace")
    model = M.GPT2_XL
    tokens = 8 * 1024

    def make():
        return run_on("A100-80", outside=int(1.1 * GiB), device=2, visible=8)

    def program(r, fixed):
        user = "/workspace/gpt/train_graphed.py"
        l = Loop(r, P, model, user, param_dtype=4, grad_dtype=4, opt_bytes=8,
                 fwd_frames=[(user, 171, "main", "static_loss = model(static_input, static_target)")],
                 layer_frames=P.call("/workspace/gpt/model.py", 104, "forward", "x = x + self.attn(self.ln_1(x))"))
        l.load(P.to_device(user, 118, "model = GPT(config).to(device)"))
        ddp = [(user, 121, "main", "model = DDP(model, device_ids=[local_rank], gradient_as_bucket_view=True, static_graph=True)"),
               (P.t + "/nn/parallel/distributed.py", 1245, "_ddp_init_helper", "self.reducer = dist.Reducer(")]
        with r.at(ddp):
            left = 4 * model.params
            while left > 0:
                n = min(25 * MiB, left)
                r.alloc(n, "gradients", cpp=[("reducer.cpp", 0, "c10d::Reducer::initialize_buckets(std::vector<c10d::Reducer::BucketIndices, std::allocator<c10d::Reducer::BucketIndices> >)", None)])
                left -= n
        l.hooks["make_grad"] = lambda i: []  # the gradients are views into DDP's buckets
        l.grads = {"head": [], "embed": []}
        l.zero_grad = lambda: None
        # warm-up on a side stream, as the CUDA-graphs notes prescribe for DDP
        on_stream(r, SIDE)
        l.fwd = [(user, 160, "main", "loss = model(static_input, static_target)")]
        for it in range(11):
            r.step = it
            l.step(tokens)
        del r.alloc
        if fixed:
            r.a.empty_cache()  # torch.cuda.empty_cache() between the warm-up and the capture
        r.step = 11
        r.a.begin_capture(CAP, (1, 0))
        on_stream(r, CAP)
        l.fwd = [(user, 171, "main", "static_loss = model(static_input, static_target)")]
        l.step(tokens)
        del r.alloc
        r.a.end_capture(CAP)
        for it in range(12, 20):
            r.step = it  # replays: no new memory

    def describe(r, rf):
        f = r.failure
        return ("A GPT-2-XL-shaped model (1.56e9 parameters, fp32 weights and AdamW moments) pre-trained under DDP on 8 "
                "A100-80GB with gradient_as_bucket_view=True and static_graph=True, 8 x 1024 tokens per rank, whole "
                "training step captured with torch.cuda.graph as PyTorch's CUDA-graphs notes describe: 11 warm-up "
                "iterations on a side stream, then forward, backward and optimizer.step() captured. The warm-up's "
                "activations stay cached in the side stream's segments (%s reserved, %s of it allocated, at the "
                "failure); the capture may use only its private pool and may not release cached segments, and it "
                "fails in its %s with the pool at %s. With torch.cuda.empty_cache() between warm-up and capture the "
                "same capture peaks at %s reserved and the replays run."
                % (g(f["reserved"]), g(f["allocated_block_bytes"]), f["phase"], g(f["private_pool_reserved"]),
                   g(rf.a.peak_reserved)))

    return Spec("ddp_gpt2xl_a100_80gb_whole_step_capture_after_side_stream_warmup", "graph_capture", "DDP + torch.cuda.graph",
                make, program, describe, "torch.cuda.empty_cache() before capture", rank_prefix=2)



def recapture_while_old_graphs_alive():
    """A single-GPU gpt-fast-style service captures its prefill with torch.cuda.graph for four chunk
    lengths into one pool (graph_pool_handle()), each graph keeping its static fp32 logits. When the
    trainer pushes new weights it copies them in place and re-captures with
    `self.graphs = self.capture_all()`: the old dict, its graphs, their pool and their static
    outputs, is released only after the assignment, so during the new capture both pools exist."""
    P = F.Paths("/usr/local/lib/python3.11/site-packages", "/srv/gen")
    model = M.LLAMA32_3B
    chunks = [512, 1024, 2048, 4096]

    def make():
        return run_on("L4", outside=int(0.6 * GiB), device=0)

    def program(r, fixed):
        user = "/srv/gen/server.py"
        h, V = model.h, model.vocab
        r.phase = "load"
        with r.at(P.to_device(user, 52, "self.model = Transformer.from_name(name).to(device=device, dtype=torch.bfloat16)")):
            for i in range(model.layers):
                r.alloc(2 * model.layer_params, "parameters")
            r.alloc(2 * model.embed_params, "parameters")
        with r.at([(user, 58, "__init__", "self.model.setup_caches(max_batch_size=10, max_seq_length=8192)"),
                   ("/srv/gen/model.py", 118, "setup_caches", "b.attention.kv_cache = KVCache(max_batch_size, max_seq_length, self.config.n_local_heads, head_dim, dtype)"),
                   ("/srv/gen/model.py", 41, "__init__", "self.register_buffer('k_cache', torch.zeros(cache_shape, dtype=dtype))")]):
            for i in range(model.layers):
                r.tensors([10 * 8192 * model.hkv * 2] * 2, "kv_cache")
        layer = P.call("/srv/gen/model.py", 190, "forward", "h = x + self.attention(self.attention_norm(x), freqs_cis, mask, input_pos)")

        def capture_all(version, outer):
            pool = (version + 1, 0)
            kept = []
            for t in chunks:
                r.notes["chunk"] = t
                with r.at(outer, [(user, 96, "capture_all", "with torch.cuda.graph(g, pool=pool):"),
                                  (user, 97, "capture_all", "out[t] = self.model(static_ids[t], static_pos[t]).float()")]):
                    r.a.begin_capture(CAP, pool)
                    x = r.alloc(t * h * 2, "temporaries", stream=CAP)
                    for i in range(model.layers):
                        with r.at(layer):
                            tmp = r.tensors([t * h * 2 * 3, t * model.f * 2 * 2, t * h * 2], "temporaries", stream=CAP)
                            for b in tmp:
                                r.free(b)
                    lg = r.alloc(t * V * 2, "temporaries", stream=CAP)
                    kept.append(r.alloc(t * V * 4, "activations", stream=CAP))  # the graph's static output
                    r.free(lg)
                    r.free(x)
                    r.a.end_capture(CAP)
            return pool, kept

        r.phase = "eval"
        graphs = capture_all(0, [(user, 60, "__init__", "self.graphs = self.capture_all()")])
        for version in range(1, 4):
            r.step = version
            r.phase = "load"
            # the new weights are copied in place (load_state_dict): no new parameter memory
            r.phase = "eval"
            outer = [(user, 140, "reload", "self.graphs = self.capture_all()")]
            if fixed:  # self.graphs = None first: the old graphs and their pool go before the capture
                pool, kept = graphs
                for b in kept:
                    r.free(b)
                r.a.release_pool(pool)
                graphs = None
                r.a.empty_cache()  # a freed pool's segments go back only outside a capture
            new = capture_all(version, outer)
            if graphs is not None:
                pool, kept = graphs
                for b in kept:
                    r.free(b)
                r.a.release_pool(pool)
            graphs = new

    def describe(r, rf):
        f = r.failure
        return ("Not training: a gpt-fast-style generation service for a Llama-3.2-3B-shaped model on one L4, bf16 weights "
                "and a static KV cache for 10 x 8192 tokens (%s), prefill captured with torch.cuda.graph for chunks of "
                "512-4096 tokens into one pool, each graph keeping its fp32 logits as static output. On a weight push "
                "the service copies the new weights in place and runs self.graphs = self.capture_all(): the old graphs "
                "and their pool stay alive until the assignment, so the re-capture of version %d needs a second pool "
                "beside the first and fails at the %d-token chunk with %s in private pools. Dropping the old graphs "
                "first (self.graphs = None; torch.cuda.empty_cache()) the re-captures peak at %s reserved."
                % (g(f["live_by_category"].get("kv_cache", 0)), f["step"], r.notes["chunk"], g(f["private_pool_reserved"]),
                   g(rf.a.peak_reserved)))

    return Spec("gptfast_llama32_3b_l4_recapture_while_old_graphs_alive", "graph_capture", "gpt-fast-style server (torch.cuda.graph)",
                make, program, describe, "self.graphs = None and empty_cache() before re-capture", phase="eval")


ALL = [ddp_whole_step_graph_after_warmup, recapture_while_old_graphs_alive]
