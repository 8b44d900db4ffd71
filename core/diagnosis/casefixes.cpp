#include "core/diagnosis/fixladder.h"

#include "core/units.h"

namespace oomlens {

namespace {

void projectCaseSaving(Fix& fix, const std::string& what, const FixContext& context)
{
    if (!context.caseSavingBytes || *context.caseSavingBytes == 0)
        return;
    const uint64_t saving = *context.caseSavingBytes;
    fix.projectedSavingBytes = static_cast<int64_t>(saving);
    if (const auto spare = context.budget.spareAfter(saving))
        fix.fitsAfter = *spare >= 0;
    std::string fit = context.budget.fitPhrase(saving);
    if (!context.caseFitsBecause.empty() && fix.fitsAfter != true) {
        fix.fitsAfter = true;
        fit = "the run fits: " + context.caseFitsBecause;
    }
    fix.detail += " " + what + " " + formatBytes(saving) + ": " + formatSignedBytes(-static_cast<int64_t>(saving))
        + (fit.empty() ? "" : "; " + fit) + ".";
}

// The tools each backend gives for "who holds this device" and "which device does this process
// see": a ROCm, Intel or Ascend card is not seen through nvidia-smi or CUDA_VISIBLE_DEVICES.
struct DeviceTools
{
    std::string_view listProcesses;
    std::string_view listDevices;
    std::string_view visibleDevices;
};

DeviceTools deviceTools(Backend backend)
{
    switch (backend) {
    case Backend::Hip:
        return { "rocm-smi --showpids", "rocm-smi --showmeminfo vram", "HIP_VISIBLE_DEVICES" };
    case Backend::Xpu:
        return { "xpu-smi ps", "xpu-smi discovery", "ZE_AFFINITY_MASK" };
    case Backend::Npu:
        return { "npu-smi info", "npu-smi info", "ASCEND_RT_VISIBLE_DEVICES" };
    default:
        return { "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
            "nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv", "CUDA_VISIBLE_DEVICES" };
    }
}

Fix stopOtherProcessFix(const FixContext& context)
{
    Fix fix { FixKind::StopOtherProcess, "Free the card from the other process",
        "Another process holds memory on this GPU: a second run, a notebook kernel, a zombie from a crashed "
        "job, or a desktop session. Stop it, or wait for it, before starting the run.",
        std::string(deviceTools(context.backend).listProcesses)
            + "\nkill <PID>        # only if it is yours and no longer needed",
        std::nullopt, std::nullopt, false };
    if (context.otherProcessBytes > 0) {
        fix.detail += " It holds " + formatBytes(context.otherProcessBytes) + ".";
        if (context.budget.usableBytes && context.budget.liveBytes > 0) {
            MemoryBudget wider = context.budget;
            *wider.usableBytes += context.otherProcessBytes;
            const auto spare = wider.spareAfter(0);
            if (spare)
                fix.fitsAfter = *spare >= 0;
            const std::string fit = wider.fitPhrase(0);
            if (!fit.empty())
                fix.detail += " With that memory back, " + fit + ".";
        }
    }
    return fix;
}

Fix chooseGpuFix(const FixContext& context)
{
    const DeviceTools tools = deviceTools(context.backend);
    const std::string visible(tools.visibleDevices);
    return Fix { FixKind::ChooseGpu, "Run on a GPU nobody else uses",
        "Check which GPU the job actually landed on: " + visible
            + " must be set before PyTorch initializes the device, and a launcher or notebook may override it.",
        std::string(tools.listDevices) + "\n" + visible + "=1 python train.py   # set before torch touches the device",
        std::nullopt, std::nullopt, false };
}

Fix memoryFractionFix(const FixContext& context)
{
    Fix fix { FixKind::MemoryFraction, "Raise or remove the per-process memory limit",
        "set_per_process_memory_fraction caps what this process may allocate, whatever the card has free. "
        "Find where it is set (your code, a framework, a test harness) and raise it.",
        "torch.cuda.set_per_process_memory_fraction(0.95, device=0)\n"
        "# find the caller:\n"
        "grep -rn set_per_process_memory_fraction .",
        std::nullopt, std::nullopt, false };
    if (context.allowedBytes)
        fix.detail += " The limit is " + formatBytes(*context.allowedBytes) + " now.";
    return fix;
}

Fix mpsWatermarkFix()
{
    return Fix { FixKind::MpsWatermark, "Raise the MPS high-watermark limit",
        "MPS refuses allocations above a fraction of the machine's recommended working set. Raising the "
        "ratio lets it use more unified memory, at the risk of swapping or freezing the whole system.",
        "PYTORCH_MPS_HIGH_WATERMARK_RATIO=1.4 python train.py   # 0.0 removes the limit entirely", std::nullopt,
        std::nullopt, false };
}

Fix evalAccumulationFix(const FixContext& context)
{
    Fix fix { FixKind::EvalAccumulation, "Move predictions to the CPU while evaluating",
        "Outputs appended to a list during evaluation stay on the GPU until the loop ends; the Hugging Face "
        "Trainer does this by default. Move them to the CPU every few batches.",
        "# Hugging Face Trainer\n"
        "TrainingArguments(eval_accumulation_steps=8)\n"
        "\n"
        "# custom loop\n"
        "with torch.inference_mode():\n"
        "    for batch in eval_loader:\n"
        "        preds.append(model(**batch).logits.float().cpu())",
        std::nullopt, std::nullopt, false };
    projectCaseSaving(fix, "It frees the retained outputs,", context);
    return fix;
}

Fix evalBatchSizeFix()
{
    return Fix { FixKind::EvalBatchSize, "Set a smaller evaluation batch",
        "Without gradients a bigger batch is tempting, but one huge batch (or the whole validation set at "
        "once) still needs its activations and temporaries at the same time.",
        "TrainingArguments(per_device_eval_batch_size=8)\n"
        "eval_loader = DataLoader(eval_set, batch_size=8)",
        std::nullopt, std::nullopt, false };
}

Fix releaseReferencesFix(const FixContext& context)
{
    // The reference is the growing buffer itself: what stops it is a bound on its size.
    Fix fix = context.leakIsGrowingBuffer
        ? Fix { FixKind::ReleaseReferences, "Bound the tensor that grows every step",
              "One buffer is re-made larger by torch.cat every step and never trimmed (a queue of negatives that "
              "is never dequeued, a history of embeddings). Keep it at a fixed size: drop the oldest rows, or "
              "preallocate a ring buffer and write each step's rows into it in place.",
              "queue = torch.cat([queue, keys.detach()])[-max_queue:]  # dequeue the oldest\n"
              "# or, allocated once: queue[ptr:ptr + n] = keys.detach(); ptr = (ptr + n) % max_queue",
              std::nullopt, std::nullopt, false }
        : Fix { FixKind::ReleaseReferences, "Stop keeping tensors alive across steps",
              "Something keeps a reference from one step to the next: a loss accumulated as a tensor keeps its "
              "whole graph, outputs stored in a list keep their storage.",
              "total_loss += loss.item()              # not: total_loss += loss\n"
              "history.append(output.detach().cpu())  # not: history.append(output)",
              std::nullopt, std::nullopt, false };
    projectCaseSaving(fix, "It stops the growth of", context);
    return fix;
}

Fix optimizerForeachFix(const FixContext& context)
{
    Fix fix { FixKind::OptimizerForeach, "Budget for the first optimizer step",
        "Adam creates its two moment buffers at the first optimizer.step(), not at construction, so the "
        "peak after step 1 is higher than step 1 itself. The multi-tensor (foreach) path also allocates "
        "temporaries for a whole parameter group at once; foreach=False trades speed for a lower spike.",
        "optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, foreach=False)\n"
        "optimizer.zero_grad(set_to_none=True)\n"
        "# measure after two full steps, not one:\n"
        "print(torch.cuda.max_memory_allocated() / 2**30, \"GiB\")",
        std::nullopt, std::nullopt, false };
    if (context.optimizerStateExists) {
        fix.title = "Update one parameter at a time (foreach=False)";
        fix.detail = "The state already exists; the multi-tensor (foreach) update allocates its temporaries "
                     "for a whole parameter group at once, as large as a state buffer. foreach=False updates "
                     "one parameter at a time, so they are one tensor's worth, for a slower step.";
        fix.snippet = "optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, foreach=False)";
    }
    // One parameter at a time, the update's intermediates are one tensor's worth, not the group's.
    projectCaseSaving(fix, "With foreach=False the step no longer holds the group's intermediates,", context);
    return fix;
}

Fix lengthBucketingFix(const FixContext& context)
{
    Fix fix { FixKind::LengthBucketing, "Size for the longest batch: cap and bucket lengths",
        "Peak activation memory follows the longest sample in a batch, not the average. Put long samples "
        "together in small batches and set a hard maximum length, then test with the longest batch first.",
        "TrainingArguments(group_by_length=True)\n"
        "tokenizer(texts, truncation=True, max_length=2048)\n"
        "# smoke test: run one step on the longest batch before training\n"
        "longest = max(dataset, key=lambda sample: len(sample[\"input_ids\"]))",
        std::nullopt, std::nullopt, false };
    projectCaseSaving(fix, "Sized like a typical batch, the failing step would need less by", context);
    return fix;
}

Fix loadToCpuFix()
{
    return Fix { FixKind::LoadToCpu, "Load the checkpoint to the CPU first",
        "torch.load restores tensors to the device they were saved from, so a checkpoint saved on GPU lands "
        "on the GPU next to the model it is loaded into.",
        "state = torch.load(path, map_location=\"cpu\")\n"
        "model.load_state_dict(state)\n"
        "\n"
        "# Hugging Face: load in bf16 and let accelerate place the weights\n"
        "AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16, device_map=\"auto\")",
        std::nullopt, std::nullopt, false };
}

} // namespace

std::optional<Fix> makeCaseFix(FixKind kind, const FixContext& context)
{
    switch (kind) {
    case FixKind::StopOtherProcess:
        return stopOtherProcessFix(context);
    case FixKind::ChooseGpu:
        return chooseGpuFix(context);
    case FixKind::MemoryFraction:
        return memoryFractionFix(context);
    case FixKind::MpsWatermark:
        return mpsWatermarkFix();
    case FixKind::EvalAccumulation:
        return evalAccumulationFix(context);
    case FixKind::EvalBatchSize:
        return evalBatchSizeFix();
    case FixKind::ReleaseReferences:
        return releaseReferencesFix(context);
    case FixKind::OptimizerForeach:
        return optimizerForeachFix(context);
    case FixKind::LengthBucketing:
        return lengthBucketingFix(context);
    case FixKind::LoadToCpu:
        return loadToCpuFix();
    default:
        return std::nullopt;
    }
}

} // namespace oomlens
