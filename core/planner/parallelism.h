#pragma once

#include <algorithm>

namespace oomlens::planner {

// Megatron-style model parallelism of one training run (Narayanan et al. 2021; Korthikanti et al.
// 2022). Every degree 1 and both switches off: plain data parallelism, as the planner counted it
// before. The world is tensor x context x pipeline x data; experts are split over `expert` ranks
// inside data x context (their tensor split is the dense one's, Megatron's default).
struct Parallelism
{
    int tensor = 1; // --tp: every block's weights and most of its activations split over this many GPUs
    bool sequenceParallel = false; // --sequence-parallel: the norms' and dropouts' activations split too
    int context = 1; // --cp: the sequence split over this many GPUs (ring attention)
    int pipeline = 1; // --pp: the layers split into stages
    int virtualStages = 1; // --vpp: model chunks per pipeline rank (interleaved 1F1B); 1 = not interleaved
    int microbatches = 0; // --microbatches: per pipeline per step; 0 = not given (at least enough to fill the pipeline)
    int expert = 1; // --ep: experts split over this many GPUs
    bool distributedOptimizer = false; // Megatron's: master weights and optimizer state sharded over data parallel

    // Anything past plain data parallelism: the planner then counts Megatron's layout.
    bool any() const
    {
        return tensor > 1 || context > 1 || pipeline > 1 || expert > 1 || sequenceParallel || distributedOptimizer;
    }
    int modelParallelGpus() const { return tensor * context * pipeline; }
    // Data-parallel replicas in a world of `gpus` GPUs (at least 1).
    int dataParallel(int gpus) const { return std::max(1, gpus / std::max(1, modelParallelGpus())); }
    // The group the distributed optimizer and ZeRO shard the dense parameters' state over:
    // data parallel together with context parallel (Megatron reduces gradients over both).
    int denseShardGroup(int gpus) const { return dataParallel(gpus) * context; }
    // The same for expert parameters: what is left of data x context after expert parallelism.
    int expertShardGroup(int gpus) const { return std::max(1, denseShardGroup(gpus) / std::max(1, expert)); }
    // Microbatches in flight on a stage are capped by those a step pushes through; not given,
    // there are at least as many as the schedule keeps in flight (Megatron's assumption).
    int microbatchCap() const { return microbatches > 0 ? microbatches : 1 << 20; }
    // Megatron's interleaving penalty on the first stage's activations: 1 + (PP - 1) / (PP x VPP).
    double interleavingPenalty() const
    {
        return virtualStages > 1 ? 1.0 + static_cast<double>(pipeline - 1) / (pipeline * virtualStages) : 1.0;
    }
};

} // namespace oomlens::planner
