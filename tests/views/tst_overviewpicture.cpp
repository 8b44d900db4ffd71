#include "common/testutil.h"
#include "core/analysis/topsites.h"
#include "core/planner/plancalibration.h"
#include "views/casewidget.h"
#include "views/mainwindow.h"
#include "views/overviewpage.h"
#include "views/plots/timelinethumbnail.h"
#include "views/timelinewidget.h"
#include "views/viewutil.h"
#include "views/whatifbars.h"
#include "views/whatifview.h"

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QTabWidget>
#include <QTest>

using namespace oomlens;
using namespace oomlens::planner;

// The views that answer this case, on real snapshots of ../shared/corpus: the What-if tab starts
// from the run's own bands (never a default model), a multi-device snapshot says what each
// device held, and a healthy snapshot's overview is a picture with its call sites, not text only.
class TestOverviewPicture : public QObject
{
    Q_OBJECT

    // A training run without an OOM (5,803 trace events, 46 MiB at its peak, one device).
    static QString healthySnapshot()
    {
        return test::corpusDir() + QStringLiteral("/snapshots/JasperSolt__EoR_NN__snapshot.pickle");
    }
    // nn.DataParallel across three GPUs, ending out of memory on device 0 (MANIFEST.jsonl:
    // devices_in_segments [0, 1, 2]).
    static QString threeDeviceSnapshot()
    {
        return test::corpusDir() + QStringLiteral("/snapshots/Constructor-Sun__code_location__memory_snapshot.pickle");
    }

    static CaseWidget* open(MainWindow& window, const QString& path)
    {
        window.resize(1280, 900);
        window.show();
        window.openFiles({ path });
        if (!QTest::qWaitFor([&] { return !window.isLoading(); }, 60000))
            return nullptr;
        return window.currentCase();
    }

private Q_SLOTS:
    // Opened on a snapshot with no model given, the What-if shows the run's measured bands and
    // asks for the model; a known model whose parameters cannot be the run's is not calibrated;
    // the run's parameter count is, and keeps the measured activations it cannot scale.
    void whatIfStartsFromTheRun()
    {
        OOMLENS_REQUIRE_SHARED();
        MainWindow window;
        CaseWidget* view = open(window, healthySnapshot());
        QVERIFY(view && view->loadedCase());
        WhatIfView& whatIf = *view->whatIf();
        const DeviceAnalysis& device = *view->loadedCase()->analysis.snapshots.front().primary();
        QVERIFY(!whatIf.hasModel());
        QCOMPARE(whatIf.findChild<QComboBox*>(QStringLiteral("model"))->currentText(), QStringLiteral("(none chosen)"));
        QVERIFY(!whatIf.calibration());
        auto* bars = whatIf.findChild<WhatIfBars*>();
        QVERIFY(bars);
        QVERIFY(bars->bands() == measuredBands(device));
        QVERIFY2(whatIf.verdict().startsWith(QStringLiteral("This run at its peak")), qPrintable(whatIf.verdict()));
        const QString details = whatIf.findChild<QLabel*>(QStringLiteral("details"))->text();
        QVERIFY2(details.contains(QStringLiteral("config.json")) && details.contains(QStringLiteral("parameter count")),
            qPrintable(details));
        QVERIFY(!whatIf.findChild<QSpinBox*>(QStringLiteral("batch"))->isEnabled()); // nothing to plan yet

        // A 7B model against a run that held tens of MiB of parameters: planned, not calibrated.
        whatIf.setModel(QStringLiteral("llama-2-7b"));
        QVERIFY(whatIf.hasModel());
        QVERIFY(!whatIf.calibration());
        QVERIFY2(whatIf.mismatch().contains(QStringLiteral("not the run's model")), qPrintable(whatIf.mismatch()));
        QVERIFY(
            whatIf.findChild<QLabel*>(QStringLiteral("calibration"))->text().contains(QStringLiteral("llama-2-7b")));

        // The run's own size, as the details suggest it (fp32): calibrated, activations as measured.
        const uint64_t parameterBytes = device.categoriesAtPeak[size_t(Category::Parameters)];
        QVERIFY(parameterBytes > 0);
        whatIf.setParameterCount(QString::number(parameterBytes / 4));
        QVERIFY(whatIf.hasModel());
        QVERIFY2(whatIf.mismatch().isEmpty(), qPrintable(whatIf.mismatch()));
        QVERIFY(whatIf.calibration());
        QCOMPARE(
            whatIf.result().shown.perGpu[size_t(Band::Activations)], measuredBands(device)[size_t(Band::Activations)]);
        QVERIFY(whatIf.findChild<QSpinBox*>(QStringLiteral("batch"))->isEnabled());
        QCOMPARE(whatIf.findChild<QComboBox*>(QStringLiteral("model"))->currentText(), QStringLiteral("(none chosen)"));
    }

    // DataParallel across three GPUs: the overview names each device with what it held.
    void multiDeviceOverviewSaysWhatEachHeld()
    {
        OOMLENS_REQUIRE_SHARED();
        MainWindow window;
        CaseWidget* view = open(window, threeDeviceSnapshot());
        QVERIFY(view && view->loadedCase());
        const SnapshotAnalysis& analysis = view->loadedCase()->analysis.snapshots.front();
        auto* holdings = view->overview()->widget()->findChild<QWidget*>(QStringLiteral("deviceHoldings"));
        QVERIFY(holdings);
        const QList<QLabel*> rows = holdings->findChildren<QLabel*>(QStringLiteral("deviceHolding"));
        QCOMPARE(rows.size(), 3);
        QList<int> devices;
        for (const QLabel* row : rows) {
            const int32_t id = row->property("device").toInt();
            devices << id;
            const DeviceAnalysis* device = analysis.device(id);
            QVERIFY(device);
            QVERIFY2(row->text().contains(bytesText(device->peakReservedBytes)), qPrintable(row->text()));
        }
        QCOMPARE(devices, QList<int>({ 0, 1, 2 }));
        // The device that ran out says so.
        const QLabel* first = rows.front();
        QCOMPARE(first->text().contains(QStringLiteral("out of memory here")), !analysis.device(0)->ooms.empty());
    }

    // No OOM: the overview still draws memory over the run and names the call sites holding the peak.
    void healthyOverviewHasPictureAndCallSites()
    {
        OOMLENS_REQUIRE_SHARED();
        MainWindow window;
        CaseWidget* view = open(window, healthySnapshot());
        QVERIFY(view && view->loadedCase());
        QVERIFY(view->loadedCase()->analysis.diagnoses.empty());
        QCOMPARE(view->tabs()->currentIndex(), int(CaseWidget::OverviewTab));
        TimelineThumbnail* picture = view->overview()->thumbnail();
        QVERIFY(picture);
        QVERIFY(picture->timeline());
        QCOMPARE(picture->timeline().get(), view->timeline()->timeline().get()); // built once, shown twice
        QVERIFY(QTest::qWaitFor([&] { return picture->paintedColumns() > 100; }, 5000));
        auto* sites = view->overview()->widget()->findChild<QWidget*>(QStringLiteral("topSites"));
        QVERIFY(sites);
        const QList<QLabel*> rows = sites->findChildren<QLabel*>(QStringLiteral("topSite"));
        QVERIFY(!rows.isEmpty() && rows.size() <= 5);
        // The largest holder first, named by its user frame as the report and a job's summary name it.
        const SnapshotAnalysis& analysis = view->loadedCase()->analysis.snapshots.front();
        const auto expected = topSitesAtPeak(*analysis.snapshot, *analysis.primary(), 5);
        QCOMPARE(rows.size(), int(expected.size()));
        QCOMPARE(rows.front()->text(), QString::fromStdString(expected.front().first));
        QVERIFY(expected.front().first != "(no stack)");
        // A click on the picture opens the timeline.
        QTest::mouseClick(picture, Qt::LeftButton);
        QCOMPARE(view->tabs()->currentIndex(), int(CaseWidget::TimelineTab));
    }
};

QTEST_MAIN(TestOverviewPicture)
#include "tst_overviewpicture.moc"
