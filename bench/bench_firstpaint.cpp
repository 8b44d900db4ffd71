// The app's first paint, timed from outside as a user meets it: the built `oomlens FILE` started
// as a shell starts it, from the spawn until the window first paints, until the timeline of the
// file is on screen (the overview's picture, or the Timeline tab for a big file) and until the
// case is complete; beside it `oomlens diagnose FILE`, spawn to exit. The app reports those
// moments itself when OOMLENS_STARTUP_TRACE is set (views/startuptrace.h: CLOCK_MONOTONIC, the
// clock this program reads before spawning it), and is killed once the timeline is painted. The
// runs are interleaved (app, diagnose, app, ...) so a noisy neighbour hits both alike.
//
//   bench_firstpaint FILE [--runs N] [--oomlens PATH] [--compare-with PATH]
//
// --compare-with times a second build in the same runs, alternating with the first (app A, app B,
// diagnose A, diagnose B, then B first), so a before/after pair on a loaded machine meets the same
// load and neither always starts right after the other was killed.
//
// The display is the environment's: run it under `xvfb-run -a` for the X11 plugin as a desktop
// has it; without DISPLAY (and without QT_QPA_PLATFORM) it sets QT_QPA_PLATFORM=offscreen. Each
// app run gets a fresh XDG_CONFIG_HOME, so no settings or recent files of a previous run count.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

const char* const marks[] = { "window-painted", "timeline-painted", "case-complete" };

int64_t monotonicNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::string siblingOf(const char* self, const std::string& relative)
{
    std::string dir(self);
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? std::string(".") : dir.substr(0, slash);
    return dir + "/" + relative;
}

// The environment for the app: ours, with the trace switched on and a config folder of its own.
std::vector<std::string> appEnvironment(const std::string& configHome)
{
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        if (std::strncmp(*e, "XDG_CONFIG_HOME=", 16) != 0)
            env.emplace_back(*e);
    }
    env.push_back("OOMLENS_STARTUP_TRACE=1");
    env.push_back("XDG_CONFIG_HOME=" + configHome);
    if (!std::getenv("DISPLAY") && !std::getenv("QT_QPA_PLATFORM") && !std::getenv("WAYLAND_DISPLAY"))
        env.push_back("QT_QPA_PLATFORM=offscreen");
    return env;
}

// One start of the app: milliseconds from the spawn to each mark it printed.
std::map<std::string, double> startApp(const std::string& oomlens, const std::string& file, int run)
{
    std::map<std::string, double> reached;
    char configHome[] = "/tmp/bench_firstpaint_XXXXXX";
    if (!mkdtemp(configHome))
        return reached;
    const std::vector<std::string> env = appEnvironment(configHome);
    std::vector<char*> envp;
    for (const std::string& e : env)
        envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    int pipeFds[2];
    if (pipe(pipeFds) != 0)
        return reached;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 2);
    posix_spawn_file_actions_addclose(&actions, pipeFds[0]);
    std::vector<char*> args = { const_cast<char*>(oomlens.c_str()), const_cast<char*>(file.c_str()), nullptr };
    const int64_t start = monotonicNs();
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(pipeFds[1]);
    if (spawned != 0) {
        std::fprintf(stderr, "cannot start %s: %s\n", args[0], std::strerror(spawned));
        close(pipeFds[0]);
        return reached;
    }
    // Read stderr line by line until the timeline is painted (or the app ends or 60 s pass).
    FILE* stream = fdopen(pipeFds[0], "r");
    char line[4096];
    std::string others;
    while (!reached.count("timeline-painted") && std::fgets(line, sizeof line, stream)) {
        char name[64];
        long long ns = 0;
        double sinceStart = 0, cpuMs = 0;
        const int fields = std::sscanf(line, "oomlens-startup %63s %lld %lf %lf", name, &ns, &sinceStart, &cpuMs);
        if (fields >= 2)
            reached[name] = static_cast<double>(ns - start) / 1e6;
        if (fields == 4)
            reached[std::string(name) + " CPU"] = cpuMs;
        if (fields < 2)
            others += line;
        if (monotonicNs() - start > 60'000'000'000)
            break;
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    std::fclose(stream);
    std::string remove = std::string("rm -rf ") + configHome;
    if (std::system(remove.c_str()) != 0)
        std::fprintf(stderr, "could not remove %s\n", configHome);
    if (!reached.count("timeline-painted"))
        std::fprintf(stderr, "run %d: the app never painted a timeline; it said:\n%s\n", run, others.c_str());
    return reached;
}

// `oomlens diagnose FILE`, spawn to exit, in milliseconds; nothing when it failed.
std::optional<double> diagnose(const std::string& oomlens, const std::string& file)
{
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    std::vector<char*> args = { const_cast<char*>(oomlens.c_str()), const_cast<char*>("diagnose"),
        const_cast<char*>(file.c_str()), nullptr };
    const int64_t start = monotonicNs();
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0)
        return std::nullopt;
    int status = 0;
    waitpid(pid, &status, 0);
    // diagnose exits 0 or 1 (a diagnosis or none); anything else is a failure.
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
        return std::nullopt;
    return static_cast<double>(monotonicNs() - start) / 1e6;
}

std::string bestMedian(std::vector<double> values)
{
    if (values.empty())
        return "—";
    std::sort(values.begin(), values.end());
    char text[64];
    std::snprintf(text, sizeof text, "%.0f / %.0f", values.front(), values[values.size() / 2]);
    return text;
}

std::string loadAverage()
{
    FILE* file = std::fopen("/proc/loadavg", "r");
    char text[64] = {};
    if (file) {
        if (!std::fgets(text, sizeof text, file))
            text[0] = '\0';
        std::fclose(file);
    }
    std::string load(text);
    return load.substr(0, load.find(' ', load.find(' ', load.find(' ') + 1) + 1));
}

} // namespace

namespace {

// One build's moments over the runs: ms from the spawn, and process CPU ms (" CPU" keys).
struct Build
{
    std::string path;
    std::map<std::string, std::vector<double>> times;
};

void printBuild(const std::string& file, const std::string& display, const Build& build)
{
    const auto& times = build.times;
    const auto at = [&](const std::string& key) {
        const auto it = times.find(key);
        return bestMedian(it == times.end() ? std::vector<double>() : it->second);
    };
    std::printf("\n%s\n", build.path.c_str());
    std::printf("%-18s %-30s %s\n", "moment", "ms from spawn: best / median", "process CPU ms: best / median");
    for (const char* mark : marks)
        std::printf("%-18s %-30s %s\n", mark, at(mark).c_str(), at(std::string(mark) + " CPU").c_str());
    std::printf("%-18s %s\n", "diagnose (exit)", at("diagnose").c_str());
    std::printf("| file | display | window painted | timeline painted (CPU) | case complete | `diagnose` | load |\n");
    const size_t slash = file.rfind('/');
    std::printf("| %s | %s | %s | %s (%s) | %s | %s | %s |\n",
        slash == std::string::npos ? file.c_str() : file.substr(slash + 1).c_str(), display.c_str(),
        at("window-painted").c_str(), at("timeline-painted").c_str(), at("timeline-painted CPU").c_str(),
        at("case-complete").c_str(), at("diagnose").c_str(), loadAverage().c_str());
}

int usage()
{
    std::fprintf(stderr, "usage: bench_firstpaint FILE [--runs N] [--oomlens PATH] [--compare-with PATH]\n");
    return 2;
}

} // namespace

int main(int argc, char** argv)
{
    std::string file;
    std::vector<Build> builds(1);
    builds[0].path = siblingOf(argv[0], "../app/oomlens");
    int runs = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--runs" && i + 1 < argc)
            runs = std::max(1, std::atoi(argv[++i]));
        else if (arg == "--oomlens" && i + 1 < argc)
            builds[0].path = argv[++i];
        else if (arg == "--compare-with" && i + 1 < argc)
            builds.push_back({ argv[++i], {} });
        else if (file.empty() && arg[0] != '-')
            file = arg;
        else
            return usage();
    }
    if (file.empty())
        return usage();
    const std::string display = std::getenv("DISPLAY") ? std::string("X11 ") + std::getenv("DISPLAY")
        : std::getenv("QT_QPA_PLATFORM")               ? std::getenv("QT_QPA_PLATFORM")
                                                       : "offscreen";
    std::printf("%s, %d runs, display %s, load average %s at the start\n", file.c_str(), runs, display.c_str(),
        loadAverage().c_str());
    for (int run = 0; run < runs; ++run) {
        // Each build goes first in every other run: the app started right after another was killed
        // meets the X server and the kernel still cleaning up after it.
        for (size_t i = 0; i < builds.size(); ++i) {
            Build& build = builds[(i + size_t(run)) % builds.size()];
            for (const auto& [mark, ms] : startApp(build.path, file, run))
                build.times[mark].push_back(ms);
        }
        for (size_t i = 0; i < builds.size(); ++i) {
            Build& build = builds[(i + size_t(run)) % builds.size()];
            if (const std::optional<double> ms = diagnose(build.path, file))
                build.times["diagnose"].push_back(*ms);
        }
    }
    bool painted = true;
    for (const Build& build : builds) {
        printBuild(file, display, build);
        const auto it = build.times.find("timeline-painted");
        painted = painted && it != build.times.end() && !it->second.empty();
    }
    return painted ? 0 : 1;
}
