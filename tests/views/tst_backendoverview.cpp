#include "common/loadedcasefixture.h"
#include "views/overviewpage.h"

#include <QLabel>
#include <QTest>

using namespace oomlens;

// The app names the backend of a snapshot another backend wrote in CUDA's format: the overview's
// one-line glance says "Ascend NPU snapshot", and its history advice gives torch_npu's calls.
class TestBackendOverview : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void overviewNamesTheBackend()
    {
        OverviewPage page;
        page.setCase(test::loadTestCase(QStringLiteral("snapshots/npu_segments.pickle")));
        const auto* glance = page.findChild<QLabel*>(QStringLiteral("glance"));
        QVERIFY(glance);
        QVERIFY2(glance->text().contains(QStringLiteral("<b>Ascend NPU</b> snapshot")), qPrintable(glance->text()));
        const auto* history = page.findChild<QLabel*>(QStringLiteral("traceHistory"));
        QVERIFY(history);
        QVERIFY2(history->text().contains(QStringLiteral("torch_npu.npu.memory._record_memory_history")),
            qPrintable(history->text()));
        QVERIFY(!history->text().contains(QStringLiteral("torch.cuda")));
    }

    void cudaSnapshotsSayNothingMore()
    {
        OverviewPage page;
        page.setCase(test::loadTestCase(QStringLiteral("snapshots/newest_p4.pickle")));
        const auto* glance = page.findChild<QLabel*>(QStringLiteral("glance"));
        QVERIFY(!glance || !glance->text().contains(QStringLiteral("snapshot</")));
        QVERIFY(!glance || !glance->text().contains(QStringLiteral("NPU")));
    }
};

QTEST_MAIN(TestBackendOverview)
#include "tst_backendoverview.moc"
