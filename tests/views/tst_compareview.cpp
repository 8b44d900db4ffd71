#include "common/heldthreadpool.h"
#include "common/testutil.h"
#include "core/compare/comparison.h"
#include "views/casewidget.h"
#include "views/compareoverlay.h"
#include "views/compareview.h"
#include "views/mainwindow.h"
#include "views/models/comparesitesmodel.h"
#include "views/viewutil.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QHeaderView>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>
#include <QTimer>

#include <nlohmann/json.hpp>

#include <cstdlib>

using namespace oomlens;

// The Compare tab driven as a user would, offscreen, on the before/after pairs in
// tests/data/compare (truth.json counted by their generator): two open snapshots, then two step
// windows of the leaking run; what is shown must be what core computed and what the truth says.
namespace {

QString compareFile(const std::string& name)
{
    return test::testDataDir() + QStringLiteral("/compare/") + QString::fromStdString(name);
}

nlohmann::json truth()
{
    return nlohmann::json::parse(
        test::readFile(test::testDataDir() + QStringLiteral("/compare/truth.json")).toStdString());
}

bool waitForLoads(MainWindow& window)
{
    return QTest::qWaitFor([&] { return !window.isLoading(); }, 60000);
}

bool waitForComparison(CompareView* view)
{
    return QTest::qWaitFor([&] { return !view->isBusy(); }, 60000);
}

// Opens each file as a case of its own, as File ▸ Open does one at a time.
bool openCases(MainWindow& window, const QStringList& files)
{
    window.resize(1400, 900);
    window.show();
    for (const QString& file : files) {
        window.openFiles({ file });
        if (!waitForLoads(window))
            return false;
    }
    return true;
}

// The Δ at the peak the category table shows for `category`; nullopt when it has no row.
std::optional<qlonglong> shownDelta(CompareView* view, Category category, int column)
{
    QTableWidget* table = view->categoryTable();
    for (int row = 0; row < table->rowCount(); ++row) {
        if (table->item(row, CompareView::CategoryNameColumn)->data(Qt::UserRole).toInt() == int(category))
            return table->item(row, column)->data(Qt::UserRole).toLongLong();
    }
    return std::nullopt;
}

// The sites table's status column for the site with this label, category and phase.
QString siteStatus(CompareView* view, const QString& label, const QString& category, const QString& phase)
{
    QAbstractItemModel* model = view->sitesProxy();
    for (int row = 0; row < model->rowCount(); ++row) {
        if (model->index(row, CompareSitesModel::SiteColumn).data().toString() == label
            && model->index(row, CompareSitesModel::CategoryColumn)
                    .data()
                    .toString()
                    .compare(category, Qt::CaseInsensitive)
                == 0
            && model->index(row, CompareSitesModel::PhaseColumn).data().toString().compare(phase, Qt::CaseInsensitive)
                == 0)
            return model->index(row, CompareSitesModel::StatusColumn).data().toString();
    }
    return QStringLiteral("(no such row)");
}

// Where a user double-clicks: press, release, then the double-click (a bare double-click event
// is not one to an item view, which wants the press on the same item first).
void doubleClick(QAbstractItemView* view, const QModelIndex& index)
{
    view->scrollTo(index);
    const QPoint at = view->visualRect(index).center();
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, at);
    QTest::mouseDClick(view->viewport(), Qt::LeftButton, {}, at);
}

QString fileLineFunction(const std::string& frame)
{
    // "/home/ml/tinygpt/model.py:52:forward" -> "model.py:52:forward", as siteLabel() writes it
    const QString text = QString::fromStdString(frame);
    return text.mid(text.lastIndexOf(QLatin1Char('/')) + 1);
}

} // namespace

class TestCompareView : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QApplication::setOrganizationName(QStringLiteral("oomlens-tests"));
        QApplication::setApplicationName(QStringLiteral("tst_compareview"));
    }

    void twoSnapshotsShowCoresComparison()
    {
        const auto pair = truth()["checkpointing"];
        MainWindow window;
        QVERIFY(openCases(window, { compareFile(pair["a"]), compareFile(pair["b"]) }));
        QCOMPARE(window.caseCount(), 2);
        // Two snapshot cases open: the status bar says they can be compared.
        QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("Compare")),
            qPrintable(window.statusBar()->currentMessage()));

        CompareView* view = window.openCompare();
        QCOMPARE(window.currentTab(), view);
        QCOMPARE(view->candidates().size(), 2);
        QVERIFY(waitForComparison(view));
        QVERIFY(view->comparison());
        QCOMPARE(view->mode(), CompareView::SnapshotsMode);
        QCOMPARE(view->pickerA()->currentIndex(), 0);
        QCOMPARE(view->pickerB()->currentIndex(), 1);

        // The sentence on top is core's, computed on the same analyses.
        const Comparison expected = compareSnapshots(
            view->candidates()[0].loaded->analysis.snapshots[0], view->candidates()[1].loaded->analysis.snapshots[0]);
        QVERIFY(!expected.summary.empty());
        QCOMPARE(view->summaryText(), QString::fromStdString(expected.summary));

        // Each side's peak as the generator counted it.
        QVERIFY2(view->peakText(false).contains(bytesText(pair["a_peak_allocated_bytes"].get<uint64_t>())),
            qPrintable(view->peakText(false)));
        QVERIFY2(view->peakText(true).contains(bytesText(pair["b_peak_allocated_bytes"].get<uint64_t>())),
            qPrintable(view->peakText(true)));

        // Checkpointing drops what every block saved for backward: the activations' delta at the peak.
        const qlonglong saved = pair["saved_per_block_bytes"].get<qlonglong>() * pair["blocks"].get<qlonglong>();
        QCOMPARE(shownDelta(view, Category::Activations, CompareView::CategoryDeltaColumn), -saved);

        // Sites: largest |Δ at the peak| first, the recompute's activations (product.md §3: what
        // checkpointing recomputes inside backward stays activations) marked as new in B.
        QSortFilterProxyModel* sites = view->sitesProxy();
        QVERIFY(sites->rowCount() > 3);
        QCOMPARE(qsizetype(sites->rowCount()), qsizetype(expected.sites.size()));
        for (int row = 1; row < sites->rowCount(); ++row) {
            const qulonglong previous
                = sites->index(row - 1, CompareSitesModel::DeltaColumn).data(CompareSitesModel::SortRole).toULongLong();
            const qulonglong current
                = sites->index(row, CompareSitesModel::DeltaColumn).data(CompareSitesModel::SortRole).toULongLong();
            QVERIFY2(previous >= current, qPrintable(QStringLiteral("row %1").arg(row)));
        }
        const qlonglong topDelta
            = sites->index(0, CompareSitesModel::DeltaColumn).data(CompareSitesModel::SignedDeltaRole).toLongLong();
        QCOMPARE(std::llabs(topDelta), std::llabs(expected.sites.front().peakDelta()));
        const QString newSite = fileLineFunction(pair["new_site_frames"][0]);
        const QString newCategory = categoryText(Category::Activations);
        QCOMPARE(QString::fromStdString(pair["new_site_category"]), newCategory.toLower());
        const QString newPhase = QString::fromStdString(pair["new_site_phase"]);
        QCOMPARE(siteStatus(view, newSite, newCategory, newPhase), QStringLiteral("new in B"));

        // A click on the "A at peak" header sorts by A's bytes instead.
        QHeaderView* header = view->sitesView()->horizontalHeader();
        QTest::mouseClick(header->viewport(), Qt::LeftButton, {},
            QPoint(header->sectionViewportPosition(CompareSitesModel::AColumn) + 5, header->height() / 2));
        QCOMPARE(header->sortIndicatorSection(), int(CompareSitesModel::AColumn));
        const int rows = sites->rowCount();
        const auto aBytes = [&](int row) {
            return sites->index(row, CompareSitesModel::AColumn).data(CompareSitesModel::SortRole).toULongLong();
        };
        const bool ascending = aBytes(0) <= aBytes(rows - 1);
        for (int row = 1; row < rows; ++row)
            QVERIFY(ascending ? aBytes(row - 1) <= aBytes(row) : aBytes(row - 1) >= aBytes(row));

        // A double-click on the new site shows its whole stack, with the file's full path.
        view->sitesView()->sortByColumn(CompareSitesModel::DeltaColumn, Qt::DescendingOrder);
        int newRow = -1;
        for (int row = 0; row < sites->rowCount() && newRow < 0; ++row) {
            if (sites->index(row, CompareSitesModel::StatusColumn).data().toString() == QStringLiteral("new in B")
                && sites->index(row, CompareSitesModel::SiteColumn).data().toString() == newSite)
                newRow = row;
        }
        QVERIFY(newRow >= 0);
        doubleClick(view->sitesView(), sites->index(newRow, CompareSitesModel::SiteColumn));
        auto* dialog = view->findChild<QDialog*>(QStringLiteral("siteStack"));
        QVERIFY(dialog);
        QVERIFY(dialog->isVisible());
        const QString stack = dialog->findChild<QPlainTextEdit*>()->toPlainText();
        QVERIFY2(stack.contains(QStringLiteral("/home/ml/tinygpt/model.py:52")), qPrintable(stack));
        dialog->close();

        // Both runs have steps: they are overlaid step-aligned, and the toggle switches to
        // time-normalised; both draw each side's peak.
        QVERIFY(view->alignSteps()->isEnabled());
        QVERIFY(view->overlay()->stepAligned());
        QCOMPARE(view->overlay()->highestA(), double(view->comparison()->timeline.maxBytes));
        view->alignSteps()->click();
        QVERIFY(!view->overlay()->stepAligned());
        QCOMPARE(qulonglong(view->overlay()->highestA()), qulonglong(pair["a_peak_allocated_bytes"].get<uint64_t>()));
        QCOMPARE(qulonglong(view->overlay()->highestB()), qulonglong(pair["b_peak_allocated_bytes"].get<uint64_t>()));

        // Swapping the pickers compares B against A: the delta flips.
        view->pickerA()->setCurrentIndex(1);
        view->pickerB()->setCurrentIndex(0);
        QVERIFY(QTest::qWaitFor([&] { return view->isBusy(); }, 1000) || !view->isBusy());
        QVERIFY(waitForComparison(view));
        QCOMPARE(shownDelta(view, Category::Activations, CompareView::CategoryDeltaColumn), saved);
        QCOMPARE(siteStatus(view, newSite, newCategory, newPhase), QStringLiteral("gone in B"));
    }

    void stepWindowsOfOneRun()
    {
        const auto leak = truth()["leak"];
        MainWindow window;
        QVERIFY(openCases(window, { compareFile(leak["snapshot"]) }));
        CompareView* view = window.openCompare();
        // One snapshot alone: the view offers its step windows.
        QVERIFY(waitForComparison(view));
        QCOMPARE(view->mode(), CompareView::WindowsMode);

        // Steps 2 against 3, typed into the spin boxes.
        const auto first = parseStepWindow(leak["windows"][0].get<std::string>());
        const auto second = parseStepWindow(leak["windows"][1].get<std::string>());
        QVERIFY(first && second);
        const std::pair<const char*, int> values[] = { { "firstFrom", first->firstStep },
            { "firstTo", first->lastStep }, { "secondFrom", second->firstStep }, { "secondTo", second->lastStep } };
        for (const auto& [name, value] : values) {
            auto* box = view->findChild<QSpinBox*>(QString::fromLatin1(name));
            QVERIFY(box);
            box->setValue(value);
        }
        QVERIFY(view->isBusy());
        QVERIFY(waitForComparison(view));
        QVERIFY(view->comparison());
        QVERIFY(view->comparison()->windows);
        QCOMPARE(view->comparison()->a.window, first);
        QCOMPARE(view->comparison()->b.window, second);
        QVERIFY(!view->summaryText().isEmpty());

        // The leak check: the kept logits, first and marked as repeating, at least one step's worth.
        QTableWidget* surviving = view->survivingTable();
        QVERIFY(surviving->rowCount() > 0);
        QCOMPARE(surviving->item(0, 0)->text(), fileLineFunction(leak["leak_site_frames"][0]));
        QVERIFY(surviving->item(0, 2)->data(Qt::UserRole).toULongLong() >= leak["leak_bytes_per_step"].get<uint64_t>());
        QVERIFY(surviving->item(0, 4)->text().startsWith(QStringLiteral("yes")));

        // A window the run does not have says why instead of comparing.
        view->findChild<QSpinBox*>(QStringLiteral("secondFrom"))->setValue(0);
        view->findChild<QSpinBox*>(QStringLiteral("secondTo"))->setValue(0);
        view->findChild<QSpinBox*>(QStringLiteral("firstTo"))->setValue(first->firstStep);
        view->compareWindows(0, { 3, 2 }, *second);
        QVERIFY(waitForComparison(view));
        QVERIFY(!view->comparison());
        QVERIFY2(view->summaryText().contains(QStringLiteral("cannot be compared")), qPrintable(view->summaryText()));
    }

    // Two real snapshots of the corpus (the same training step at context 128 and 512): the
    // comparison runs on the thread pool while the window keeps handling events.
    void staysResponsiveOnARealPair()
    {
        OOMLENS_REQUIRE_SHARED();
        const QString dir = test::corpusDir() + QStringLiteral("/snapshots/");
        const QStringList files { dir + QStringLiteral("kkaitlyn111__cs336-a2-systems__memory_ctx128_fullstep_.pickle"),
            dir + QStringLiteral("kkaitlyn111__cs336-a2-systems__memory_ctx512_fullstep_.pickle") };
        for (const QString& file : files) {
            if (!QFileInfo::exists(file))
                QSKIP("the corpus pair kkaitlyn111 ctx128/ctx512 is not in ../shared");
        }
        MainWindow window;
        QVERIFY(openCases(window, files));
        QElapsedTimer clock;
        clock.start();
        CompareView* view = window.openCompare();
        // The GUI thread's longest gap between two 5 ms ticks while the comparison runs.
        qint64 last = clock.elapsed();
        qint64 longestGap = 0;
        QTimer tick;
        QObject::connect(&tick, &QTimer::timeout, [&] {
            longestGap = std::max(longestGap, clock.elapsed() - last);
            last = clock.elapsed();
        });
        tick.start(5);
        QVERIFY(waitForComparison(view));
        const qint64 took = clock.elapsed();
        tick.stop();
        QVERIFY(view->comparison());
        QVERIFY(!view->comparison()->sites.empty());
        qInfo("corpus pair compared in %lld ms; longest GUI-thread gap meanwhile %lld ms", took, longestGap);
        QVERIFY2(longestGap < 500, qPrintable(QStringLiteral("the window froze for %1 ms").arg(longestGap)));
    }

    // The picks change while a comparison waits for the pool: the older comparison is dropped and
    // only the newest request is ever shown.
    void aSupersededComparisonIsNeverShown()
    {
        const auto pair = truth()["checkpointing"];
        MainWindow window;
        QVERIFY(openCases(window, { compareFile(pair["a"]), compareFile(pair["b"]) }));
        CompareView* view = window.openCompare();
        QVERIFY(waitForComparison(view));
        QSignalSpy compared(view, &CompareView::compared);
        {
            // Only the view's own queued calls run meanwhile: painting would want the pool too.
            test::HeldThreadPool held;
            view->compareSnapshots(1, 0);
            QCoreApplication::sendPostedEvents(view, QEvent::MetaCall); // B against A waits for the pool
            view->compareSnapshots(0, 1);
            QCoreApplication::sendPostedEvents(view, QEvent::MetaCall);
            QVERIFY(view->isBusy());
        }
        QVERIFY(waitForComparison(view));
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QCOMPARE(compared.count(), 1);
        QVERIFY(view->comparison());
        QCOMPARE(QFileInfo(toQString(view->comparison()->a.source)).fileName(),
            QFileInfo(compareFile(pair["a"])).fileName());
    }

    // Closing the Compare tab while it computes: the result reaches nobody.
    void closingWhileComparingIsSafe()
    {
        const auto pair = truth()["checkpointing"];
        MainWindow window;
        QVERIFY(openCases(window, { compareFile(pair["a"]), compareFile(pair["b"]) }));
        CompareView* view = window.openCompare();
        QVERIFY(waitForComparison(view));
        {
            test::HeldThreadPool held;
            view->compareSnapshots(1, 0);
            QCoreApplication::sendPostedEvents(view, QEvent::MetaCall);
            QVERIFY(view->isBusy());
            delete view;
        }
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QCOMPARE(window.tabCount(), 2); // the two cases
    }

    void exportWritesTheComparisonSection()
    {
        const auto pair = truth()["batch"];
        MainWindow window;
        QVERIFY(openCases(window, { compareFile(pair["a"]), compareFile(pair["b"]) }));
        CompareView* view = window.openCompare();
        QVERIFY(waitForComparison(view));
        QVERIFY(view->comparison());
        QTemporaryDir directory;
        const QString path = directory.filePath(QStringLiteral("compare.html"));
        QVERIFY(window.exportReport(path));
        const QString html = QString::fromUtf8(test::readFile(path));
        QVERIFY(html.contains(QStringLiteral("<section id=\"comparison\">")));
        QVERIFY(html.contains(QStringLiteral("Comparison: A and B")));
        QVERIFY(html.contains(view->summaryText().toHtmlEscaped()));

        // The README's picture, when asked for (OOMLENS_SCREENSHOT_DIR).
        const QString screenshots = qEnvironmentVariable("OOMLENS_SCREENSHOT_DIR");
        if (!screenshots.isEmpty()) {
            window.close();
            MainWindow shown;
            const auto checkpointing = truth()["checkpointing"];
            QVERIFY(openCases(shown, { compareFile(checkpointing["a"]), compareFile(checkpointing["b"]) }));
            shown.openCompare();
            QVERIFY(!shown.writeScreenshots(screenshots).isEmpty());
        }
    }
};

QTEST_MAIN(TestCompareView)
#include "tst_compareview.moc"
