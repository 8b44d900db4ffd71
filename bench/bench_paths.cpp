// Every path a user, a script or an agent takes through oomlens, on the same snapshot file, side by
// side with CPython's pickle.load of it: the built `oomlens` run as a shell runs it (diagnose, its
// --json, report, compare, plan with --snapshot, a job of rank files), and the app's open
// (bench_open --child-app: views/caseloader.h's CaseLoader::load up to the complete case, what the
// window shows), and the MCP server's diagnose (`oomlens mcp` given the handshake and one
// tools/call of diagnose on its standard input: an agent's first question about the file). Each path is its own child
// process, timed from spawn to exit with wait4(), so the wall time includes starting the process and the peak RSS is
// the path's own; the runs are interleaved (path 1..N, then again) so a noisy neighbour hits every path alike.
//
//   bench_paths FILE [--runs N] [--oomlens PATH] [--bench-open PATH] [--job DIR] [--compare-with FILE]
//               [--python PATH] [--skip-python] [--only NAME,NAME]
//
// --job DIR times `oomlens diagnose DIR` (a folder of rank files; see bench/README.md for making one).
// --compare-with B compares FILE with B (default: FILE with itself, which still reads and analyzes
// both). The budget beside the peak RSS is product.md section 6's: the file's size + 100 bytes per
// event (events counted by `oomlens diagnose --json`), twice that for compare (two files held);
// the job has none here (its ranks are not this file).
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

struct Outcome
{
    bool ok = false;
    double wallMs = 0;
    double cpuMs = 0;
    double peakRssMiB = 0;
    std::string output; // stdout, when asked for
};

// Runs argv with stdin from `input` (a file; /dev/null when empty) and stdout to `capture` (a file) or
// /dev/null; stderr is kept in a file and printed when the run fails.
Outcome run(const std::vector<std::string>& argv, const std::string& capture = {}, const std::string& input = {})
{
    Outcome outcome;
    std::vector<char*> args;
    for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const std::string errPath = "/tmp/bench_paths_stderr." + std::to_string(getpid());
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, input.empty() ? "/dev/null" : input.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(
        &actions, 1, capture.empty() ? "/dev/null" : capture.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const auto start = std::chrono::steady_clock::now();
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
        std::fprintf(stderr, "cannot start %s: %s\n", args[0], std::strerror(spawned));
        return outcome;
    }
    int status = 0;
    rusage usage {};
    wait4(pid, &status, 0, &usage);
    const auto end = std::chrono::steady_clock::now();
    const auto ms
        = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3; };
    outcome.wallMs = std::chrono::duration<double, std::milli>(end - start).count();
    outcome.cpuMs = ms(usage.ru_utime) + ms(usage.ru_stime);
    outcome.peakRssMiB = static_cast<double>(usage.ru_maxrss) / 1024.0;
    // diagnose exits 0; a case whose inputs were all read but hold no OOM also exits 0. Exit 1 is
    // "an input could not be read", which a benchmark must not time.
    outcome.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!outcome.ok) {
        std::ifstream err(errPath);
        std::stringstream text;
        text << err.rdbuf();
        std::fprintf(stderr, "%s failed (status %d): %s\n", argv[0].c_str(), status, text.str().c_str());
    }
    std::remove(errPath.c_str());
    if (!capture.empty()) {
        std::ifstream out(capture);
        std::stringstream text;
        text << out.rdbuf();
        outcome.output = text.str();
    }
    return outcome;
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n == 0 ? 0 : n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string loadAverage()
{
    std::ifstream file("/proc/loadavg");
    std::string one, five, fifteen;
    file >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
}

double fileMiB(const std::string& path)
{
    struct stat st
    {
    };
    return stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_size) / (1024.0 * 1024.0) : 0;
}

// The trace events of the file, from the JSON the CLI prints (snapshots[0].trace_events).
double countEvents(const std::string& oomlens, const std::string& file)
{
    const Outcome out = run({ oomlens, "diagnose", "--json", file }, "/tmp/bench_paths_events.json");
    std::remove("/tmp/bench_paths_events.json");
    const char* key = "\"trace_events\": ";
    const size_t at = out.output.find(key);
    return at == std::string::npos ? 0 : std::atof(out.output.c_str() + at + std::strlen(key));
}

std::string siblingOf(const char* self, const std::string& relative)
{
    std::string dir(self);
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? std::string(".") : dir.substr(0, slash);
    return dir + "/" + relative;
}

struct Path
{
    std::string name;
    std::string what; // the command line, as the table prints it
    std::vector<std::string> argv;
    std::vector<Outcome> runs;
    std::string input = {}; // the file on its standard input, if any
};

// What an agent's first question about FILE sends `oomlens mcp` (app/mcp/): the MCP handshake, then
// one tools/call of diagnose. At the end of its input the server answers and exits, so the run is
// the server's start, the read, decode and diagnosis, the answer and its exit.
std::string writeMcpSession(const std::string& file, const std::string& path)
{
    std::string quoted;
    for (const char c : file) {
        if (c == '"' || c == '\\')
            quoted += '\\';
        quoted += c;
    }
    std::ofstream out(path);
    out << R"({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", )"
        << R"("capabilities": {}, "clientInfo": {"name": "bench_paths"}}})"
        << "\n"
        << R"({"jsonrpc": "2.0", "method": "notifications/initialized"})"
        << "\n"
        << R"({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "diagnose", "arguments": )"
        << R"({"inputs": [")" << quoted << R"("]}}})"
        << "\n";
    return path;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr,
            "usage: bench_paths FILE [--runs N] [--oomlens PATH] [--bench-open PATH] [--job DIR] "
            "[--compare-with FILE] [--python PATH] [--skip-python] [--only NAME,NAME]\n");
        return 2;
    }
    const std::string file = argv[1];
    int runs = 3;
    std::string oomlens = siblingOf(argv[0], "../app/oomlens");
    std::string benchOpen = siblingOf(argv[0], "bench_open");
    std::string python = "/usr/bin/python3";
    std::string job;
    std::string compareWith = file;
    std::string only;
    bool skipPython = false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        const bool hasValue = i + 1 < argc;
        if (a == "--runs" && hasValue)
            runs = std::max(1, std::atoi(argv[++i]));
        else if (a == "--oomlens" && hasValue)
            oomlens = argv[++i];
        else if (a == "--bench-open" && hasValue)
            benchOpen = argv[++i];
        else if (a == "--job" && hasValue)
            job = argv[++i];
        else if (a == "--compare-with" && hasValue)
            compareWith = argv[++i];
        else if (a == "--python" && hasValue)
            python = argv[++i];
        else if (a == "--only" && hasValue)
            only = "," + std::string(argv[++i]) + ",";
        else if (a == "--skip-python")
            skipPython = true;
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }

    const std::string report = "/tmp/bench_paths_report." + std::to_string(getpid()) + ".html";
    std::vector<Path> paths = {
        { "diagnose", "oomlens diagnose FILE", { oomlens, "diagnose", file }, {} },
        { "diagnose-json", "oomlens diagnose --json FILE", { oomlens, "diagnose", "--json", file }, {} },
        { "report", "oomlens report FILE -o R.html", { oomlens, "report", file, "-o", report }, {} },
        { "compare", "oomlens compare FILE B", { oomlens, "compare", file, compareWith }, {} },
        { "plan", "oomlens plan --model gpt2 --batch 8 --snapshot FILE",
            { oomlens, "plan", "--model", "gpt2", "--batch", "8", "--snapshot", file }, {} },
    };
    if (!job.empty())
        paths.push_back({ "job", "oomlens diagnose JOB_DIR", { oomlens, "diagnose", job }, {} });
    const std::string mcpSession = writeMcpSession(file, "/tmp/bench_paths_mcp." + std::to_string(getpid()) + ".jsonl");
    paths.push_back(
        { "mcp-diagnose", "oomlens mcp < initialize, tools/call diagnose FILE", { oomlens, "mcp" }, {}, mcpSession });
    if (access(benchOpen.c_str(), X_OK) == 0)
        paths.push_back(
            { "app-open", "bench_open --child-app FILE (CaseLoader::load)", { benchOpen, "--child-app", file }, {} });
    else
        std::fprintf(stderr, "no %s (built without the GUI?): the app's open is not measured\n", benchOpen.c_str());
    if (!only.empty()) {
        std::erase_if(paths, [&](const Path& p) { return only.find("," + p.name + ",") == std::string::npos; });
    }

    const double events = countEvents(oomlens, file);
    const double size = fileMiB(file);
    const double budget = size + events * 100.0 / (1024.0 * 1024.0);
    std::printf("file: %s (%.1f MiB, %.0f trace events), budget %.1f MiB (file + 100 B/event)\n", file.c_str(), size,
        events, budget);
    const std::string loadBefore = loadAverage();
    std::printf("oomlens: %s, %d runs per path, interleaved; load average before: %s\n", oomlens.c_str(), runs,
        loadBefore.c_str());

    for (int r = 0; r < runs; ++r) {
        for (Path& path : paths) {
            const std::string answers = path.input.empty() ? std::string() : path.input + ".out";
            Outcome outcome = run(path.argv, answers, path.input);
            if (!outcome.ok)
                return 1;
            if (!answers.empty()) {
                std::remove(answers.c_str());
                // A file the server could not read is a tool error in an answer, not an exit status.
                if (outcome.output.find("\"isError\":false") == std::string::npos) {
                    std::fprintf(
                        stderr, "%s: no successful answer: %.400s\n", path.name.c_str(), outcome.output.c_str());
                    return 1;
                }
                outcome.output.clear();
            }
            path.runs.push_back(outcome);
        }
    }
    std::remove(report.c_str());
    std::remove(mcpSession.c_str());

    double pickleMs = 0;
    double pickleRss = 0;
    if (!skipPython) {
        const char* script = "import pickle, sys\nwith open(sys.argv[1], 'rb') as f:\n    pickle.load(f)\n";
        const Outcome outcome = run({ python, "-c", script, file });
        if (outcome.ok) {
            pickleMs = outcome.wallMs;
            pickleRss = outcome.peakRssMiB;
        }
    }

    std::string markdown; // the README's rows, printed last
    std::printf("%-14s %-52s %10s %10s %10s %10s %10s %8s %10s\n", "path", "command", "best ms", "median ms", "CPU ms",
        "RSS MiB", "max RSS", "budget", "vs pickle");
    double textMedian = 0;
    double appMedian = 0;
    for (const Path& path : paths) {
        std::vector<double> wall, cpu, rssRuns;
        for (const Outcome& o : path.runs) {
            wall.push_back(o.wallMs);
            cpu.push_back(o.cpuMs);
            rssRuns.push_back(o.peakRssMiB);
        }
        // The peak varies from run to run on a busy machine by up to the size of what is released on a
        // thread of its own (core/backgroundrelease.h: the mapping, the decoder's tables) when that
        // thread runs late: the median is the figure, the largest is printed beside it.
        const double rss = median(rssRuns);
        const double rssMax = *std::max_element(rssRuns.begin(), rssRuns.end());
        const double med = median(wall);
        if (path.name == "diagnose")
            textMedian = med;
        if (path.name == "app-open")
            appMedian = med;
        char versus[32] = "";
        if (pickleMs > 0)
            std::snprintf(versus, sizeof versus, "%.1fx", pickleMs / med);
        // compare holds both files at once: twice the budget. A job's ranks are summarized one
        // file at a time per worker, so it has no budget of this file's.
        const double pathBudget = path.name == "compare" ? 2 * budget : budget;
        std::printf("%-14s %-52s %10.0f %10.0f %10.0f %10.1f %10.1f %8s %10s\n", path.name.c_str(), path.what.c_str(),
            *std::min_element(wall.begin(), wall.end()), med, median(cpu), rss, rssMax,
            path.name == "job" ? "-" : (rss <= pathBudget ? "within" : "OVER"), versus);
        char row[512];
        char rssCell[64];
        if (path.name == "job")
            std::snprintf(rssCell, sizeof rssCell, "%.0f", rss);
        else
            std::snprintf(rssCell, sizeof rssCell, "%.0f (%.0f)%s", rss, pathBudget, rss <= pathBudget ? "" : " over");
        std::snprintf(row, sizeof row, "| %s | %s | %.0f / %.0f | %.0f | %s | %s |\n",
            markdown.empty()
                ? (std::string(file.substr(file.rfind('/') + 1)) + ", " + std::to_string(int(size + 0.5)) + " MiB, "
                    + std::to_string(int64_t(events)) + " events, load " + loadBefore.substr(0, loadBefore.find(' ')))
                      .c_str()
                : "",
            path.what.c_str(), *std::min_element(wall.begin(), wall.end()), med, median(cpu), rssCell, versus);
        markdown += row;
    }
    if (pickleMs > 0)
        std::printf("%-14s %-52s %10.0f %10s %10s %10.1f\n", "pickle.load", "python3: pickle.load(f)", pickleMs, "", "",
            pickleRss);
    for (const Path& path : paths) {
        if (path.name == "diagnose-json" && textMedian > 0) {
            std::vector<double> wall;
            for (const Outcome& o : path.runs)
                wall.push_back(o.wallMs);
            std::printf("diagnose --json / diagnose: %.2fx (target 1.3x)\n", median(wall) / textMedian);
        }
    }
    if (textMedian > 0 && appMedian > 0)
        std::printf("diagnose / app open: %.2fx (target 1.5x)\n", textMedian / appMedian);
    std::printf("load average after: %s\n", loadAverage().c_str());
    // bench/README.md's table is these rows, pasted: file, path, wall best / median ms, CPU ms
    // (median), peak RSS MiB (median; budget), pickle.load's wall time over the path's.
    std::printf("\nREADME rows (file | path | wall best / median ms | CPU ms | peak RSS MiB (budget) | pickle.load / "
                "path):\n%s",
        markdown.c_str());
    if (pickleMs > 0)
        std::printf("| | `pickle.load` | %.0f | | %.0f | |\n", pickleMs, pickleRss);
    return 0;
}
