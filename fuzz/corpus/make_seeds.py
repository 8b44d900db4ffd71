#!/usr/bin/env python3
"""Writes the fuzzing seed corpus with nothing but the standard library.

    python3 fuzz/corpus/make_seeds.py

Seeds are deliberately tiny (a fuzzer mutates small inputs far faster) but each one reaches a
different part of its parser: every pickle protocol and memo opcode, every container, every text
format. The output is deterministic; rerun after editing and commit the result. Crash reproducers
found by the fuzzers live beside the seeds as crash-*; this script never touches them.
"""

import base64
import gzip
import io
import json
import os
import pickle
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1024 * 1024
# Separates the inputs of one case in the `case` target (see fuzz/fuzztargets.h).
NEXT_INPUT = b"\x1e\x1e\x1e\x1e"


def frame(name, filename, line):
    return {"filename": filename, "line": line, "name": name}


TRAIN = frame("train_step", "train.py", 42)
FORWARD = frame("forward", "linear.py", 125)
STEP = frame("step", "adamw.py", 480)


def snapshot():
    """The newest era, cut to one segment, three events and an oom."""
    fwd = [FORWARD, TRAIN]
    opt = [STEP, TRAIN]
    base = 0x7F3000000000
    t = 1760000000000000
    trace = [
        {"action": "segment_alloc", "addr": base, "size": 64 * MiB, "stream": 0, "time_us": t, "frames": fwd},
        {"action": "alloc", "addr": base, "size": 40 * MiB, "stream": 0, "time_us": t + 1, "frames": fwd},
        {"action": "free_requested", "addr": base, "size": 40 * MiB, "stream": 0, "time_us": t + 2, "frames": fwd},
        {"action": "free_completed", "addr": base, "size": 40 * MiB, "stream": 0, "time_us": t + 3, "frames": fwd},
        {"action": "alloc", "addr": base, "size": 60 * MiB, "stream": 0, "time_us": t + 4, "frames": opt},
        {"action": "oom", "device_free": 3 * MiB, "size": 128 * MiB, "stream": 0, "time_us": t + 5, "frames": opt},
    ]
    return {
        "segments": [
            {"device": 0, "address": base, "total_size": 64 * MiB, "allocated_size": 60 * MiB,
             "active_size": 60 * MiB, "requested_size": 60 * MiB, "stream": 0, "segment_type": "large",
             "segment_pool_id": (0, 0), "is_expandable": False, "frames": fwd,
             "blocks": [
                 {"address": base, "size": 60 * MiB, "requested_size": 60 * MiB, "state": "active_allocated",
                  "frames": opt},
                 {"address": base + 60 * MiB, "size": 4 * MiB, "requested_size": 0, "state": "inactive",
                  "frames": []},
             ]},
        ],
        "device_traces": [trace],
        "external_annotations": [{"stage": "START", "name": "ProfilerStep#3", "device": 0, "time_us": t}],
        "allocator_settings": {"max_split_size": -1, "expandable_segments": False},
    }


def segment_list():
    """<=1.13: a bare list of segments with block history."""
    return [{"device": 0, "address": 0x7F0000000000, "total_size": 2 * MiB, "allocated_size": MiB,
             "active_size": MiB, "stream": 0, "segment_type": "small",
             "blocks": [{"size": MiB, "state": "active_allocated",
                         "history": [{"addr": 0x7F0000000000, "real_size": 1000, "frames": [TRAIN]}]},
                        {"size": MiB, "state": "inactive"}]}]


def odd_values():
    """Scalars and containers a snapshot never holds but a pickle may: big ints, floats, bytes,
    sets, frozensets, nested tuples, a shared list, unicode needing escapes."""
    shared = [1, 2]
    return {"segments": [], "device_traces": [[]], "x": [2 ** 70, -2 ** 63, 1.5, b"\x00\xff", {1, 2},
            frozenset({3}), ((1,), (2, 3)), shared, shared, "\u00e9\U0001F600\n\\", True, None, -1, 300]}


def memory_viz_html(buffer):
    buffer += b"\x00" * (3 - len(buffer) % 3)
    files = json.dumps([{"name": "snapshot.pickle", "base64": base64.b64encode(buffer).decode("ascii")}])
    return ("<!DOCTYPE html>\n<script type=\"module\">\nconst local_files = " + files + "\n</script>\n").encode()


def torch_zip(buffer, method, zip64=False):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as z:
        for name, data in (("archive/data.pkl", buffer), ("archive/version", b"3\n")):
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = method
            with z.open(info, "w", force_zip64=zip64) as entry:
                entry.write(data)
    return out.getvalue()


TEXT = {
    "oom_new.txt": b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
                   b"capacity of 79.25 GiB of which 1.50 GiB is free. Including non-PyTorch memory, this process has "
                   b"77.74 GiB memory in use. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 6.50 GiB "
                   b"is reserved by PyTorch but unallocated.\n",
    "oom_old.txt": b"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; "
                   b"1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)\n",
    "oom_mps.txt": b"MPS backend out of memory (MPS allocated: 3.11 GB, other allocations: 5.42 GB, max allowed: "
                   b"9.07 GB). Tried to allocate 720.00 MB on private pool.\n",
    "oom_xla.txt": b"ResourceExhaustedError: OOM when allocating tensor with shape[32,512,512] and type float on "
                   b"/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n",
    "oom_limit.txt": b"torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\n"
                     b"Currently allocated     : 9.43 GiB\nRequested               : 640.00 MiB\n"
                     b"Device limit            : 11.59 GiB\nFree (according to CUDA): 7.12 MiB\n",
    "traceback.txt": b"[rank1]: Traceback (most recent call last):\n"
                     b"[rank1]:   File \"/w/train.py\", line 74, in main\n[rank1]:     loss.backward()\n"
                     b"[rank1]:   File \"/t/autograd/graph.py\", line 825, in _engine_run_backward\n"
                     b"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a "
                     b"total capacity of 79.25 GiB of which 512.00 MiB is free.\n",
    "summary.txt": b"|===========================================================================|\n"
                   b"|                  PyTorch CUDA memory summary, device ID 1                 |\n"
                   b"|---------------------------------------------------------------------------|\n"
                   b"|            CUDA OOMs: 1            |        cudaMalloc retries: 3         |\n"
                   b"|===========================================================================|\n"
                   b"|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n"
                   b"|---------------------------------------------------------------------------|\n"
                   b"| Allocated memory      |   7680 MiB |  10137 MiB |   1234 GiB |   1226 GiB |\n"
                   b"|       from large pool |   7577 MiB |  10035 MiB |   1200 GiB |   1192 GiB |\n"
                   b"|---------------------------------------------------------------------------|\n"
                   b"| GPU reserved memory   |   9000 MiB |  10500 MiB |   1300 GiB |   1291 GiB |\n"
                   b"|---------------------------------------------------------------------------|\n"
                   b"| Allocations           |     512    |     700    |   99999    |   99487    |\n"
                   b"|===========================================================================|\n",
    "nvidia_smi.txt": b"| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
                      b"|   1  NVIDIA GeForce RTX 3090        Off | 00000000:02:00.0 Off |                  N/A |\n"
                      b"| 51%   60C    P2             280W / 350W |  23010MiB / 24576MiB |     97%      Default |\n"
                      b"|    1   N/A  N/A      4242      C   python                                    23000MiB |\n",
    "nvidia_smi_csv.txt": b"memory.used [MiB], memory.total [MiB]\n81000 MiB, 81920 MiB\n1234 MiB, 81920 MiB\n",
    "alloc_conf.txt": b"$ export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:256\n",
}


def sidecar():
    """The capture helper's sidecar (product.md section 5), every key it writes, the OOM fields set."""
    return {
        "format": "oomlens-capture/1", "snapshot": "capture.pickle", "device": 0,
        "device_name": "NVIDIA GeForce RTX 3090", "total_memory_bytes": 25438126080,
        "nvidia_smi": TEXT["nvidia_smi.txt"].decode(), "torch_version": "2.7.1+cu126", "cuda_version": "12.6",
        "alloc_conf": "max_split_size_mb:512,garbage_collection_threshold:0.8", "rank": 1, "world_size": 4,
        "exception": TEXT["oom_new.txt"].decode(),
        "oom": {"device": 0, "requested_bytes": 2147483648, "device_allocated_bytes": 23085449216,
                "device_free_bytes": 1288490188},
        "step": 12, "hostname": "node17", "pid": 28690, "time": "2026-11-24T02:15:00+0000",
    }


RULES_JSON = {"optimizer_state": ["adamw\\.py", "^step$"], "activations": "linear\\.py:forward"}
RULES_YAML = b"""# first match wins
optimizer_state:
  - adamw\\.py
  - ^step$
activations: [linear\\.py, forward]
parameters: '^train_step$'
"""

GPT2_CONFIG = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_head": 12,
               "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}
LLAMA_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
                "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
                "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
                "torch_dtype": "bfloat16", "tie_word_embeddings": False}

PLAN_FLAGS = {
    "preset_zero3": b"model llama-2-7b\nbatch 4\nseq 4096\nprecision mixed-bf16\noptimizer adamw\n"
                    b"zero 3\ngpus 8\nnodes 2\noffload optimizer\ncheckpointing every:2\ncard h100\n",
    "custom_dims": b"layers 24\nhidden 2048\nheads 16\nkv-heads 4\nvocab 32000\nffn 8192\n"
                   b"batch 8\nseq 2048\naccumulation 4\nattention eager\ncard 24GB\n",
    "qlora": b"model mistral-7b\nlora-rank 16\nqlora\nlora-targets qv\noptimizer adamw-paged-8bit\n"
             b"precision bf16\ncheckpointing full\ncard 16GB\n",
    "params_only": b"params 1.3e9\noptimizer sgd\nprecision fp32\nbatch 1\nseq 512\n",
    "megatron_3d": b"model llama-2-70b\ntp 8\npp 4\nvpp 2\nmicrobatches 16\nsequence-parallel\n"
                   b"distributed-optimizer\ngpus 8\nnodes 8\nbatch 1\nseq 4096\ncard 80GB\n",
    "serving": b"model llama-2-13b\ninference\nkv-dtype fp8\nweight-dtype int4\ngpu-memory-utilization 0.85\n"
               b"batch 32\nseq 4096\ncard 24GB\n",
}


def write(folder, name, data):
    os.makedirs(os.path.join(HERE, folder), exist_ok=True)
    with open(os.path.join(HERE, folder, name), "wb") as f:
        f.write(data)


def main():
    snap = snapshot()
    for protocol in range(0, 6):
        write("pickle", "snapshot_p%d.pickle" % protocol, pickle.dumps(snap, protocol=protocol))
    write("pickle", "segment_list_p2.pickle", pickle.dumps(segment_list(), protocol=2))
    write("pickle", "odd_values_p0.pickle", pickle.dumps(odd_values(), protocol=0))
    write("pickle", "odd_values_p4.pickle", pickle.dumps(odd_values(), protocol=4))

    buffer = pickle.dumps(snap, protocol=4)
    write("container", "snapshot.pickle", buffer)
    write("container", "snapshot.pickle.gz", gzip.compress(buffer, mtime=0))
    write("container", "snapshot_stored.zip", torch_zip(buffer, zipfile.ZIP_STORED))
    write("container", "snapshot_deflated.zip", torch_zip(buffer, zipfile.ZIP_DEFLATED))
    write("container", "snapshot_zip64.zip", torch_zip(buffer, zipfile.ZIP_STORED, zip64=True))
    write("container", "snapshot.json", json.dumps(snap, separators=(",", ":")).encode())
    write("container", "segment_list.json", json.dumps(segment_list(), separators=(",", ":")).encode())
    write("container", "snapshot_memory_viz.html", memory_viz_html(buffer))

    for name, data in TEXT.items():
        write("text", name, data)

    write("case", "snapshot_and_message", buffer + NEXT_INPUT + TEXT["oom_new.txt"])
    write("case", "snapshot_summary_smi",
          buffer + NEXT_INPUT + TEXT["summary.txt"] + NEXT_INPUT + TEXT["nvidia_smi.txt"])
    write("case", "text_only", TEXT["traceback.txt"] + TEXT["alloc_conf.txt"] + NEXT_INPUT + TEXT["oom_old.txt"])
    write("case", "segment_list", pickle.dumps(segment_list(), protocol=2) + NEXT_INPUT + TEXT["oom_old.txt"])

    side = json.dumps(sidecar(), indent=1).encode()
    write("sidecar", "sidecar.oomlens.json", side)
    write("sidecar", "sidecar_minimal.oomlens.json", json.dumps(
        {"device_name": "NVIDIA A100-SXM4-40GB", "total_memory_bytes": 42505273344}).encode())
    write("sidecar", "snapshot_then_sidecar", buffer + NEXT_INPUT + side)

    write("rules", "rules.json", json.dumps(RULES_JSON).encode() + NEXT_INPUT + buffer)
    write("rules", "rules.yaml", RULES_YAML + NEXT_INPUT + buffer)
    write("rules", "rules_only.yaml", RULES_YAML)

    write("config", "gpt2_config.json", json.dumps(GPT2_CONFIG, indent=2).encode())
    write("config", "llama3_8b_config.json", json.dumps(LLAMA_CONFIG, indent=2).encode())

    for name, data in PLAN_FLAGS.items():
        write("plan", name, data)


if __name__ == "__main__":
    main()
