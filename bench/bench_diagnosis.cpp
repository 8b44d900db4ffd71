// How often the first diagnosis is right: runs the whole pipeline (load inputs -> analyzeCase)
// over the scenario families (A, B and the blind families C to F) and the pasted messages of
// tests/data/text_b and text_c, and prints per family
// and mode the accuracy of the top diagnosis, the confusion matrix (truth x top diagnosis), the
// calibration table (confidence bucket -> share right) and, for messages, how many numeric
// fields parse exactly and how often the failing phase is found.
//
//   bench_diagnosis [--data DIR] [--misses]
//
// DIR defaults to the source tree's tests/data. --misses lists every wrong top diagnosis.
#include "core/caseanalysis.h"
#include "parsers/inputloader.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace oomlens;

namespace {

struct Outcome
{
    std::string name;
    std::string truth;
    std::vector<std::string> alsoRight;
    std::string top; // "(none)" when the pipeline gave no diagnosis
    double confidence = 0.0;
    bool right() const { return top == truth || std::find(alsoRight.begin(), alsoRight.end(), top) != alsoRight.end(); }
};

std::optional<nlohmann::json> readJson(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return std::nullopt;
    const QByteArray bytes = file.readAll();
    auto parsed = nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size(), nullptr, false);
    if (parsed.is_discarded())
        return std::nullopt;
    return parsed;
}

std::vector<std::string> stringList(const nlohmann::json& label, const char* key)
{
    std::vector<std::string> out;
    if (label.contains(key) && label[key].is_array()) {
        for (const auto& item : label[key])
            if (item.is_string())
                out.push_back(item.get<std::string>());
    }
    return out;
}

Outcome judge(const Case& input, const std::string& name, const std::string& truth, std::vector<std::string> alsoRight)
{
    const CaseAnalysis analysis = analyzeCase(input);
    Outcome outcome { name, truth, std::move(alsoRight), "(none)", 0.0 };
    if (!analysis.diagnoses.empty()) {
        outcome.top = diagnosisIdText(analysis.diagnoses.front().id);
        outcome.confidence = analysis.diagnoses.front().confidence;
    }
    return outcome;
}

// A scenario folder: every <name>.json with a "case"; withText adds <name>.oom.txt and
// <name>.summary.txt where they exist.
std::vector<Outcome> runFamily(const QString& dir, bool withText)
{
    std::vector<Outcome> outcomes;
    const QStringList labels = QDir(dir).entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name);
    for (const QString& labelFile : labels) {
        const auto label = readJson(dir + QLatin1Char('/') + labelFile);
        if (!label || !label->contains("case") || !(*label)["case"].is_string())
            continue;
        const std::string truth = (*label)["case"].get<std::string>();
        if (truth.empty() || truth == "healthy" || truth == "none")
            continue; // a run without an OOM has no diagnosis to be right about
        const QString base = dir + QLatin1Char('/') + QFileInfo(labelFile).completeBaseName();
        if (!QFile::exists(base + QStringLiteral(".pickle")))
            continue;
        Case input;
        addFile(input, QString(base + QStringLiteral(".pickle")).toStdString());
        std::vector<std::string> alsoRight = stringList(*label, "also_acceptable");
        if (withText) {
            for (const char* suffix : { ".oom.txt", ".summary.txt" }) {
                const QString file = base + QLatin1String(suffix);
                if (QFile::exists(file))
                    addFile(input, file.toStdString());
            }
        } else {
            const auto extra = stringList(*label, "also_acceptable_without_text");
            alsoRight.insert(alsoRight.end(), extra.begin(), extra.end());
        }
        outcomes.push_back(judge(input, QFileInfo(labelFile).completeBaseName().toStdString(), truth, alsoRight));
    }
    return outcomes;
}

std::string shortId(const std::string& id)
{
    static const std::map<std::string, std::string> names { { "fragmentation", "frag" }, { "first_backward", "bwd1" },
        { "optimizer_step2", "opt2" }, { "longest_batch", "long" }, { "eval_accumulation", "eval" }, { "leak", "leak" },
        { "capacity", "cap" }, { "other_process", "other" }, { "memory_fraction_cap", "frac" },
        { "large_allocation", "large" }, { "host_memory", "host" }, { "working_set", "work" },
        { "pending_frees", "pend" }, { "communication_buffers", "comm" }, { "graph_capture", "graph" },
        { "colocated_engine", "coloc" }, { "(none)", "none" } };
    const auto found = names.find(id);
    return found != names.end() ? found->second : id.substr(0, 6);
}

void printReport(const char* title, const std::vector<Outcome>& outcomes, bool listMisses)
{
    const auto right = std::count_if(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.right(); });
    std::printf("\n== %s: %ld/%zu right (%.0f%%)\n", title, static_cast<long>(right), outcomes.size(),
        outcomes.empty() ? 0.0 : 100.0 * static_cast<double>(right) / static_cast<double>(outcomes.size()));
    if (outcomes.empty())
        return;

    // Confusion matrix: rows are the truth, columns the top diagnosis ('*' marks the diagonal).
    std::set<std::string> truths;
    std::set<std::string> tops;
    std::map<std::pair<std::string, std::string>, int> cells;
    for (const auto& o : outcomes) {
        truths.insert(o.truth);
        tops.insert(o.top);
        ++cells[{ o.truth, o.top }];
    }
    std::printf("%-22s", "truth \\ top");
    for (const auto& top : tops)
        std::printf(" %6s", shortId(top).c_str());
    std::printf("\n");
    for (const auto& truth : truths) {
        std::printf("%-22s", truth.c_str());
        for (const auto& top : tops) {
            const int n = cells[{ truth, top }];
            if (n == 0)
                std::printf(" %6s", ".");
            else
                std::printf(" %5d%s", n, truth == top ? "*" : " ");
        }
        std::printf("\n");
    }

    // Calibration: does a confidence of 0.8 mean right 8 times in 10?
    struct Bucket
    {
        const char* name;
        double low;
        double high;
        int count = 0;
        int right = 0;
    };
    Bucket buckets[] = { { "0.0-0.5", 0.0, 0.5 }, { "0.5-0.8", 0.5, 0.8 }, { "0.8-1.0", 0.8, 1.01 } };
    for (const auto& o : outcomes) {
        if (o.top == "(none)")
            continue;
        for (auto& b : buckets) {
            if (o.confidence >= b.low && o.confidence < b.high) {
                ++b.count;
                b.right += o.right() ? 1 : 0;
            }
        }
    }
    std::printf("confidence  count  right\n");
    for (const auto& b : buckets) {
        if (b.count == 0)
            std::printf("%-10s  %5d      -\n", b.name, 0);
        else
            std::printf("%-10s  %5d  %4.0f%%\n", b.name, b.count, 100.0 * b.right / b.count);
    }
    if (listMisses) {
        for (const auto& o : outcomes) {
            if (!o.right())
                std::printf(
                    "  miss  %-46s %-18s -> %s (%.2f)\n", o.name.c_str(), o.truth.c_str(), o.top.c_str(), o.confidence);
        }
    }
}

// The numbers a label may give for a message, and the parsed field each one is checked against.
struct NumericField
{
    const char* key;
    std::optional<uint64_t> OomMessage::*field;
};

const NumericField numericFields[]
    = { { "requested_bytes", &OomMessage::requestedBytes }, { "total_bytes", &OomMessage::totalBytes },
          { "free_bytes", &OomMessage::freeBytes }, { "allocated_bytes", &OomMessage::allocatedBytes },
          { "reserved_bytes", &OomMessage::reservedBytes }, { "allowed_bytes", &OomMessage::allowedBytes } };

void runMessages(const QString& dir, const char* title, bool listMisses)
{
    const auto labels = readJson(dir + QStringLiteral("/labels.json"));
    if (!labels || !labels->is_object()) {
        std::printf("\n== %s: no labels.json in %s\n", title, qPrintable(dir));
        return;
    }
    std::vector<Outcome> outcomes;
    int numeric = 0;
    int numericExact = 0;
    int withPhase = 0;
    int phaseFound = 0;
    std::vector<std::string> fieldMisses;
    for (const auto& [file, label] : labels->items()) {
        Case input;
        addFile(input, QString(dir + QLatin1Char('/') + QString::fromStdString(file)).toStdString());
        outcomes.push_back(
            judge(input, file, label.value("case", std::string()), stringList(label, "also_acceptable")));

        bool hasNumbers = false;
        bool exact = true;
        const OomMessage* message = input.text.oomMessages.empty() ? nullptr : &input.text.oomMessages.front();
        for (const auto& field : numericFields) {
            if (!label.contains(field.key) || !label[field.key].is_number())
                continue;
            hasNumbers = true;
            const auto want = label[field.key].get<uint64_t>();
            if (!message || !(message->*field.field) || *(message->*field.field) != want) {
                exact = false;
                fieldMisses.push_back(file + ": " + field.key);
            }
        }
        if (hasNumbers) {
            ++numeric;
            numericExact += exact ? 1 : 0;
        }
        const std::string phase = label.value("phase", std::string());
        if (!phase.empty() && phase != "unknown") {
            ++withPhase;
            phaseFound += phaseName(input.text.failingPhase()) == phase ? 1 : 0;
        }
    }
    printReport(title, outcomes, listMisses);
    std::printf("numeric fields parsed exactly: %d/%d messages (%.0f%%)\n", numericExact, numeric,
        numeric ? 100.0 * numericExact / numeric : 0.0);
    std::printf("failing phase found:           %d/%d messages (%.0f%%)\n", phaseFound, withPhase,
        withPhase ? 100.0 * phaseFound / withPhase : 0.0);
    if (listMisses) {
        for (const auto& miss : fieldMisses)
            std::printf("  field %s\n", miss.c_str());
    }
}

} // namespace

int main(int argc, char** argv)
{
    QString data = QStringLiteral(OOMLENS_TEST_DATA_DIR);
    bool listMisses = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
            data = QString::fromLocal8Bit(argv[++i]);
        } else if (std::strcmp(argv[i], "--misses") == 0) {
            listMisses = true;
        } else {
            std::fprintf(stderr, "usage: %s [--data DIR] [--misses]\n", argv[0]);
            return 2;
        }
    }
    std::printf("Top diagnosis against the labels (columns: frag fragmentation, bwd1 first_backward, opt2 "
                "optimizer_step2,\nlong longest_batch, eval eval_accumulation, cap capacity, other other_process, "
                "frac memory_fraction_cap,\nlarge large_allocation, host host_memory, work working_set, pend "
                "pending_frees, comm "
                "communication_buffers,\ngraph graph_capture, coloc colocated_engine, none no diagnosis)\n");
    const QString familyA = data + QStringLiteral("/scenarios");
    const QString familyB = data + QStringLiteral("/scenarios_b");
    printReport("family A (tests/data/scenarios), snapshot alone", runFamily(familyA, false), listMisses);
    printReport("family A, snapshot + OOM text + summary", runFamily(familyA, true), listMisses);
    printReport("family B (tests/data/scenarios_b), snapshot alone", runFamily(familyB, false), listMisses);
    printReport("family B, snapshot + OOM text + summary", runFamily(familyB, true), listMisses);
    runMessages(data + QStringLiteral("/text_b"), "text_b messages (tests/data/text_b), message alone", listMisses);
    const QString familyC = data + QStringLiteral("/scenarios_c");
    printReport("family C (tests/data/scenarios_c), snapshot alone", runFamily(familyC, false), listMisses);
    printReport("family C, snapshot + OOM text + summary", runFamily(familyC, true), listMisses);
    runMessages(data + QStringLiteral("/text_c"), "text_c messages (tests/data/text_c), message alone", listMisses);
    const QString familyD = data + QStringLiteral("/scenarios_d");
    printReport("family D (tests/data/scenarios_d), snapshot alone", runFamily(familyD, false), listMisses);
    printReport("family D, snapshot + OOM text", runFamily(familyD, true), listMisses);
    const QString familyE = data + QStringLiteral("/scenarios_e");
    printReport("family E (tests/data/scenarios_e, held out), snapshot alone", runFamily(familyE, false), listMisses);
    printReport("family E, snapshot + OOM text", runFamily(familyE, true), listMisses);
    const QString familyF = data + QStringLiteral("/scenarios_f");
    printReport("family F (tests/data/scenarios_f, held out), snapshot alone", runFamily(familyF, false), listMisses);
    printReport("family F, snapshot + OOM text", runFamily(familyF, true), listMisses);
    return 0;
}
