#include "core/analysis/tracebackphase.h"

#include "core/analysis/framewords.h"
#include "core/analysis/phaseranking.h"
#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

namespace {

bool isAny(std::string_view value, std::initializer_list<std::string_view> options)
{
    return std::find(options.begin(), options.end(), value) != options.end();
}

bool isIdentifierChar(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// "Trainer.evaluate(self, eval_dataset)" (IPython) -> "evaluate"
std::string_view bareFunction(std::string_view function)
{
    const size_t paren = function.find('(');
    if (paren != std::string_view::npos)
        function = function.substr(0, paren);
    const size_t dot = function.rfind('.');
    if (dot != std::string_view::npos && dot + 1 < function.size())
        function = function.substr(dot + 1);
    return trimmed(function);
}

// One frame as the decision reads it: its words from the shared vocabulary, and its code line.
struct FrameRead
{
    std::string_view function;
    std::string_view code;
    uint32_t words = 0;
};

FrameRead readFrame(const TracebackFrame& frame)
{
    FrameRead read;
    read.function = bareFunction(frame.function);
    read.code = frame.code;
    read.words = frameWords(frame.filename, read.function);
    return read;
}

// A code line that calls into evaluation: "metrics = evaluate(model, loader)", "trainer.predict(ds)".
bool callsEvaluation(std::string_view code)
{
    for (std::string_view call : { "evaluate(", "validate(", "validation(", "compute_metrics(", "predict(",
             "eval_epoch(", "eval_step(", "run_eval(", "eval_loop(", "val_epoch(", "val_step(" }) {
        const size_t at = code.find(call);
        if (at == std::string_view::npos)
            continue;
        // The name must start there ("evaluate(" but not "reevaluate(").
        if (at == 0 || !isIdentifierChar(code[at - 1]))
            return true;
    }
    return false;
}

// The user's loop calling the model: "out = model(batch)", "logits = self.model(input_ids).logits",
// or running one of its methods: "self.model.sample(...)", "self.first_stage_model.decode(samples)"
// (a model object's own computation; loading, generation and backward through it are read first
// and outrank forward).
bool callsModel(std::string_view code)
{
    for (std::string_view call : { "model(", "net(", "module(" }) {
        for (size_t at = code.find(call); at != std::string_view::npos; at = code.find(call, at + 1)) {
            if (at == 0 || !isIdentifierChar(code[at - 1]))
                return true;
        }
    }
    for (size_t at = code.find("model."); at != std::string_view::npos; at = code.find("model.", at + 1)) {
        size_t end = at + 6;
        while (end < code.size() && isIdentifierChar(code[end]))
            ++end;
        const std::string_view method = code.substr(at + 6, end - at - 6);
        // Bookkeeping on the model object is not its computation (moving it is read as loading).
        if (!method.empty() && end < code.size() && code[end] == '('
            && !isAny(method,
                { "step", "to", "cuda", "cpu", "half", "float", "bfloat16", "train", "eval", "zero_grad", "parameters",
                    "named_parameters", "state_dict", "save_pretrained", "apply" }))
            return true;
    }
    return false;
}

bool containsAny(std::string_view code, std::initializer_list<std::string_view> parts)
{
    return std::any_of(parts.begin(), parts.end(), [code](std::string_view part) { return contains(code, part); });
}

// The words a source line adds to its frame's: what the user's own line calls.
bool codeRunsBackward(std::string_view code)
{
    return containsAny(code, { ".backward(", "run_backward(" });
}

bool codeStepsOptimizer(std::string_view code)
{
    return containsAny(code, { "optimizer.step(", "optim.step(", "scaler.step(" });
}

bool codeLoads(std::string_view code)
{
    return containsAny(code,
        { "torch.load(", "from_pretrained(", "load_state_dict(", "_load_from_state_dict(", "model.to(", "model.cuda(",
            ".unload(" });
}

bool codeEvaluates(std::string_view code)
{
    return containsAny(code, { ".generate(", ".evaluate(" }) || callsEvaluation(code);
}

bool codeRunsModel(std::string_view code)
{
    return contains(code, "forward_call(") || callsModel(code);
}

// The optimizer's words, as the snapshot's stacks count them.
constexpr uint32_t optimizerWords = WordOptimizer | WordOptimizerStepMath | WordOptimizerStateInit | WordZeroGrad;
constexpr uint32_t forwardWords = WordModuleCall | WordForwardName;
constexpr uint32_t evaluationWords = WordEvaluation | WordEvalLoop | WordEvaluationScript;

// torch.no_grad / inference_mode as a decorator shows up as decorate_context. Around the user's own
// function it marks evaluation or inference; libraries use it for their plumbing (loading weights,
// optimizer steps, a warm-up run, target assignment inside a loss), and a decorated module's
// forward sits inside a module call that the outer frames already place.
bool noGradWrapsUserCode(const std::vector<FrameRead>& frames, size_t index)
{
    if (!(frames[index].words & WordGradModeDecorator) || index + 1 >= frames.size())
        return false;
    const bool insideModuleCall = std::any_of(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(index),
        [](const FrameRead& outer) { return (outer.words & WordModuleCall) != 0; });
    return !(frames[index + 1].words & WordFramework) && !insideModuleCall;
}

// The clues every frame carries, at its depth from the innermost frame, for rankPhase: its words,
// and what its source line calls (the call into the frame below it, or the line that failed).
PhaseClues readClues(const std::vector<FrameRead>& frames)
{
    PhaseClues clues;
    for (size_t i = 0; i < frames.size(); ++i) {
        const FrameRead& frame = frames[i];
        const uint32_t words = frame.words;
        const size_t depth = frames.size() - 1 - i;
        // Frames are stored outermost first: the last one marked is the innermost.
        auto mark = [depth](size_t& slot, bool present) {
            if (present)
                slot = depth;
        };
        mark(clues.backward, (words & WordBackward) || codeRunsBackward(frame.code));
        mark(clues.optimizer, (words & optimizerWords) || codeStepsOptimizer(frame.code));
        mark(clues.load, (words & WordLoad) || codeLoads(frame.code));
        mark(clues.data, words & WordData);
        mark(clues.forward, (words & (forwardWords | WordCompiledProgram)) || codeRunsModel(frame.code));
        mark(
            clues.evaluation, noGradWrapsUserCode(frames, i) || (words & evaluationWords) || codeEvaluates(frame.code));
        mark(clues.weakLoad, words & (WordConstructor | WordDeviceContext));
        mark(clues.weakData, words & WordTensorToDevice);
        mark(clues.weakForward, words & WordModelLibrary);
        // The outermost set-up frame is the one the evidence names.
        if ((words & WordOptimizerSetup) && clues.optimizerSetup == PhaseClues::absent)
            clues.optimizerSetup = depth;
    }
    return clues;
}

// A tensor made from sizes and values alone (torch.zeros, torch.empty, x.new_ones, torch.randn_like):
// a buffer, a state or a test's allocation, which can belong to any phase, unlike an operation
// whose result is computed from the tensors it is given.
bool createsFromSizes(std::string_view code)
{
    return containsAny(code,
        { "torch.zeros", "torch.empty", "torch.ones", "torch.full", "torch.rand", "torch.arange", "torch.tensor(",
            "torch.eye(", "torch.linspace(", ".new_zeros(", ".new_empty(", ".new_ones(", ".new_full(", "_like(" });
}

// A call through an attribute: a tensor's method or a module's function ("torch.cat(", "x.expand(",
// "F.linear("), which runs in C++ when it is the innermost line. A bare call ("build_model(cfg)") is
// as likely the user's own Python whose frames the paste left out, so it decides nothing.
bool callsThroughAttribute(std::string_view code)
{
    for (size_t open = code.find('('); open != std::string_view::npos; open = code.find('(', open + 1)) {
        size_t start = open;
        while (start > 0 && (isIdentifierChar(code[start - 1]) || code[start - 1] == '.'))
            --start;
        const std::string_view callee = code.substr(start, open - start);
        const size_t dot = callee.rfind('.');
        if (dot != std::string_view::npos && dot + 1 < callee.size())
            return true;
    }
    return false;
}

// A line that computes: a tensor operation, not a raise, an import, an assert or a factory.
bool computes(std::string_view code)
{
    const bool raises = code.starts_with("raise ") || code == "raise";
    return !raises && callsThroughAttribute(code) && !code.starts_with("import ") && !code.starts_with("from ")
        && !code.starts_with("assert ") && !createsFromSizes(code);
}

// The phase and the frame that decided it.
struct Decision
{
    Phase phase = Phase::Unknown;
    const TracebackFrame* frame = nullptr;
};

// A traceback whose frames carry none of the signatures above can still say where the memory went:
// the innermost frame's line is what ran when the allocation failed (CPython lists every Python
// frame, so a line that calls a tensor operation is the one that allocated). Outside backward, the
// optimizer, loading, data and evaluation, which all leave their own frames, the operations a run
// executes are its forward computation (the model, the loss, a library's target assignment). The same
// holds for a library function run under no_grad (torch's decorator frame) with nothing else shown:
// a warm-up or inference pass. A `raise` line allocates nothing and a cut traceback may have lost the
// innermost frames, so neither decides.
Decision decideByElimination(const TracebackInfo& info, const std::vector<FrameRead>& frames)
{
    if (info.frames.empty() || info.truncated || info.exceptionLine.empty())
        return {};
    if (computes(trimmed(info.frames.back().code)))
        return { Phase::Forward, &info.frames.back() };
    for (size_t i = 0; i < frames.size(); ++i) {
        if (frames[i].words & WordGradModeDecorator)
            return { Phase::Forward, &info.frames[i] };
    }
    return {};
}

Decision decideFromFrames(const TracebackInfo& info, const std::vector<FrameRead>& frames)
{
    const RankedPhase ranked = rankPhase(readClues(frames));
    if (ranked.phase == Phase::Unknown)
        return decideByElimination(info, frames);
    if (ranked.depth >= frames.size())
        return { ranked.phase, nullptr };
    return { ranked.phase, &info.frames[frames.size() - 1 - ranked.depth] };
}

// The frame that decided, in words: "evaluate in trainer.py:2113 (metrics = self.evaluate())".
std::string evidence(const TracebackFrame& frame)
{
    std::string where = frame.filename;
    if (frame.line > 0)
        where += ':' + std::to_string(frame.line);
    if (frame.function.empty() && !frame.code.empty()) {
        // A frame line without its function, or only the code line the paste starts with.
        return frame.code
            + (frame.filename == pasteOpeningLineFile ? std::string(" — the paste's first line") : " at " + where);
    }
    std::string text = frame.function + " in " + where;
    if (!frame.code.empty())
        text += " (" + frame.code + ")";
    return text;
}

} // namespace

void decideTracebackPhase(TracebackInfo& info)
{
    std::vector<FrameRead> frames;
    frames.reserve(info.frames.size());
    for (const TracebackFrame& frame : info.frames) {
        frames.push_back(readFrame(frame));
        if (frames.back().words & WordCompiler)
            info.compiled = true;
    }
    const Decision decision = decideFromFrames(info, frames);
    info.phase = decision.phase;
    info.phaseEvidence = decision.frame ? evidence(*decision.frame) : std::string();
}

} // namespace oomlens
