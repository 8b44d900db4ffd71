#include "core/serving/workload.h"

#include "core/strings.h"

#include <algorithm>

namespace oomlens {

namespace {

std::string baseName(std::string_view file)
{
    const size_t slash = file.find_last_of("/\\");
    return lowercase(slash == std::string_view::npos ? file : file.substr(slash + 1));
}

bool isTrainingFrame(const TracebackFrame& frame)
{
    const std::string base = baseName(frame.filename);
    return frame.function == "backward" || frame.function == "training_step"
        || contains(frame.filename, "torch/autograd/") || contains(frame.filename, "torch/optim/")
        || contains(base, "train") || contains(base, "finetune");
}

std::optional<std::string> trainingFrame(const TracebackInfo& traceback)
{
    const auto frame = std::find_if(traceback.frames.begin(), traceback.frames.end(), isTrainingFrame);
    if (frame == traceback.frames.end())
        return std::nullopt;
    return "a training frame (" + frame->function + " in " + baseName(frame->filename) + ")";
}

// The recipe's lines that only training prints: what precision the weights have is not one.
std::optional<std::string> trainingRecipe(const TrainingRecipe& recipe)
{
    if (!recipe.optimizer.empty())
        return "the optimizer the log names (" + recipe.optimizer + ")";
    if (!recipe.sharding.empty())
        return "sharded training state (" + recipe.sharding + ")";
    if (recipe.masterWeights)
        return "fp32 master weights";
    if (recipe.activationCheckpointing)
        return recipe.checkpointingEvidence.empty() ? std::string("an activation checkpointing setting")
                                                    : recipe.checkpointingEvidence;
    return std::nullopt;
}

std::optional<std::string> messageTraining(const OomMessage& message)
{
    const std::string where
        = message.sourceLine > 0 ? " (the OOM at line " + std::to_string(message.sourceLine) + ")" : "";
    if (message.phase == Phase::Backward || message.phase == Phase::Optimizer)
        return "the failure is in the " + std::string(message.phase == Phase::Backward ? "backward" : "optimizer step")
            + where;
    if (message.traceback)
        if (auto frame = trainingFrame(*message.traceback))
            return frame;
    if (auto recipe = trainingRecipe(message.recipe))
        return recipe;
    // A progress line counts once it numbers its step: an engine's progress bar that prints a batch
    // size and free memory ("Capturing batches (bs=512 avail_mem=0.41 GB)") reads as a log point too.
    const auto step = std::find_if(
        message.memoryLog.begin(), message.memoryLog.end(), [](const MemoryLogPoint& p) { return p.step > 0; });
    if (step != message.memoryLog.end())
        return "the training loop's progress log (step " + std::to_string(step->step) + " at line "
            + std::to_string(step->sourceLine) + ")";
    if (message.trainableParameters)
        return "a trainable-parameter count" + where;
    return std::nullopt;
}

} // namespace

std::optional<std::string> textTrainingEvidence(const TextFindings& findings)
{
    for (const OomMessage& message : findings.oomMessages) {
        if (auto evidence = messageTraining(message))
            return evidence;
    }
    for (const TracebackInfo& traceback : findings.tracebacks) {
        if (auto frame = trainingFrame(traceback))
            return frame;
    }
    return std::nullopt;
}

} // namespace oomlens
