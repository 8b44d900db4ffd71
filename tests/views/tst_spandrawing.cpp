#include "views/plots/annotationstrip.h"
#include "views/plots/phaseshading.h"
#include "views/plots/spanpixels.h"

#include <QTemporaryDir>
#include <QTest>

#include <cstdint>

using namespace oomlens;

namespace {

// A fixed stream of numbers in [0, 1), the same on every platform.
class Sequence
{
public:
    double next()
    {
        m_state = m_state * 6364136223846793005ULL + 1442695040888963407ULL;
        return double(m_state >> 11) / double(uint64_t(1) << 53);
    }

private:
    uint64_t m_state = 42;
};

// Back to back runs from 0 to 1000 keys, most narrower than a pixel at full view, a few wide.
std::vector<PhaseShading::Run> phaseRuns()
{
    Sequence random;
    std::vector<PhaseShading::Run> runs;
    double key = 0;
    while (key < 1000) {
        const double width = random.next() < 0.97 ? 0.02 + 0.5 * random.next() : 5 + 20 * random.next();
        runs.push_back({ key, key + width, Phase(int(random.next() * 7)) });
        key += width;
    }
    return runs;
}

// Nested spans: steps at depth 0, regions inside them down to depth 4 (folded into the last row).
std::vector<AnnotationStrip::Bar> annotationBars()
{
    Sequence random;
    std::vector<AnnotationStrip::Bar> bars;
    double key = 0;
    while (key < 1000) {
        const double step = random.next() < 0.8 ? 0.1 + 2 * random.next() : 10 + 30 * random.next();
        bars.push_back({ key, key + step, 0, QStringLiteral("ProfilerStep#%1").arg(bars.size()), true });
        double inner = key;
        for (int depth = 1; depth <= 4 && inner < key + step; ++depth) {
            const double width = step * random.next() / 2;
            bars.push_back({ inner, inner + width, depth, QStringLiteral("AdamW.step"), random.next() < 0.7 });
            inner += width / 3;
        }
        key += step;
    }
    return bars;
}

struct Drawn
{
    int phases = 0;
    int bars = 0;
};

} // namespace

// How many rectangles the phase shading and the annotation strip paint for a few thousand spans,
// most thinner than a pixel: at most one per pixel column (and row), by each item's own rule.
// The figures pin both culling rules; a change to either changes them.
class TestSpanDrawing : public QObject
{
    Q_OBJECT

    QCustomPlot m_plot;
    PhaseShading* m_phases = nullptr;
    AnnotationStrip* m_strip = nullptr;

    Drawn drawnOnScreen(double lower, double upper)
    {
        m_plot.xAxis->setRange(lower, upper);
        m_plot.replot(QCustomPlot::rpImmediateRefresh);
        return { m_phases->lastDrawnRects(), m_strip->lastDrawnBars() };
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_plot.resize(700, 300);
        m_plot.axisRect()->setAutoMargins(QCP::msNone);
        m_plot.axisRect()->setMargins(QMargins(40, 10, 10, 30));
        m_phases = new PhaseShading(&m_plot);
        m_phases->setClipAxisRect(m_plot.axisRect());
        m_phases->setRuns(phaseRuns());
        m_strip = new AnnotationStrip(&m_plot);
        m_strip->setClipAxisRect(m_plot.axisRect());
        m_strip->setBars(annotationBars());
        m_plot.show();
        QVERIFY(QTest::qWaitForWindowExposed(&m_plot));
        QCOMPARE(m_plot.axisRect()->width(), 650);
    }

    void spansOfTheWholeRun()
    {
        QCOMPARE(m_phases->runCount(), size_t(1344));
        QCOMPARE(m_strip->barCount(), size_t(705));
        const Drawn drawn = drawnOnScreen(0, 1000);
        QCOMPARE(drawn.phases, 300);
        QCOMPARE(drawn.bars, 325);
    }

    void zoomedIn()
    {
        const Drawn drawn = drawnOnScreen(212.3, 261.7);
        QCOMPARE(drawn.phases, 59);
        QCOMPARE(drawn.bars, 28);
    }

    // Exported at twice the resolution the shading has twice the columns: more runs get one of their own.
    void exportedAtTwiceTheResolution()
    {
        m_plot.xAxis->setRange(0, 1000);
        const QPixmap pixmap = m_plot.toPixmap(700, 300, 2.0);
        QVERIFY(!pixmap.isNull());
        QCOMPARE(m_phases->lastDrawnRects(), 515);
        QCOMPARE(m_strip->lastDrawnBars(), 325);
    }

    // A PDF paints rectangles, not a pixel strip, by the same rule.
    void exportedAsVectors()
    {
        QTemporaryDir dir;
        m_plot.xAxis->setRange(0, 1000);
        QVERIFY(m_plot.savePdf(dir.filePath(QStringLiteral("plot.pdf")), 700, 300));
        QCOMPARE(m_phases->lastDrawnRects(), 300);
        QCOMPARE(m_strip->lastDrawnBars(), 325);
    }

    // Where the two rules part: a span that starts in the last painted column and ends inside the
    // next. The shading gives it that next column; the strip, whose bars have edges, does not.
    void rulesPartOnASpanEndingInTheNextColumn()
    {
        QCPAxis* axis = m_plot.xAxis;
        axis->setRange(0, 650); // one key per pixel
        const double left = m_plot.axisRect()->left();
        for (const auto keep : { SpanPixels::Keep::NewColumn, SpanPixels::Keep::EndPastPainted }) {
            SpanPixels columns(axis, left, 1, 0, 650, keep);
            const auto wide = columns.place(10.2, 12.5);
            QVERIFY(wide);
            QCOMPARE(wide->firstColumn, 10);
            QCOMPARE(wide->endColumn, 12);
            const auto next = columns.place(12.5, 12.9);
            QCOMPARE(next.has_value(), keep == SpanPixels::Keep::NewColumn);
            if (next) {
                QCOMPARE(next->freshColumn, 12);
                QCOMPARE(next->endColumn, 13);
            }
            QVERIFY(!columns.place(12.6, 12.8)); // nothing new for either rule
        }
    }

    // Lanes are culled apart; the edges clamp the start from below and the end from above.
    void lanesAndEdges()
    {
        QCPAxis* axis = m_plot.xAxis;
        axis->setRange(0, 650);
        const double left = m_plot.axisRect()->left();
        SpanPixels columns(axis, left, 1, 0, 650, SpanPixels::Keep::NewColumn, 2);
        QVERIFY(columns.place(5.1, 5.3, 0));
        QVERIFY(columns.place(5.1, 5.3, 1));
        QVERIFY(!columns.place(5.4, 5.6, 0));
        const auto clamped = columns.place(640, 700, 0);
        QVERIFY(clamped);
        QCOMPARE(clamped->x1, 650.0);
        QCOMPARE(clamped->endColumn, 650);
        QVERIFY(!columns.place(650.5, 660, 1)); // starts past the last column
        SpanPixels fromLeft(axis, left, 1, 0, 650, SpanPixels::Keep::EndPastPainted);
        const auto before = fromLeft.place(-20, 3.5);
        QVERIFY(before);
        QCOMPARE(before->x0, 0.0);
        QCOMPARE(before->endColumn, 3);
    }
};

QTEST_MAIN(TestSpanDrawing)
#include "tst_spandrawing.moc"
