// The app and the HTML report render one case from the same analysis: this checks that what a
// person reads in both agrees — the peak, the category labels and colours, what was live by
// category at the peak, and the OOM message's numbers and their reading — for every bundled
// scenario.
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/presentation/labels.h"
#include "core/presentation/palette.h"
#include "core/report/charts.h"
#include "core/report/htmlescape.h"
#include "core/report/htmlreport.h"
#include "core/units.h"
#include "opening/analyzedcase.h"
#include "parsers/inputloader.h"
#include "views/categorycolors.h"
#include "views/overviewpage.h"
#include "views/plots/timelinedata.h"
#include "views/timelinewidget.h"

#include <QApplication>
#include <QDir>
#include <QGridLayout>
#include <QLabel>
#include <QRegularExpression>
#include <QTest>

#include <map>
#include <utility>
#include <vector>

using namespace oomlens;

namespace {

QString fromStd(std::string_view text)
{
    return QString::fromUtf8(text.data(), qsizetype(text.size()));
}

// The label whose text contains `needle`, among `parent`'s children.
QString labelWith(const QWidget& parent, const QString& needle)
{
    for (const QLabel* label : parent.findChildren<QLabel*>()) {
        if (label->text().contains(needle))
            return label->text();
    }
    return {};
}

// "Parameters" → "1.00 GiB" for every category the report's breakdown table lists at the peak
// (its first number column).
std::map<QString, QString> reportPeakBreakdown(const QString& html)
{
    std::map<QString, QString> rows;
    static const QRegularExpression row(
        QStringLiteral("<tr><td><span class=\"swatch cat-[a-z_]+\"></span>([^<]+)</td><td class=\"num\">([^<]+)</td>"));
    for (auto it = row.globalMatch(html); it.hasNext();) {
        const QRegularExpressionMatch match = it.next();
        rows.emplace(match.captured(1), match.captured(2));
    }
    return rows;
}

// The same from the overview's "At the peak:" line (categories with bytes only).
std::map<QString, QString> overviewPeakBreakdown(const QString& text)
{
    std::map<QString, QString> rows;
    static const QRegularExpression part(QStringLiteral("&#9632;</span>&nbsp;([^&<]+)&nbsp;<b>([^<]+)</b>"));
    for (auto it = part.globalMatch(text); it.hasNext();) {
        const QRegularExpressionMatch match = it.next();
        rows.emplace(match.captured(1), match.captured(2));
    }
    return rows;
}

QString visibleText(const QString& html)
{
    return QString::fromStdString(report::htmlToText(html.toStdString())).trimmed();
}

using Rows = std::vector<std::pair<QString, QString>>;

// The overview's table of the numbers the message prints: label and value per grid row (the
// card's reconciliation below it has grids of its own, in its own section). The page's sections
// below the picture are in one block of their own (OverviewPage::ensureFilled).
Rows overviewNumbers(const QWidget& overview)
{
    Rows rows;
    for (const QGridLayout* grid : overview.findChildren<QGridLayout*>()) {
        const QString parent = grid->parentWidget()->objectName();
        if (parent != QLatin1String("overviewContent") && parent != QLatin1String("overviewSections"))
            continue;
        for (int row = 0; row < grid->rowCount(); ++row) {
            const QLayoutItem* label = grid->itemAtPosition(row, 0);
            const QLayoutItem* value = grid->itemAtPosition(row, 1);
            if (!label || !value)
                continue;
            rows.emplace_back(visibleText(static_cast<const QLabel*>(label->widget())->text()),
                visibleText(static_cast<const QLabel*>(value->widget())->text()));
        }
    }
    return rows;
}

// The report's "Every number in the message" table: label and value per row.
Rows reportNumbers(const QString& html)
{
    Rows rows;
    const qsizetype start = html.indexOf(QStringLiteral("Every number in the message"));
    const qsizetype end = html.indexOf(QStringLiteral("</table>"), start);
    static const QRegularExpression row(QStringLiteral("<tr><td>([^<]+)</td><td class=\"num\">([^<]+)</td>"));
    for (auto it = row.globalMatch(html.mid(start, end - start)); it.hasNext();) {
        const QRegularExpressionMatch match = it.next();
        rows.emplace_back(visibleText(match.captured(1)), visibleText(match.captured(2)));
    }
    return rows;
}

// The overview's bullet lines under the message, as text: the list that starts with the request
// (the diagnosis cards' evidence is in bullets too).
QStringList overviewReading(const QWidget& overview)
{
    QStringList lines;
    for (const QLabel* label : overview.findChildren<QLabel*>()) {
        const QString text = label->text();
        if (!text.startsWith(QStringLiteral("• "))
            || !text.section(QStringLiteral("<br>"), 0, 0).contains(QStringLiteral(": tried to allocate")))
            continue;
        for (const QString& line : text.split(QStringLiteral("<br>"), Qt::SkipEmptyParts))
            lines << visibleText(line.mid(2));
        break;
    }
    return lines;
}

// The report's first reading list after the message, as text.
QStringList reportReading(const QString& html)
{
    QStringList lines;
    const qsizetype section = html.indexOf(QStringLiteral("id=\"oom-messages\""));
    const qsizetype start = html.indexOf(QStringLiteral("<ul class=\"reading\">"), section);
    const qsizetype end = html.indexOf(QStringLiteral("</ul>"), start);
    static const QRegularExpression item(QStringLiteral("<li>(.*?)</li>"));
    for (auto it = item.globalMatch(html.mid(start, end - start)); it.hasNext();)
        lines << visibleText(it.next().captured(1));
    return lines;
}

// One "scenario" row per bundled scenario that has a file ending in `suffix`.
void scenarioRows(const QString& suffix)
{
    QTest::addColumn<QString>("scenario");
    const QDir dir(test::testDataDir() + QStringLiteral("/scenarios"));
    const QStringList files = dir.entryList({ QLatin1Char('*') + suffix }, QDir::Files, QDir::Name);
    QVERIFY(!files.isEmpty());
    for (const QString& file : files) {
        const QString name = file.chopped(suffix.size());
        QTest::newRow(qPrintable(name)) << name;
    }
}

} // namespace

class TestGuiReportAgreement : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sameCaseSameNumbers_data() { scenarioRows(QStringLiteral(".pickle")); }

    void sameCaseSameNumbers()
    {
        QFETCH(QString, scenario);
        const QString base = test::testDataDir() + QStringLiteral("/scenarios/") + scenario;
        // The snapshot alone: the peak and the categories are the snapshot's.
        Case input;
        addFile(input, QString(base + QStringLiteral(".pickle")).toStdString());
        const auto loaded
            = std::make_shared<AnalyzedCase>(AnalyzedCase { input, analyzeCase(input), scenario.toStdString() });
        QCOMPARE(loaded->analysis.snapshots.size(), size_t(1));
        const SnapshotAnalysis& snapshot = loaded->analysis.snapshots.front();
        const DeviceAnalysis* device = snapshot.primary();
        QVERIFY(device);
        const QString peak = fromStd(formatBytes(device->peakAllocatedBytes));

        // The report.
        const QString html = QString::fromStdString(report::buildHtmlReport(loaded->input, loaded->analysis));
        QVERIFY2(html.contains(QStringLiteral("peak allocated ") + peak), qPrintable(peak));
        QVERIFY(html.contains(QStringLiteral("class=\"marker-label\"")));
        QVERIFY2(html.contains(QStringLiteral(">peak ") + peak + QStringLiteral("</text>")), qPrintable(peak));

        // The report's chart, at its default resolution, reaches the peak exactly.
        const report::TimelineChartData chart
            = report::timelineChartData(*device, TimelineSeries(*device), report::ReportOptions {}.timelineBuckets);
        uint64_t chartMax = 0;
        for (const auto& point : chart.points)
            chartMax = std::max(chartMax, point.total());
        QCOMPARE(chartMax, device->peakAllocatedBytes);

        // The app: the timeline as drawn at full zoom, its info line and legend, and the overview.
        auto data = std::make_shared<const TimelineData>(
            std::make_shared<const SnapshotAnalysis>(snapshot), snapshot.primaryDevice);
        TimelineWidget timeline;
        timeline.resize(1200, 500);
        timeline.setTimeline(data);
        QVERIFY(labelWith(timeline, QStringLiteral("Events ")).contains(QStringLiteral("peak <b>") + peak));
        uint64_t drawnMax = 0;
        for (const auto& point : data->downsample(TimelineSeries::evenBoundaries(0, data->eventCount(), 1200)))
            drawnMax = std::max(drawnMax, point.total());
        QCOMPARE(drawnMax, device->peakAllocatedBytes);
        QCOMPARE(data->maxAllocated(), device->peakAllocatedBytes);

        OverviewPage overview;
        overview.setCase(loaded);
        QVERIFY(
            labelWith(*overview.widget(), QStringLiteral("peak ") + peak + QStringLiteral(" allocated")).size() > 0);

        // Labels and colours: the app's legend and the report's legend and style sheet name each
        // category the same way, in the same colour; both leave out the categories only some runs
        // have (communication, kv_cache) where they hold nothing.
        const QString legend = labelWith(timeline, QStringLiteral("&#9632;"));
        const bool dark = colors::darkPalette();
        for (int c = 0; c < categoryCount; ++c) {
            const auto category = static_cast<Category>(c);
            const QString label = fromStd(categoryLabel(category));
            const QString key = fromStd(categoryName(category));
            const QString hex = fromStd(categoryColor(category, dark ? Theme::Dark : Theme::Light).hex());
            const bool shown = listedWhenEmpty(category) || data->series().holds(category);
            QCOMPARE(legend.contains(QStringLiteral("color:%1'>&#9632;</span>&nbsp;%2").arg(hex, label)), shown);
            QCOMPARE(html.contains(QStringLiteral("cat-%1\"></span>%2</span>").arg(key, label)), shown);
            QVERIFY2(html.contains(QStringLiteral("--%1: %2;").arg(key, hex)), qPrintable(key));
            QCOMPARE(colors::category(category).name(), hex);
        }

        // What was live at the peak, category by category.
        const std::map<QString, QString> inReport = reportPeakBreakdown(html);
        QVERIFY(inReport.size() >= 7); // the training categories are always listed
        const std::map<QString, QString> inApp
            = overviewPeakBreakdown(labelWith(*overview.widget(), QStringLiteral("At the peak: ")));
        QVERIFY(!inApp.empty());
        for (int c = 0; c < categoryCount; ++c) {
            const uint64_t bytes = device->categoriesAtPeak[size_t(c)];
            const QString label = fromStd(categoryLabel(Category(c)));
            if (!inReport.count(label)) {
                QVERIFY2(bytes == 0 && !listedWhenEmpty(Category(c)), qPrintable(label));
                continue;
            }
            QCOMPARE(inReport.at(label), fromStd(formatBytes(bytes)));
            if (bytes > 0)
                QCOMPARE(inApp.at(label), fromStd(formatBytes(bytes)));
            else
                QVERIFY(!inApp.count(label));
        }
    }

    void sameMessageSameReading_data() { scenarioRows(QStringLiteral(".oom.txt")); }

    // The message's numbers and their reading in plain words come from one place
    // (core/presentation: explainMessageNumbers, explainOomMessage): the overview and the report
    // show the same rows in the same order, with the same values.
    void sameMessageSameReading()
    {
        QFETCH(QString, scenario);
        const QString base = test::testDataDir() + QStringLiteral("/scenarios/") + scenario;
        Case input;
        addFile(input, QString(base + QStringLiteral(".pickle")).toStdString());
        addFile(input, QString(base + QStringLiteral(".oom.txt")).toStdString());
        QCOMPARE(input.text.oomMessages.size(), size_t(1));
        const auto loaded
            = std::make_shared<AnalyzedCase>(AnalyzedCase { input, analyzeCase(input), scenario.toStdString() });
        const QString html = QString::fromStdString(report::buildHtmlReport(loaded->input, loaded->analysis));
        OverviewPage overview;
        overview.setCase(loaded);

        // The overview lists the printed numbers (processes have their own table); the report
        // lists them first, then the processes and what follows from them.
        const Rows inApp = overviewNumbers(*overview.widget());
        const Rows inReport = reportNumbers(html);
        QVERIFY(!inApp.empty());
        QVERIFY(inReport.size() >= inApp.size());
        for (size_t i = 0; i < inApp.size(); ++i) {
            QCOMPARE(inApp[i].first, inReport[i].first);
            QCOMPARE(inApp[i].second, inReport[i].second);
        }
        QCOMPARE(inApp.front().first, QStringLiteral("Requested"));

        const QStringList readingInApp = overviewReading(*overview.widget());
        QVERIFY(readingInApp.size() > 1);
        QCOMPARE(readingInApp, reportReading(html));
    }
};

QTEST_MAIN(TestGuiReportAgreement)
#include "tst_guireportagreement.moc"
