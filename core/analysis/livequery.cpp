#include "core/analysis/livequery.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

namespace oomlens {

namespace {

bool isNoiseFrame(std::string_view name, std::string_view file)
{
    static constexpr std::array<std::string_view, 8> names = { "unwind::unwind", "CapturedTraceback::gather",
        "gather_with_cpp", "_start", "__libc_start_main", "PyEval_", "PyObject_", "PyFunction_" };
    static constexpr std::array<std::string_view, 10> files
        = { "core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c", "Objects/call.c",
              "Objects/methodobject.c", "pycore_ceval.h", "ceval.c", "cpython/abstract.h" };
    for (auto n : names) {
        if (name.find(n) != std::string_view::npos)
            return true;
    }
    for (auto f : files) {
        if (file.find(f) != std::string_view::npos)
            return true;
    }
    return false;
}

void sortTree(CallTreeNode& node)
{
    std::sort(node.children.begin(), node.children.end(),
        [](const CallTreeNode& a, const CallTreeNode& b) { return a.bytes > b.bytes; });
    for (auto& child : node.children)
        sortTree(child);
}

} // namespace

std::vector<uint32_t> liveAllocations(const DeviceAnalysis& d, int64_t event)
{
    std::vector<uint32_t> result;
    for (size_t i = 0; i < d.allocations.size(); ++i) {
        if (d.allocations[i].liveAfter(event))
            result.push_back(static_cast<uint32_t>(i));
    }
    return result;
}

CategoryBytes liveByCategory(const DeviceAnalysis& d, int64_t event)
{
    CategoryBytes bytes {};
    for (const Allocation& a : d.allocations) {
        if (a.liveAfter(event))
            bytes[static_cast<size_t>(a.category)] += a.requestedSize;
    }
    return bytes;
}

std::vector<CategoryBytes> liveByCategoryAt(const DeviceAnalysis& d, const std::vector<int64_t>& events)
{
    // An allocation is live after the events in [allocEvent, freeEvent): a run of the sorted
    // points, added at its first and taken off after its last (a difference array).
    std::vector<CategoryBytes> changes(events.size() + 1, CategoryBytes {});
    for (const Allocation& a : d.allocations) {
        const auto first = std::lower_bound(events.begin(), events.end(), a.allocEvent);
        const auto end = a.freeEvent < 0 ? events.end() : std::lower_bound(first, events.end(), a.freeEvent);
        if (first == end)
            continue;
        const auto category = static_cast<size_t>(a.category);
        changes[size_t(first - events.begin())][category] += a.requestedSize;
        changes[size_t(end - events.begin())][category] -= a.requestedSize;
    }
    std::vector<CategoryBytes> result(events.size());
    CategoryBytes running {};
    for (size_t i = 0; i < events.size(); ++i) {
        for (size_t c = 0; c < running.size(); ++c)
            running[c] += changes[i][c];
        result[i] = running;
    }
    return result;
}

std::vector<StackBytes> topStacks(const DeviceAnalysis& d, int64_t event, size_t limit)
{
    std::unordered_map<uint32_t, StackBytes> byStack;
    for (const Allocation& a : d.allocations) {
        if (!a.liveAfter(event))
            continue;
        StackBytes& s = byStack[a.stack.value];
        s.stack = a.stack;
        s.bytes += a.requestedSize;
        s.count += 1;
        s.byCategory[static_cast<size_t>(a.category)] += a.requestedSize;
    }
    std::vector<StackBytes> result;
    result.reserve(byStack.size());
    for (auto& [id, s] : byStack)
        result.push_back(s);
    std::sort(result.begin(), result.end(), [](const StackBytes& a, const StackBytes& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
    });
    if (result.size() > limit)
        result.resize(limit);
    return result;
}

CallTreeNode callTree(const Snapshot& snapshot, const DeviceAnalysis& d, int64_t event)
{
    CallTreeNode root;
    for (const StackBytes& s : topStacks(d, event, SIZE_MAX)) {
        root.bytes += s.bytes;
        root.count += s.count;
        CallTreeNode* node = &root;
        const auto frames = snapshot.frames->stack(s.stack);
        // Innermost first in the file; the tree grows from the outermost caller.
        for (size_t i = frames.size(); i-- > 0;) {
            const Frame& f = snapshot.frames->frame(frames[i]);
            if (isNoiseFrame(snapshot.strings->get(f.name), snapshot.strings->get(f.filename)))
                continue;
            auto it = std::find_if(node->children.begin(), node->children.end(),
                [&](const CallTreeNode& c) { return c.frame == frames[i]; });
            if (it == node->children.end()) {
                node->children.push_back(CallTreeNode { frames[i], 0, 0, {} });
                it = node->children.end() - 1;
            }
            it->bytes += s.bytes;
            it->count += s.count;
            node = &*it;
        }
    }
    sortTree(root);
    return root;
}

uint64_t staticBytes(const CategoryBytes& b)
{
    return b[static_cast<size_t>(Category::Parameters)] + b[static_cast<size_t>(Category::Gradients)]
        + b[static_cast<size_t>(Category::OptimizerState)];
}

uint64_t dynamicBytes(const CategoryBytes& b)
{
    uint64_t total = 0;
    for (uint64_t v : b)
        total += v;
    return total - staticBytes(b);
}

} // namespace oomlens
