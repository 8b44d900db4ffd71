#pragma once

#include "core/analysis/cardbandkind.h"
#include "core/runtimewords.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

struct Case;
struct CaseAnalysis;

// One figure of the three views of the card's memory, with where it comes from.
struct CardFigure
{
    enum class View : uint8_t {
        Allocator, // PyTorch's caching allocator: allocated, reserved
        Process, // this process as the driver sees it (nvidia-smi, "this process has X in use")
        Card, // the whole card: total, used, free, other processes
    };
    View view = View::Card;
    std::string key; // the JSON key: "allocated", "process_used", "card_free", ...
    std::string label; // "Reserved by PyTorch's allocator"
    std::optional<uint64_t> bytes; // empty: no input says it
    std::string source; // "OOM message", "nvidia-smi", "snapshot at the OOM", "capture sidecar", "derived"
    std::string meaning; // one line: what it holds, what to check
};

// One slice of the card's capacity, left to right; the slices add up to the card's total.
struct CardBand
{
    CardBandKind kind = CardBandKind::Unattributed; // the JSON's key is cardBandName(kind)
    std::string label;
    uint64_t bytes = 0;
};

// One figure the OOM message prints beside what the snapshot's trace says at its oom event: the
// two should tell the same moment, so a gap beyond the message's rounding means they do not (the
// snapshot is of another failure, or was taken after memory was freed).
struct OomFigureCheck
{
    std::string key; // "allocated", "reserved", "device_free", "private_pools"
    std::string label;
    uint64_t messageBytes = 0;
    uint64_t snapshotBytes = 0;
    bool agrees = true; // within the message's rounding (two decimals of its unit)
};

// The allocator's, the process's and the card's view of one device's memory, reconciled once from
// the OOM message, nvidia-smi, a capture sidecar and the snapshot, so that the overview, the HTML
// report and `diagnose` show the same table. The derivations are OomFacts' (diagnosis/oomfacts.h):
// when the message lacks a figure, the other inputs fill a copy of it and OomFacts derives the rest.
struct CardReconciliation
{
    int device = 0;
    std::vector<CardFigure> figures; // allocator, then process, then card
    std::vector<CardBand> bands; // the card's capacity by holder; empty when the figures do not add up
    std::optional<uint64_t> restOfCardBytes; // used − reserved: everything outside PyTorch's allocator
    std::vector<RestOfCardPart> parts; // what the rest usually is on this backend; empty when there is no rest
    // The verdict is about memory outside PyTorch's allocator (another process, NCCL, an engine), or
    // another diagnosis is and freeing that memory would make the run fit: only then does the list
    // of what the rest usually is explain this case, and the text prints it.
    bool restExplainsVerdict = false;
    // The rest of the card matters to the answer: it explains the verdict, or more of it than the
    // runtime itself takes would have covered the failed request (freeing it is then a fix). The
    // text, the report and the app list the rest's parts only then.
    bool restMatters = false;
    std::vector<std::string> notes; // the reading, and where the inputs disagree
    // The OOM message's figures against the snapshot at its oom event; empty unless the case has
    // both a message that prints them and a snapshot whose trace holds the oom.
    std::vector<OomFigureCheck> oomChecks;
    int64_t oomEvent = -1; // the snapshot's oom event the checks read

    // Known only when some input gives the card's total and what is used or free on it.
    bool available() const { return !figures.empty(); }
    const CardFigure* figure(std::string_view key) const;
};

// Reconciled once by diagnoseCase into CaseAnalysis::card (it reads the diagnoses); read that.
CardReconciliation reconcileCard(const Case& input, const CaseAnalysis& analysis);

} // namespace oomlens
