#pragma once

#include "core/snapshot.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace oomlens::test {

// Builds a Snapshot from a tiny text form, for tests. One command per line, '#' starts a
// comment line. The builder runs a small first-fit allocator, so addresses, segment events and
// the dump-time segments/blocks all come out consistent; addresses are reused naturally.
//
//   device 1                                   following lines act on device 1 (default 0)
//   segment s0 0x7f0000000000 20MiB large stream=0 [expandable]
//                                              a segment reserved before the trace began
//   before p 512MiB load                       an allocation made before the trace (no event)
//   alloc a 512MiB fwd [in=s0] [stream=0] [t=123] [stack=file:name:line;file:name:line]
//                                              allocates; opens a 2 MiB (small) / 20 MiB (1-10 MiB)
//                                              / rounded segment with a segment_alloc event when
//                                              nothing fits
//   free a bwd                                 free_requested + free_completed
//   free_requested a / free_completed a        the two halves (pending-free windows)
//   segment_alloc s1 20MiB / segment_free s1   explicit segment events (s1 gets a fresh address)
//   pool=1,0 on segment, segment_alloc and alloc: the segment's segment_pool_id (a CUDA graph's
//                                              (N,0) or a MemPool's (0,N)); an alloc only fits in
//                                              segments of its pool
//   entrypools                                 from here on alloc, free and segment_alloc/free
//                                              entries record their pool_id, as newest PyTorch
//                                              writes it beside segment_pool_id
//   ctx="Torch-Compiled Region: 0/0" on alloc: the event's compile_context
//   map x 0x7f1000000000 60MiB [small] / unmap x 0x7f1000000000 20MiB   expandable segments
//                                              (large pool unless `small`; pages are 20 MiB / 2 MiB)
//   oom 1GiB free=100MiB [fwd]                 an oom event
//   snapshot                                   a snapshot event
//   annotate ProfilerStep#3 [stage=START]      an external annotation at the current time
//   ringbuffer 100                             keep only the last 100 events of this device
//   context alloc                              free events carry the allocation's stack
//                                              (record context='alloc'); default: their own
//
// Phase words pick a realistic stack (frames innermost first): load, fwd, fwdcpp (C++ frames
// first, Python last, as stacks='all' records), loss, bwd, bwdcpp, grad (AccumulateGrad),
// opt, optinit (_init_group), zero (zero_grad), eval, data, none (empty stack); PyTorch
// Lightning's closure inside optimizer.step(): lfwd, lbwd, lzero, and the step itself: lopt, loptinit.
// stack= takes explicit frames `file:name:line` separated by ';' (quote with "..." for spaces;
// the name may contain "::").
// Sizes: 512, 512B, 4KiB, 20MiB, 1.5GiB. Addresses: 0x hex or decimal.
class TraceBuilder
{
public:
    TraceBuilder();
    ~TraceBuilder();

    // Parses and applies lines; false with error() set on the first bad line.
    bool add(std::string_view text);
    std::shared_ptr<const Snapshot> build();
    const std::string& error() const { return m_error; }

    // Address of a named allocation or segment (its latest placement).
    uint64_t address(const std::string& name) const;
    // Index of the named allocation's alloc event in its device's final trace (after any
    // ringbuffer cut); -1 for `before` allocations and allocs the ring buffer dropped.
    int64_t allocEvent(const std::string& name) const;

private:
    struct State;
    std::unique_ptr<State> m_state;
    std::string m_error;
};

// One-shot form: QFAIL-friendly, returns null and sets *error on a bad line.
std::shared_ptr<const Snapshot> buildSnapshot(std::string_view text, std::string* error = nullptr);

// "512MiB" → bytes; nullopt-like 0 with ok=false on bad input.
uint64_t parseBytes(std::string_view text, bool* ok);

} // namespace oomlens::test
