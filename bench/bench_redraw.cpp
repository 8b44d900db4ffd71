// Pan/zoom redraw of the GUI timeline on a big trace (default: 3M events built in memory, or a
// snapshot file), measured offscreen at full, mid and deep zoom: rebuild of the downsampled
// series + an immediate replot, median and p95 in ms. Also scrolling the 3M-row events table
// and the allocator state at the cursor. A benchmark program, not a test.
#include "bench/synthetictrace.h"
#include "core/analysis/allocatorstate.h"
#include "core/analysis/snapshotanalysis.h"
#include "parsers/snapshotreader.h"
#include "views/allocatorstatewidget.h"
#include "views/eventsview.h"
#include "views/liveallocationsview.h"
#include "views/models/eventsmodel.h"
#include "views/plots/timelinedata.h"
#include "views/timelinewidget.h"

#include <QApplication>
#include <QFile>
#include <QScrollBar>
#include <QTableView>
#include <qcustomplot.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

using namespace oomlens;

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// CPU time of the whole process (all threads), in ms: on a loaded machine the wall time of a
// frame includes waiting for a core, this does not.
double cpuMs()
{
    timespec now {};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return double(now.tv_sec) * 1e3 + double(now.tv_nsec) / 1e6;
}

struct Stats
{
    double median, p95, max;
};

Stats stats(std::vector<double> samples)
{
    std::sort(samples.begin(), samples.end());
    const auto at = [&](double q) { return samples[std::min(samples.size() - 1, size_t(q * double(samples.size())))]; };
    return { at(0.5), at(0.95), samples.back() };
}

void print(const char* what, const std::vector<double>& samples)
{
    const Stats s = stats(samples);
    std::printf("  %-34s median %6.2f ms   p95 %6.2f ms   max %6.2f ms   (%zu runs)\n", what, s.median, s.p95, s.max,
        samples.size());
}

} // namespace

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);

    size_t events = 3'000'000;
    std::shared_ptr<const Snapshot> snapshot;
    auto start = Clock::now();
    if (argc > 1 && std::strspn(argv[1], "0123456789") == std::strlen(argv[1])) {
        events = std::stoul(argv[1]);
    } else if (argc > 1) {
        QFile file(QString::fromLocal8Bit(argv[1]));
        if (!file.open(QIODevice::ReadOnly)) {
            std::fprintf(stderr, "cannot read %s\n", argv[1]);
            return 1;
        }
        const QByteArray bytes = file.readAll();
        const auto result = readSnapshot(std::string_view(bytes.constData(), size_t(bytes.size())));
        if (!result.snapshot) {
            std::fprintf(stderr, "%s: %s\n", argv[1], result.error.c_str());
            return 1;
        }
        snapshot = result.snapshot;
        std::printf("read %s in %.0f ms\n", argv[1], msSince(start));
    }
    if (!snapshot) {
        snapshot = bench::syntheticTrainingTrace(events, bench::StepShape::Varying);
        std::printf("built a synthetic trace in %.0f ms\n", msSince(start));
    }
    start = Clock::now();
    auto analysis = std::make_shared<const SnapshotAnalysis>(analyzeSnapshot(snapshot));
    std::printf("analyzed in %.0f ms\n", msSince(start));
    start = Clock::now();
    auto data = std::make_shared<const TimelineData>(analysis, analysis->primaryDevice);
    std::printf("timeline data (%lld events, %zu allocations) in %.0f ms\n", static_cast<long long>(data->eventCount()),
        data->device() ? data->device()->allocations.size() : size_t(0), msSince(start));
    if (data->eventCount() < 100) {
        std::fprintf(stderr, "too few events to measure\n");
        return 1;
    }

    TimelineWidget widget;
    widget.resize(1400, 600);
    widget.show();
    start = Clock::now();
    widget.setTimeline(data);
    widget.plot()->replot(QCustomPlot::rpImmediateRefresh);
    std::printf("first draw %.1f ms at %d px plot width\n\n", msSince(start), widget.plot()->axisRect()->width());

    const int64_t count = data->eventCount();
    const int64_t peak = std::max<int64_t>(0, data->device()->peakEvent);
    struct Level
    {
        const char* name;
        int64_t span;
    };
    const Level levels[] = { { "full", count }, { "mid (1/30)", std::max<int64_t>(100, count / 30) },
        { "deep (2000 events)", std::min<int64_t>(2000, count) } };
    const int runs = 60;
    int points = 0;
    for (const Level& level : levels) {
        std::printf("%s zoom:\n", level.name);
        if (level.span >= count)
            widget.resetZoom();
        else
            widget.zoomToEvents(
                std::max<int64_t>(0, peak - level.span / 2), std::max<int64_t>(0, peak - level.span / 2) + level.span);
        QCPAxis* axis = widget.plot()->xAxis;
        std::vector<double> pan, zoom, rebuild, replot, cpu;
        for (int i = 0; i < 2 * runs; ++i) {
            const auto t = Clock::now();
            const double cpuStart = cpuMs();
            // The range change rebuilds the downsampled series; the replot draws them.
            if (i < runs) {
                const double shift = axis->range().size() / 25 * (i % 10 < 5 ? 1 : -1);
                axis->setRange(axis->range().lower + shift, axis->range().upper + shift);
            } else {
                axis->scaleRange(i % 2 == 0 ? 0.85 : 1 / 0.85, axis->range().center());
            }
            const double rebuilt = msSince(t);
            const auto drawn = Clock::now();
            widget.plot()->replot(QCustomPlot::rpImmediateRefresh);
            replot.push_back(msSince(drawn));
            rebuild.push_back(rebuilt);
            (i < runs ? pan : zoom).push_back(msSince(t));
            cpu.push_back(cpuMs() - cpuStart);
            points = std::max(points, widget.plottedPointCount());
        }
        print("pan (rebuild + replot)", pan);
        print("zoom (rebuild + replot)", zoom);
        print("  of which rebuild", rebuild);
        print("  of which replot", replot);
        print("CPU time per frame (all threads)", cpu);
    }
    std::printf("most points per band drawn: %d\n\n", points);

    // Where a full-zoom frame goes: the replot again with one element left out at a time.
    widget.resetZoom();
    QCustomPlot* plot = widget.plot();
    auto replotCost = [&] {
        std::vector<double> samples;
        for (int i = 0; i < 30; ++i) {
            const double t = cpuMs();
            plot->replot(QCustomPlot::rpImmediateRefresh);
            samples.push_back(cpuMs() - t);
        }
        return stats(samples).median;
    };
    const double whole = replotCost();
    std::printf("full-zoom replot %.2f ms CPU median; without each element:\n", whole);
    auto without = [&](const char* what, const std::function<void(bool)>& show) {
        show(false);
        const double cost = replotCost();
        show(true);
        std::printf("  %-34s %6.2f ms  (element ~%.2f ms)\n", what, cost, whole - cost);
    };
    for (int i = 0; i < plot->plottableCount(); ++i) {
        const std::string name = "plottable '" + plot->plottable(i)->name().toStdString() + "'";
        without(name.c_str(), [&](bool on) { plot->plottable(i)->setVisible(on); });
    }
    for (int i = 0; i < plot->layerCount(); ++i) {
        QCPLayer* layer = plot->layer(i);
        // Hiding the layers holding the axis rect or the plottables skips the whole frame.
        if (layer->children().isEmpty() || layer->name() == QLatin1String("background")
            || layer->name() == QLatin1String("main"))
            continue;
        const std::string name = "layer '" + layer->name().toStdString() + "'";
        without(name.c_str(), [&](bool on) { layer->setVisible(on); });
    }
    without("tick labels", [&](bool on) {
        for (QCPAxis* axis : plot->axisRect()->axes())
            axis->setTickLabels(on);
    });

    // Moving the time cursor (a click, Shift+arrow) inside the view.
    // The first event loop pass also polishes and paints the newly shown window: not part of it.
    QApplication::processEvents();
    std::vector<double> cursor, cursorCpu;
    for (int i = 0; i < runs; ++i) {
        const auto t = Clock::now();
        const double cpuStart = cpuMs();
        widget.setCursorEvent(count * (i + 1) / (runs + 2));
        QApplication::processEvents();
        cursor.push_back(msSince(t));
        cursorCpu.push_back(cpuMs() - cpuStart);
    }
    print("cursor move + repaint", cursor);
    print("  CPU time", cursorCpu);
    std::printf("\n");

    EventsView eventsView;
    eventsView.resize(1400, 700);
    eventsView.show();
    eventsView.setTimeline(data);
    QApplication::processEvents();
    QScrollBar* bar = eventsView.table()->verticalScrollBar();
    std::vector<double> scroll, jump;
    for (int i = 0; i < runs; ++i) {
        auto t = Clock::now();
        bar->setValue(bar->value() + bar->pageStep());
        eventsView.table()->viewport()->repaint();
        scroll.push_back(msSince(t));
        t = Clock::now();
        bar->setValue(int(int64_t(bar->maximum()) * ((i * 7919) % runs) / runs));
        eventsView.table()->viewport()->repaint();
        jump.push_back(msSince(t));
    }
    std::printf("events table (%d rows):\n", eventsView.model()->rowCount());
    print("page down + repaint", scroll);
    print("jump anywhere + repaint", jump);
    start = Clock::now();
    eventsView.setFilter(EventsModel::Allocs, QStringLiteral("forward"));
    std::printf(
        "  filter allocations in 'forward'   %.1f ms (%d rows)\n\n", msSince(start), eventsView.model()->rowCount());

    std::vector<double> state;
    for (int i = 0; i < 20; ++i) {
        const auto t = Clock::now();
        const AllocatorState s = allocatorStateAt(data->snapshot(), *data->device(), count * i / 20);
        state.push_back(msSince(t));
        (void)s;
    }
    std::printf("allocator state at a cursor:\n");
    print("allocatorStateAt (on the pool)", state);
    // What the GUI thread spends when the cursor moves, and how long until the state is shown.
    AllocatorStateWidget allocator;
    allocator.resize(1400, 400);
    allocator.show();
    allocator.setTimeline(data);
    while (allocator.isBusy())
        QApplication::processEvents(QEventLoop::WaitForMoreEvents);
    std::vector<double> request, shown;
    for (int i = 0; i < 20; ++i) {
        const auto t = Clock::now();
        allocator.setEvent(count * i / 20);
        request.push_back(msSince(t));
        while (allocator.isBusy())
            QApplication::processEvents(QEventLoop::WaitForMoreEvents);
        shown.push_back(msSince(t));
    }
    print("setEvent on the GUI thread", request);
    print("until the state is on screen", shown);
    LiveAllocationsView live;
    live.resize(1400, 400);
    live.show();
    live.setTimeline(data);
    std::vector<double> liveTable;
    for (int i = 0; i < 20; ++i) {
        const auto t = Clock::now();
        live.setEvent(count * i / 20);
        liveTable.push_back(msSince(t));
    }
    print("live allocations table at a cursor", liveTable);
    return 0;
}
