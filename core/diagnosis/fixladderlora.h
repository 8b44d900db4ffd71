#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

struct Snapshot;
struct TracebackInfo;

// One frame of the failing program, as a snapshot's stacks or a printed traceback show it.
struct ModelFrame
{
    std::string_view file;
    std::string_view function;
};

// Which layers a LoRA adapter wraps in the model the frames show. PEFT needs their names
// (target_modules); they differ by architecture (Llama's q_proj, GPT-2's c_attn, T5's q, a
// diffusers transformer's to_q), and a model made of convolutions has none worth adapting. Empty
// `modules`: the frames do not show a model LoRA applies to, and the ladder leaves the rung out.
struct LoraTarget
{
    std::string modules; // target_modules' Python value: ["q_proj", "v_proj"], "all-linear", an expression
    std::string taskType; // LoraConfig's task_type ("CAUSAL_LM"); empty where PEFT needs none
    std::string evidence; // what showed the model: "transformers' modeling_llama.py in the stacks"
    bool transformers = false; // a Hugging Face model: QLoRA can load its frozen base in 4 bits
    bool applies() const { return !modules.empty(); }
};

LoraTarget loraTargetOf(const std::vector<ModelFrame>& frames);
// Every frame the snapshot's stacks hold.
LoraTarget loraTargetOf(const Snapshot& snapshot);
// Every frame of the printed tracebacks.
LoraTarget loraTargetOf(const std::vector<const TracebackInfo*>& tracebacks);

} // namespace oomlens
