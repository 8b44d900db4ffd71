#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// Where a piece of evidence points, so the GUI can move its time cursor there.
struct EvidenceLink
{
    int snapshotIndex = -1; // index into Case::snapshots; -1 for text-only evidence
    int device = 0;
    int64_t eventIndex = -1; // index in that device's trace
    int64_t timeUs = 0;
};

struct Evidence
{
    std::string text; // "activations 11.2 GiB of 14.0 GiB live at the OOM in backward of step 1"
    std::optional<EvidenceLink> link;
};

struct Fix
{
    std::string id; // ladder step: "micro_batch", "bf16", "checkpointing", "expandable_segments", ...
    std::string title;
    std::string detail;
    std::string snippet; // code or config, shown in a code block
    std::optional<int64_t> projectedSavingBytes;
    std::optional<bool> fitsAfter; // known only when the capacity and the bands are known
    bool changesExperiment = false;
};

struct Diagnosis
{
    std::string id; // one of the catalogue ids in product.md §3
    std::string title;
    double confidence = 0.0; // 0..1, calibrated to how much evidence there is
    std::string summary; // one or two sentences in plain words
    std::vector<Evidence> evidence;
    std::vector<Fix> fixes; // ladder order
};

} // namespace oomlens
