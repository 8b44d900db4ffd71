#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::snapshotrules {

namespace {

// A snapshot records no card size. When what this process could hold is smaller than any
// training GPU would leave it, a card shared with something else is a likely reading. 0.6 when
// the run failed before training started (a busy card shows itself as the first weights not
// fitting), 0.45 once it has trained on that share (a card that small is then as likely);
// never more, since a tiny card or a deliberate limit read the same from the snapshot alone.
void processHeldImplausiblyLittle(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    if (!e.implausiblySmall)
        return;
    const uint64_t usable = *e.fixes.budget.usableBytes;
    Diagnosis d = makeDiagnosis(DiagnosisId::OtherProcess, e.isTrainingRun() ? 0.45 : 0.6, {});
    e.evidence(d,
        "this process could hold only " + formatBytes(usable) + " (" + formatBytes(e.oom.reservedBytes) + " reserved + "
            + formatBytes(e.oom.deviceFreeBytes) + " free on the card at the OOM in " + e.where() + ")",
        e.oom.eventIndex);
    e.evidence(d,
        "the snapshot records no card size; the smallest GPUs PyTorch trains on have 2 GiB, and a CUDA context "
        "leaves more than "
            + formatBytes(smallestPlausibleProcessBytes)
            + " of that: most likely another process (or a zombie) holds the rest");
    e.evidence(d,
        "to confirm, add nvidia-smi output from the failure, or the OOM message, whose \"total capacity\" "
        "gives the card's size");
    d.summary = "This process could hold only " + formatBytes(usable)
        + "; the card is most likely shared. The card's size is unknown from a snapshot alone.";
    appendFixes(d.fixes, { FixKind::StopOtherProcess, FixKind::ChooseGpu }, e.fixes);
    d.outlook = RunOutlook {};
    d.outlook->leadingFixRaisesCeiling = true;
    out.push_back(std::move(d));
}

// The most this process is known to have held before the failure: its reserve at any event (the
// card had room for it then), or its reserve plus the card's free memory at an earlier OOM.
struct HeldBefore
{
    uint64_t bytes = 0;
    int64_t event = -1;
};

HeldBefore heldBefore(const SnapshotEvidence& e)
{
    HeldBefore held { e.device.initialReservedBytes, -1 };
    const auto until = std::min<int64_t>(e.oom.eventIndex, static_cast<int64_t>(e.device.reservedAfter.size()));
    for (int64_t i = 0; i < until; ++i) {
        if (e.device.reservedAfter[static_cast<size_t>(i)] > held.bytes)
            held = { e.device.reservedAfter[static_cast<size_t>(i)], i };
    }
    for (const OomAnalysis& earlier : e.device.ooms) {
        if (earlier.eventIndex < e.oom.eventIndex && earlier.reservedBytes + earlier.deviceFreeBytes > held.bytes)
            held = { earlier.reservedBytes + earlier.deviceFreeBytes, earlier.eventIndex };
    }
    return held;
}

// Memory comes and goes on a card only through its processes. The CUDA driver let this process
// hold more earlier (cudaMalloc succeeded for every segment it reserved; an earlier OOM measured
// the card's free memory beside its reserve) than its reserve plus the card's free memory at the
// failure: the difference was taken by another process since, whatever the card's size.
bool cardTakenSince(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const uint64_t now = e.oom.reservedBytes + e.oom.deviceFreeBytes;
    const HeldBefore held = heldBefore(e);
    // A CUDA context of another library loaded meanwhile (cuDNN, NCCL) takes a few hundred MiB.
    if (held.bytes <= now + smallestPlausibleProcessBytes / 2)
        return false;
    const uint64_t taken = held.bytes - now;
    Diagnosis d = makeDiagnosis(
        DiagnosisId::OtherProcess, 0.6 + 0.3 * clamp01(safeRatio(taken, std::max(held.bytes, GiB)) / 0.5), {});
    e.evidence(d,
        "this process held " + formatBytes(held.bytes) + " on this card earlier"
            + (held.event >= 0 ? std::string(" (the driver granted every segment of it)") : std::string())
            + ", and could hold only " + formatBytes(now) + " at the OOM in " + e.where() + " ("
            + formatBytes(e.oom.reservedBytes) + " reserved + " + formatBytes(e.oom.deviceFreeBytes)
            + " free on the card)",
        held.event >= 0 ? held.event : e.oom.eventIndex);
    e.evidence(d,
        formatBytes(taken) + " of the card that this process had used was taken by something outside it in "
            + "between: another process (or a zombie) holds it, whatever the card's size");
    d.summary = "Another process took " + formatBytes(taken) + " of the card this run had been using.";
    appendFixes(d.fixes, { FixKind::StopOtherProcess, FixKind::ChooseGpu }, e.fixes);
    d.outlook = RunOutlook {};
    d.outlook->leadingFixRaisesCeiling = true;
    out.push_back(std::move(d));
    return true;
}

} // namespace

void otherProcess(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    if (!e.cardTotal) {
        if (!cardTakenSince(e, out))
            processHeldImplausiblyLittle(e, out);
        return;
    }
    const uint64_t total = *e.cardTotal;
    const uint64_t mine = e.oom.reservedBytes + e.oom.deviceFreeBytes;
    if (mine >= total)
        return;
    const uint64_t outside = total - mine;
    const uint64_t explained = (e.context.message ? e.context.message->selfNonPyTorchBytes.value_or(0) : 0) + GiB;
    if (outside <= explained || safeRatio(outside - explained, total) < 0.15)
        return;
    Diagnosis d = makeDiagnosis(
        DiagnosisId::OtherProcess, 0.45 + 0.35 * clamp01(safeRatio(outside - explained, total) / 0.5), {});
    e.evidence(d,
        formatBytes(outside) + " of the " + formatBytes(total) + " card (" + e.cardSource
            + ") was neither PyTorch's cache (" + formatBytes(e.oom.reservedBytes) + ") nor free ("
            + formatBytes(e.oom.deviceFreeBytes) + ") at the OOM",
        e.oom.eventIndex);
    d.summary = formatBytes(outside) + " of the card was held outside this run's cache.";
    appendFixes(d.fixes, { FixKind::StopOtherProcess, FixKind::ChooseGpu }, e.fixes);
    d.outlook = RunOutlook {};
    d.outlook->leadingFixRaisesCeiling = true;
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
