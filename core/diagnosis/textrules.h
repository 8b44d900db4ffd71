#pragma once

#include "core/diagnosis.h"
#include "core/diagnosis/fixladder.h"
#include "core/diagnosis/oomfacts.h"
#include "core/textinputs.h"
#include "core/units.h"

#include <initializer_list>
#include <string>
#include <vector>

// The text's rules, one per cause or per family of evidence (text<rule>.cpp); textdiagnosis.cpp
// runs them on each OOM message and merges the messages of one log.
//
// What a confidence means here: the probability, as the message's numbers support it, that the
// diagnosis names the cause the user has to fix. Each rule says in one comment what its figure
// stands for. 0.8 and above is kept for cases where the numbers leave no other reading (a request
// larger than the card, a printed limit with the card free, another process holding what was
// missing); a phase read from a traceback alone never goes above 0.6.
namespace oomlens::textrules {

inline constexpr uint64_t cudaContextAllowance = 1 * GiB; // context + cuBLAS/cuDNN workspaces: 0.3-1 GiB
// The largest single accelerators hold 288 GB (B300, MI355X); 192 GB ones (B200, MI300X) are common.
inline constexpr uint64_t largestCardBytes = 288ULL * 1000 * 1000 * 1000;
inline constexpr uint64_t commonLargeCardBytes = 192ULL * GiB;

void addEvidence(Diagnosis& diagnosis, std::string text);
// Whether any traceback function's name contains one of the needles.
bool mentions(const OomFacts& facts, std::initializer_list<const char*> needles);
const SummaryRow* summaryRow(const MemorySummary& summary, const char* key);
// The last memory_summary printed for that device: the one nearest the failure.
const MemorySummary* summaryFor(const TextFindings& findings, int device);

struct Candidates
{
    std::vector<Diagnosis> list;
    double strongestFullExplanation = 0.0; // a cause that alone explains why the request failed
    double capacityDamping = 1.0; // a phase case (eval, backward) explains a full card more specifically
    // Other processes are named, but the request would not have fit even with their memory free:
    // they are a finding, not the cause, and what the run itself holds still needs its answer.
    bool otherProcessFallsShort = false;
    void add(Diagnosis diagnosis) { list.push_back(std::move(diagnosis)); }
};

// textfragmentation.cpp
void diagnoseFragmentation(const OomFacts& f, const TextFindings& context, const FixContext& fixes, Candidates& out);
// textlargeallocation.cpp
bool requestIsXlaTempArena(const OomFacts& f);
void diagnoseRequestWithoutCard(const OomFacts& f, const FixContext& fixes, Candidates& out);
void diagnoseLargeAllocation(const OomFacts& f, const FixContext& fixes, Candidates& out);
// textbackendaccounting.cpp: limits and accounting a backend states in its own words
Diagnosis diagnosePlatformLimit(const OomFacts& f, const FixContext& fixes);
void diagnoseXlaProgram(const OomFacts& f, const FixContext& fixes, Candidates& out);
// textmemoryfraction.cpp
void diagnoseMemoryFraction(const OomFacts& f, const FixContext& fixes, Candidates& out);
// textotherprocess.cpp
void diagnoseOtherProcess(const OomFacts& f, const FixContext& fixes, Candidates& out);
void explainContainerSelf(const OomFacts& f, Diagnosis& top);
// textcapacity.cpp
void diagnoseCapacity(const OomFacts& f, const FixContext& fixes, Candidates& out);
// textprojectedstate.cpp
void diagnoseProjectedState(const OomFacts& f, const FixContext& fixes, Candidates& out);
// textsteplog.cpp
void diagnoseMemoryLog(const OomFacts& f, const FixContext& fixes, Candidates& out);
// textphase.cpp
void diagnosePhase(const OomFacts& f, const FixContext& fixes, Candidates& out);
// textranking.cpp
void rankCauseOverSymptom(const OomFacts& f, std::vector<Diagnosis>& list);

} // namespace oomlens::textrules
