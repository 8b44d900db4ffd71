#include "parsers/text/tracebackparser.h"

#include "core/strings.h"
#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace oomlens::text {

namespace {

enum class FrameStyle : uint8_t { Python, IPython };

std::string withForwardSlashes(std::string_view path)
{
    std::string out(path);
    std::replace(out.begin(), out.end(), '\\', '/');
    return out;
}

// "Trainer.evaluate(self, eval_dataset)" -> "evaluate"
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

std::optional<TracebackFrame> parseFileFrame(std::string_view text)
{
    // text is everything after "File "
    TracebackFrame frame;
    std::string_view rest;
    if (!text.empty() && text.front() == '"') {
        const size_t close = text.find('"', 1);
        if (close == std::string_view::npos)
            return std::nullopt;
        frame.filename = std::string(text.substr(1, close - 1));
        rest = text.substr(close + 1);
    } else {
        // IPython 8: "File /path/trainer.py:2113, in Trainer.evaluate(...)"; also hand-edited
        // lines that lost the opening quote: File ~/bin/tabr.py", line 537, in evaluate
        size_t comma = text.find(", line ");
        if (comma == std::string_view::npos)
            comma = text.find(", in ");
        if (comma == std::string_view::npos)
            return std::nullopt;
        std::string_view name = text.substr(0, comma);
        if (name.ends_with("\""))
            name.remove_suffix(1);
        const size_t colon = name.rfind(':');
        if (colon != std::string_view::npos && colon + 1 < name.size() && isDigit(name[colon + 1])) {
            if (auto line = parseIntegerAt(name, colon + 1); line && *line < 100000000)
                frame.line = static_cast<int>(*line);
            name = name.substr(0, colon);
        }
        frame.filename = std::string(name);
        rest = text.substr(comma);
    }
    if (rest.starts_with(", line ")) {
        size_t end = 0;
        const auto line = parseIntegerAt(rest, 7, &end);
        if (!line)
            return std::nullopt;
        frame.line = static_cast<int>(std::min<uint64_t>(*line, 100000000));
        rest = rest.substr(end);
    }
    // ", in func" (CPython) or " in func" (faulthandler)
    if (rest.starts_with(", in "))
        frame.function = std::string(trimmed(rest.substr(5)));
    else if (rest.starts_with(" in "))
        frame.function = std::string(trimmed(rest.substr(4)));
    else if (!trimmed(rest).empty() && trimmed(rest) != ",")
        return std::nullopt; // a lone "," is a frame line cut at the end of a paste
    if (frame.filename.empty())
        return std::nullopt;
    return frame;
}

std::optional<TracebackFrame> parseOldIPythonFrame(std::string_view text)
{
    // "/usr/lib/python3.7/site-packages/jax/xla.py in _execute_compiled(compiled, avals)"
    const size_t in = text.find(" in ");
    if (in == std::string_view::npos || in == 0)
        return std::nullopt;
    const std::string_view file = text.substr(0, in);
    if (file.find(' ') != std::string_view::npos)
        return std::nullopt;
    if (!file.ends_with(".py") && !file.starts_with("<ipython-input"))
        return std::nullopt;
    const std::string_view call = text.substr(in + 4);
    const size_t paren = call.find('(');
    if (paren == std::string_view::npos || paren == 0)
        return std::nullopt;
    TracebackFrame frame;
    frame.filename = std::string(file);
    frame.function = std::string(call.substr(0, paren));
    return frame;
}

// A frame line whose start the paste lost: `ils/_contextlib.py", line 120, in decorate_context`,
// `/envs/x/lib/python3.6/site-packages/torch/nn/modules/module.py", line 605, in convert`. The closing
// quote, the line number and the function still make it a frame; what is left of the path is kept.
std::optional<TracebackFrame> parseCutFrameStart(std::string_view text)
{
    const size_t quote = text.find("\", line ");
    if (quote == std::string_view::npos || quote == 0 || text.substr(0, quote).find('"') != std::string_view::npos)
        return std::nullopt;
    auto frame = parseFileFrame("\"" + std::string(text));
    if (!frame || frame->line == 0 || frame->function.empty())
        return std::nullopt;
    return frame;
}

// A frame line behind something printed before it on the same line: "`ERROR:  File "/x/adam.py",
// line 505, in _multi_tensor_adam" (a logger's level, the poster's inline-code backtick). Only the
// full CPython form counts there, so prose that mentions a file is not read as a frame.
std::optional<TracebackFrame> parsePrefixedFrame(std::string_view text)
{
    const size_t at = text.find(" File \"");
    if (at == std::string_view::npos || text.substr(0, at).find('"') != std::string_view::npos)
        return std::nullopt;
    auto frame = parseFileFrame(text.substr(at + 6));
    if (!frame || frame->line == 0 || frame->function.empty())
        return std::nullopt;
    return frame;
}

std::optional<std::pair<TracebackFrame, FrameStyle>> parseFrame(std::string_view line)
{
    const std::string_view text = trimmed(line);
    if (!text.starts_with("File ")) {
        if (auto frame = parsePrefixedFrame(text))
            return std::make_pair(*frame, FrameStyle::Python);
        if (auto frame = parseCutFrameStart(text))
            return std::make_pair(*frame, FrameStyle::Python);
    }
    if (text.starts_with("File ")) {
        if (auto frame = parseFileFrame(text.substr(5))) {
            const bool ipython = text.size() > 5 && text[5] != '"' && !contains(text, ", line ");
            return std::make_pair(*frame, ipython ? FrameStyle::IPython : FrameStyle::Python);
        }
        return std::nullopt;
    }
    if (text.starts_with("Cell In[")) {
        TracebackFrame frame;
        const size_t comma = text.find(", line ");
        frame.filename = std::string(text.substr(0, comma));
        frame.function = "<cell>";
        if (comma != std::string_view::npos) {
            if (auto number = parseIntegerAt(text, comma + 7); number && *number < 100000000)
                frame.line = static_cast<int>(*number);
        }
        return std::make_pair(frame, FrameStyle::IPython);
    }
    if (auto frame = parseOldIPythonFrame(text))
        return std::make_pair(*frame, FrameStyle::IPython);
    return std::nullopt;
}

// One hop of a call chain a poster condensed by hand: "torch/_tensor.py:623 backward".
std::optional<TracebackFrame> parseChainHop(std::string_view hop)
{
    hop = trimmed(hop);
    const size_t space = hop.find(' ');
    if (space == std::string_view::npos)
        return std::nullopt;
    const std::string_view where = hop.substr(0, space);
    const std::string_view function = trimmed(hop.substr(space + 1));
    const size_t colon = where.rfind(':');
    if (colon == std::string_view::npos || !where.substr(0, colon).ends_with(".py") || function.empty())
        return std::nullopt;
    size_t end = 0;
    const auto line = parseIntegerAt(where, colon + 1, &end);
    if (!line || end != where.size() || *line >= 100000000)
        return std::nullopt;
    for (char c : function) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '<' || c == '>'))
            return std::nullopt;
    }
    TracebackFrame frame;
    frame.filename = std::string(where.substr(0, colon));
    frame.line = static_cast<int>(*line);
    frame.function = std::string(function);
    return frame;
}

// "train_ft.py:1208 _forward_backward_step -> torch/_tensor.py:623 backward", and its continuation
// "  -> autograd/graph.py:979 _engine_run_backward": frames outermost first, as CPython lists them.
// Empty unless every hop reads as one (a lone hop only on a continuation line).
std::vector<TracebackFrame> parseCallChain(std::string_view text)
{
    const bool continuation = text.starts_with("->");
    if (continuation)
        text.remove_prefix(2);
    else if (!contains(text, " -> "))
        return {};
    std::vector<TracebackFrame> frames;
    size_t begin = 0;
    while (begin <= text.size()) {
        size_t arrow = text.find("->", begin);
        if (arrow == std::string_view::npos)
            arrow = text.size();
        auto frame = parseChainHop(text.substr(begin, arrow - begin));
        if (!frame)
            return {};
        frames.push_back(std::move(*frame));
        begin = arrow + 2;
    }
    return frames;
}

// "--> 960   out_bufs = compiled.execute(input_bufs)", "   958   for i, x in ..."
bool parseNumberedLine(std::string_view line, bool* arrow, int* number, std::string_view* code)
{
    std::string_view text = trimmed(line);
    *arrow = false;
    if (text.starts_with("-")) {
        size_t dashes = 0;
        while (dashes < text.size() && text[dashes] == '-')
            ++dashes;
        if (dashes >= text.size() || text[dashes] != '>')
            return false;
        *arrow = true;
        text = trimmedLeft(text.substr(dashes + 1));
    }
    size_t end = 0;
    const auto value = parseIntegerAt(text, 0, &end);
    if (!value || (end < text.size() && text[end] != ' '))
        return false;
    *number = static_cast<int>(std::min<uint64_t>(*value, 100000000));
    *code = trimmed(text.substr(end));
    return true;
}

bool isMarkerLine(std::string_view text)
{
    return !text.empty() && text.find_first_not_of(" ^~") == std::string_view::npos;
}

bool isElision(std::string_view text)
{
    return text == "..." || (text.starts_with("...<") && text.ends_with(">..."));
}

bool looksLikeException(std::string_view text)
{
    size_t end = 0;
    while (end < text.size()
        && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' || text[end] == '.'))
        ++end;
    const std::string_view name = text.substr(0, end);
    if (name.empty() || (end < text.size() && text[end] != ':'))
        return false;
    for (std::string_view suffix : { "Error", "Exception", "Exit", "Interrupt", "Warning", "Failure", "Exhausted" }) {
        if (name.ends_with(suffix))
            return true;
    }
    return false;
}

bool isChainSeparator(std::string_view text)
{
    return text.starts_with("During handling of the above exception")
        || text.starts_with("The above exception was the direct cause");
}

// A paste that starts at the innermost frame's source line, its "File ..." line left behind:
//    attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
// torch.cuda.OutOfMemoryError: CUDA out of memory. ...
// The indented line right before the message, with nothing before it, is that frame's code.
constexpr std::string_view cutBeforeThisLine = "(cut before this line)";

std::optional<TracebackFrame> codeLineOpeningThePaste(const TextLines& lines, size_t messageLine)
{
    if (messageLine == 0)
        return std::nullopt;
    const std::string_view line = lines[messageLine - 1];
    const std::string_view code = trimmed(line);
    if (indentation(line) == 0 || code.empty() || !contains(code, "(") || looksLikeException(code))
        return std::nullopt;
    for (size_t before = 0; before + 1 < messageLine; ++before) {
        const std::string_view text = trimmed(lines[before]);
        if (!text.empty() && !text.starts_with("```"))
            return std::nullopt;
    }
    TracebackFrame frame;
    frame.filename = std::string(cutBeforeThisLine);
    frame.code = std::string(code);
    return frame;
}

} // namespace

std::optional<TracebackFrame> parseFrameLine(std::string_view line)
{
    if (auto parsed = parseFrame(line))
        return parsed->first;
    return std::nullopt;
}

TracebackScan findTracebacks(const TextLines& lines, const std::vector<char>& messageStarts)
{
    TracebackScan scan;
    std::optional<TracebackBlock> open;
    FrameStyle style = FrameStyle::Python;
    size_t frameIndent = 0;
    bool lastWasFrame = false;
    int blankRun = 0;
    int strayLines = 0;

    auto close = [&](std::optional<size_t> terminator, bool truncated) {
        if (!open)
            return;
        if (!open->info.frames.empty() || terminator) {
            open->terminator = terminator;
            if (terminator) {
                open->lastLine = *terminator;
                open->info.exceptionLine = normalizedWhitespace(lines[*terminator]);
            }
            open->info.truncated = truncated;
            decidePhase(open->info);
            scan.blocks.push_back(std::move(*open));
        }
        open.reset();
    };

    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string_view line = lines[i];
        const std::string_view text = trimmed(line);
        if (contains(text, "Traceback (most recent call last)")) {
            close(std::nullopt, false);
            open = TracebackBlock {};
            open->firstLine = open->lastLine = i;
            open->hasHeader = true;
            open->info.sourceLine = lines.lineNumber(i);
            lastWasFrame = false;
            blankRun = strayLines = 0;
            continue;
        }
        if (isChainSeparator(text)) {
            close(std::nullopt, false);
            scan.chainSeparators.push_back(i);
            continue;
        }
        if (!messageStarts[i]) {
            if (std::vector<TracebackFrame> chain = parseCallChain(text); !chain.empty()) {
                if (!open) {
                    open = TracebackBlock {};
                    open->firstLine = i;
                    open->info.sourceLine = lines.lineNumber(i);
                }
                style = FrameStyle::Python;
                frameIndent = indentation(line);
                for (TracebackFrame& frame : chain)
                    open->info.frames.push_back(std::move(frame));
                open->lastLine = i;
                lastWasFrame = false; // no source line follows a hand-condensed chain
                blankRun = strayLines = 0;
                continue;
            }
            if (auto parsed = parseFrame(line)) {
                if (!open) {
                    open = TracebackBlock {};
                    open->firstLine = i;
                    open->info.sourceLine = lines.lineNumber(i);
                }
                style = parsed->second;
                frameIndent = indentation(line);
                open->info.frames.push_back(std::move(parsed->first));
                open->lastLine = i;
                lastWasFrame = true;
                blankRun = strayLines = 0;
                continue;
            }
        }
        if (!open && messageStarts[i]) {
            if (auto frame = codeLineOpeningThePaste(lines, i)) {
                open = TracebackBlock {};
                open->firstLine = i - 1;
                open->info.sourceLine = lines.lineNumber(i - 1);
                open->info.frames.push_back(std::move(*frame));
                close(i, false);
                continue;
            }
        }
        if (!open)
            continue;
        if (text.empty()) {
            // IPython separates frames with blank lines; CPython never prints them, but pastes do.
            if (++blankRun > (style == FrameStyle::IPython ? 2 : 1) && !open->info.frames.empty())
                close(std::nullopt, false);
            continue;
        }
        if (isMarkerLine(text) || isElision(text) || text.starts_with("-----") || text.starts_with("```"))
            continue;
        blankRun = 0;
        if (open->info.frames.empty()) {
            // Header seen, no frame yet: the exception line may follow directly, or unrelated text.
            if (messageStarts[i] || looksLikeException(text))
                close(i, false);
            else if (++strayLines > 3)
                open.reset();
            continue;
        }
        if (style == FrameStyle::IPython) {
            bool arrow = false;
            int number = 0;
            std::string_view code;
            if (parseNumberedLine(line, &arrow, &number, &code)) {
                TracebackFrame& frame = open->info.frames.back();
                if (arrow) {
                    if (frame.line == 0 || frame.function != "<cell>")
                        frame.line = number;
                    frame.code = std::string(code);
                }
                open->lastLine = i;
                continue;
            }
        }
        if (messageStarts[i] || looksLikeException(text)) {
            close(i, false);
            lastWasFrame = false;
            continue;
        }
        if (style == FrameStyle::Python && (lastWasFrame || indentation(line) > frameIndent)) {
            TracebackFrame& frame = open->info.frames.back();
            if (frame.code.empty() && lastWasFrame)
                frame.code = std::string(text);
            open->lastLine = i;
            lastWasFrame = false;
            continue;
        }
        // CPython prints the exception right after the last frame, whatever it looks like.
        close(i, false);
        lastWasFrame = false;
    }
    close(std::nullopt, true);
    return scan;
}

namespace {

struct PhaseRule
{
    Phase phase;
    std::string_view evidence;
};

bool isAny(std::string_view value, std::initializer_list<std::string_view> options)
{
    return std::find(options.begin(), options.end(), value) != options.end();
}

// Evaluation as the user's own code names it: eval_epoch, evaluate, run_validation, val_step,
// compute_metrics, predict_batch, test_step. torch.compile's eval_frame and TF's Tensor.eval are
// not evaluation, and neither is Python's builtin eval.
bool isLibraryFile(const std::string& file)
{
    return contains(file, "site-packages/") || contains(file, "dist-packages/") || contains(file, "/lib/python")
        || contains(file, "/torch/");
}

bool isEvaluationName(std::string_view function, const std::string& file)
{
    if (isAny(function,
            { "evaluate", "validate", "validation_step", "predict", "test_step", "eval_step", "evaluation_loop",
                "prediction_step", "prediction_loop", "generate", "inference", "validation_loop", "evaluate_model",
                "run_eval", "run_validation", "compute_metrics" }))
        return true;
    // Library code is full of names like _validate_args that run in every forward; only the user's own
    // files are read by their names.
    if (function.empty() || function == "eval" || isLibraryFile(file))
        return false;
    const std::string name = lowercase(function);
    const std::string_view n = name;
    if (n.starts_with("eval") || contains(n, "_eval") || contains(n, "evaluat") || contains(n, "validat")
        || contains(n, "compute_metric") || n.starts_with("predict") || contains(n, "_predict")
        || contains(n, "prediction")
        || isAny(n,
            { "generate", "inference", "run_inference", "test_step", "test_epoch", "test_loop", "val_step", "val_epoch",
                "val_loop", "run_val", "validation_step" })
        || n.starts_with("val_") || n.ends_with("_val"))
        return true;
    return false;
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
        if (at == 0 || !(std::isalnum(static_cast<unsigned char>(code[at - 1])) || code[at - 1] == '_'))
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
            const char before = at == 0 ? ' ' : code[at - 1];
            if (!(std::isalnum(static_cast<unsigned char>(before)) || before == '_'))
                return true;
        }
    }
    for (size_t at = code.find("model."); at != std::string_view::npos; at = code.find("model.", at + 1)) {
        size_t end = at + 6;
        while (end < code.size() && (std::isalnum(static_cast<unsigned char>(code[end])) || code[end] == '_'))
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

// Where an optimizer's update runs: torch.optim, and the optimizer packages of other libraries
// (fairseq/optim, bitsandbytes/optim, apex/optimizers, deepspeed's ops/adam).
bool isOptimizerCode(const std::string& file)
{
    return contains(file, "/optim/") || file.starts_with("optim/") || contains(file, "/optimizers/")
        || contains(file, "/ops/adam/");
}

// The user's own function that assembles a batch before the model sees it: "get_batch",
// "get_batch_pipe", "prepare_batch", "load_batch". Library helpers are not read by their names.
bool isBatchBuilderName(std::string_view function, const std::string& file)
{
    if (isLibraryFile(file) || !contains(function, "batch"))
        return false;
    for (std::string_view verb : { "get_", "load_", "prepare_", "make_", "next_", "fetch_", "build_" }) {
        if (function.starts_with(verb) || function.starts_with(std::string("_") + std::string(verb)))
            return true;
    }
    return false;
}

// The script the user ran, when its own name says it evaluates: "python test.py", "eval.py",
// "inference.py" (the <module> frame's file). Training scripts call the model too; a script
// named for testing runs it without backward or optimizer, which outrank this when they show.
bool isEvaluationScript(std::string_view function, const std::string& file)
{
    if (function != "<module>" || isLibraryFile(file))
        return false;
    std::string_view stem = file;
    if (const size_t slash = stem.rfind('/'); slash != std::string_view::npos)
        stem.remove_prefix(slash + 1);
    if (!stem.ends_with(".py"))
        return false;
    stem.remove_suffix(3);
    return isAny(stem,
        { "test", "eval", "evaluate", "evaluation", "validate", "validation", "val", "inference", "infer", "predict" });
}

// torch.no_grad / inference_mode as a decorator shows up as decorate_context. Around the user's own
// function it marks evaluation or inference; libraries use it for their plumbing (loading weights,
// optimizer steps, a warm-up run, target assignment inside a loss), and a decorated module's
// forward sits inside a module call that the outer frames already place.
bool isNoGradDecorator(const TracebackFrame& frame, const std::string& file)
{
    // A first frame line the paste cut at its start keeps only the path's tail ("ils/_contextlib.py").
    const std::string_view decoratorFile = "torch/utils/_contextlib.py";
    const bool cutTail = file.size() >= 10 && file.find('/') != std::string::npos && decoratorFile.ends_with(file);
    return bareFunction(frame.function) == "decorate_context"
        && (contains(file, decoratorFile) || cutTail || contains(file, "grad_mode.py"));
}

bool isModuleCall(std::string_view function)
{
    return isAny(function, { "_call_impl", "_wrapped_call_impl", "__call__" });
}

// Code that only runs inside a model's forward: the layers of model libraries (diffusers'
// attention processors, transformers' modeling files), torch.nn.functional, attention kernels. Load,
// backward, optimizer and evaluation frames outrank it, and a module's forward names the layer
// better: it decides only when no other frame does.
bool isModelLibraryCode(const std::string& file)
{
    for (std::string_view library : { "diffusers/models/", "transformers/models/", "timm/models/",
             "torchvision/models/", "torch/nn/functional.py", "flash_attn/", "xformers/ops/" }) {
        if (contains(file, library))
            return true;
    }
    return false;
}

// The signature frame `index` carries, strongest first within the frame; the frames around it
// say whose code a no_grad decorator wraps.
std::optional<Phase> framePhase(const std::vector<TracebackFrame>& frames, size_t index)
{
    const TracebackFrame& frame = frames[index];
    const std::string file = withForwardSlashes(frame.filename);
    const std::string_view function = bareFunction(frame.function);
    const std::string_view code = frame.code;

    if (contains(code, ".backward(") || contains(code, "run_backward(") || function == "_engine_run_backward"
        || (function == "backward"
            && (contains(file, "torch/_tensor.py") || contains(file, "torch/autograd/") || contains(file, "accelerate/")
                || contains(file, "deepspeed/"))))
        return Phase::Backward;
    if (isOptimizerCode(file) || contains(code, "optimizer.step(") || contains(code, "optim.step(")
        || contains(code, "scaler.step(") || function.starts_with("_multi_tensor_adam")
        || function.starts_with("_single_tensor_") || function.starts_with("_fused_adam"))
        return Phase::Optimizer;
    if (contains(file, "torch/serialization.py") || contains(code, "torch.load(")
        || (isAny(function, { "_apply", "convert" }) && contains(file, "torch/nn/modules/module.py"))
        || contains(function, "from_pretrained") || contains(code, "from_pretrained(")
        || contains(function, "load_state_dict")
        || contains(code, "load_state_dict(")
        // module._load_from_state_dict and the hooks that replace it: checkpoint weights materialised
        || (contains(function, "load") && contains(function, "state_dict")) || contains(code, "_load_from_state_dict(")
        || function == "caching_allocator_warmup" || function == "load_checkpoint" || contains(code, "model.to(")
        || contains(code, "model.cuda(") || contains(function, "load_model") || contains(function, "unload")
        || contains(code, ".unload(")
        // `with torch.device("cuda"): model = Net()` builds the model through this hook
        || contains(file, "torch/utils/_device.py"))
        return Phase::Load;
    if (contains(file, "torch/utils/data/") || contains(function, "collate") || contains(function, "pin_memory")
        || isBatchBuilderName(function, file))
        return Phase::Data;
    if (isNoGradDecorator(frame, file)) {
        const bool insideModuleCall = std::any_of(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(index),
            [](const TracebackFrame& outer) { return isModuleCall(bareFunction(outer.function)); });
        const bool wrapsUserCode = index + 1 < frames.size()
            && !isLibraryFile(withForwardSlashes(frames[index + 1].filename)) && !insideModuleCall;
        if (wrapsUserCode)
            return Phase::Eval;
    }
    if (isEvaluationScript(function, file) || contains(file, "transformers/generation/") || contains(code, ".generate(")
        || contains(code, ".evaluate(") || isEvaluationName(function, file) || callsEvaluation(code))
        return Phase::Eval;
    if (isAny(function, { "_call_impl", "_wrapped_call_impl", "forward", "_conv_forward" })
        || contains(code, "forward_call(")
        || callsModel(code)
        // JAX running a compiled program: a jitted apply, not yet known to be a training step
        || (contains(file, "jax/")
            && (function == "_execute_compiled" || function == "execute_sharded_on_local_devices")))
        return Phase::Forward;
    return std::nullopt;
}

int priority(Phase phase)
{
    switch (phase) {
    case Phase::Backward:
        return 6;
    case Phase::Optimizer:
        return 5;
    case Phase::Load:
        return 4;
    case Phase::Data:
        return 3;
    case Phase::Eval:
        return 2;
    case Phase::Forward:
        return 1;
    default:
        return 0;
    }
}

// A tensor made from sizes and values alone (torch.zeros, torch.empty, x.new_ones, torch.randn_like):
// a buffer, a state or a test's allocation, which can belong to any phase, unlike an operation
// whose result is computed from the tensors it is given.
bool createsFromSizes(std::string_view code)
{
    for (std::string_view factory :
        { "torch.zeros", "torch.empty", "torch.ones", "torch.full", "torch.rand", "torch.arange", "torch.tensor(",
            "torch.eye(", "torch.linspace(", ".new_zeros(", ".new_empty(", ".new_ones(", ".new_full(", "_like(" }) {
        if (contains(code, factory))
            return true;
    }
    return false;
}

// A call through an attribute: a tensor's method or a module's function ("torch.cat(", "x.expand(",
// "F.linear("), which runs in C++ when it is the innermost line. A bare call ("build_model(cfg)") is
// as likely the user's own Python whose frames the paste left out, so it decides nothing.
bool callsThroughAttribute(std::string_view code)
{
    for (size_t open = code.find('('); open != std::string_view::npos; open = code.find('(', open + 1)) {
        size_t start = open;
        while (start > 0
            && (std::isalnum(static_cast<unsigned char>(code[start - 1])) || code[start - 1] == '_'
                || code[start - 1] == '.'))
            --start;
        const std::string_view callee = code.substr(start, open - start);
        const size_t dot = callee.rfind('.');
        if (dot != std::string_view::npos && dot + 1 < callee.size())
            return true;
    }
    return false;
}

// A traceback whose frames carry none of the signatures above can still say where the memory went:
// the innermost frame's line is what ran when the allocation failed (CPython lists every Python
// frame, so a line that calls a tensor operation is the one that allocated). Outside backward, the
// optimizer, loading, data and evaluation, which all leave their own frames, the operations a run
// executes are its forward computation (the model, the loss, a library's target assignment). The same
// holds for a library function run under no_grad (torch's decorator frame) with nothing else shown:
// a warm-up or inference pass. A `raise` line allocates nothing and a cut traceback may have lost the
// innermost frames, so neither decides.
template <typename Decide> void decideByElimination(const TracebackInfo& info, const Decide& decide)
{
    if (info.frames.empty() || info.truncated || info.exceptionLine.empty())
        return;
    const TracebackFrame& innermost = info.frames.back();
    const std::string_view code = trimmed(innermost.code);
    const bool raises = code.starts_with("raise ") || code == "raise";
    const bool computes = !raises && callsThroughAttribute(code) && !code.starts_with("import ")
        && !code.starts_with("from ") && !code.starts_with("assert ") && !createsFromSizes(code);
    if (computes) {
        decide(Phase::Forward, innermost);
        return;
    }
    for (size_t i = 0; i < info.frames.size(); ++i) {
        if (isNoGradDecorator(info.frames[i], withForwardSlashes(info.frames[i].filename))) {
            decide(Phase::Forward, info.frames[i]);
            return;
        }
    }
}

} // namespace

void decidePhase(TracebackInfo& info)
{
    info.phase = Phase::Unknown;
    info.phaseEvidence.clear();
    const auto decide = [&info](Phase phase, const TracebackFrame& frame) {
        info.phase = phase;
        std::string where = frame.filename;
        if (frame.line > 0)
            where += ':' + std::to_string(frame.line);
        if (frame.function.empty() && !frame.code.empty()) {
            // A frame line without its function, or only the code line the paste starts with.
            info.phaseEvidence = frame.code
                + (frame.filename == cutBeforeThisLine ? std::string(" — the paste's first line") : " at " + where);
            return;
        }
        info.phaseEvidence = std::string(frame.function) + " in " + where;
        if (!frame.code.empty())
            info.phaseEvidence += " (" + frame.code + ")";
    };
    int best = 0;
    const TracebackFrame* layer = nullptr;
    for (const TracebackFrame& frame : info.frames) {
        const std::string file = withForwardSlashes(frame.filename);
        if (contains(file, "torch/_dynamo/") || contains(file, "torch/_inductor/"))
            info.compiled = true;
        if (isModelLibraryCode(file))
            layer = &frame;
        const auto phase = framePhase(info.frames, static_cast<size_t>(&frame - info.frames.data()));
        // Ties go to the innermost frame: frames are stored outermost first.
        if (phase && priority(*phase) >= best) {
            best = priority(*phase);
            decide(*phase, frame);
        }
    }
    if (info.phase == Phase::Unknown && layer)
        decide(Phase::Forward, *layer);
    if (info.phase == Phase::Unknown)
        decideByElimination(info, decide);
}

} // namespace oomlens::text
