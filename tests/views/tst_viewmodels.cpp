#include "common/tracebuilder.h"
#include "views/models/allocationsmodel.h"
#include "views/models/eventsmodel.h"
#include "views/models/inputsmodel.h"
#include "views/models/processesmodel.h"
#include "views/models/summarymodel.h"
#include "views/plots/timelinedata.h"

#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
#include <QTest>

using namespace oomlens;

namespace {

constexpr uint64_t MiBytes = 1024 * 1024;

std::shared_ptr<const TimelineData> timeline()
{
    std::string error;
    auto snapshot = test::buildSnapshot("before p 512MiB load\n"
                                        "alloc a 100MiB fwd\n"
                                        "alloc b 300MiB fwd\n"
                                        "free a bwd\n"
                                        "alloc g 200MiB grad\n"
                                        "oom 2GiB free=10MiB bwd\n",
        &error);
    if (!snapshot)
        qFatal("bad fixture: %s", error.c_str());
    auto analysis = std::make_shared<const SnapshotAnalysis>(analyzeSnapshot(snapshot));
    return std::make_shared<const TimelineData>(analysis, 0);
}

} // namespace

class TestViewModels : public QObject
{
    Q_OBJECT
private slots:
    void inputs()
    {
        InputsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        CaseInput good { "/tmp/snapshot.pickle", InputKind::Snapshot, std::nullopt, 0 };
        CaseInput bad { "(pasted)", InputKind::Unknown, std::string("no OOM message found"), -1 };
        model.setInputs({ good, bad });
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.index(0, InputsModel::KindColumn).data().toString(), QStringLiteral("Memory snapshot"));
        QCOMPARE(model.index(1, InputsModel::PathColumn).data().toString(), QStringLiteral("(pasted text)"));
        QCOMPARE(model.index(1, InputsModel::StatusColumn).data().toString(), QStringLiteral("no OOM message found"));
        QVERIFY(model.index(0, 0).data(InputsModel::ErrorRole).toString().isEmpty());
    }

    void summary()
    {
        SummaryModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        MemorySummary summary;
        summary.rows["allocations"] = { uint64_t(12), uint64_t(40), uint64_t(1000), uint64_t(988) };
        summary.rows["allocated_memory"] = { 3 * MiBytes, 5 * MiBytes, std::nullopt, std::nullopt };
        model.setSummary(summary);
        QCOMPARE(model.rowCount(), 2);
        // memory_summary()'s own order: memory rows before counts.
        QCOMPARE(model.index(0, SummaryModel::MetricColumn).data().toString(), QStringLiteral("Allocated memory"));
        QCOMPARE(model.index(0, SummaryModel::PeakColumn).data().toString(), QStringLiteral("5.00 MiB"));
        QCOMPARE(model.index(0, SummaryModel::FreedColumn).data().toString(), QStringLiteral("—"));
        QCOMPARE(model.index(1, SummaryModel::CurrentColumn).data(SummaryModel::RawValueRole).toULongLong(), 12ull);
        QVERIFY(!model.index(1, SummaryModel::CurrentColumn).data().toString().contains(QLatin1String("B")));
    }

    void processes()
    {
        ProcessesModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        TextFindings findings;
        NvidiaSmiTable table;
        table.processes.push_back({ 0, 4242, "C", "python", 10 * MiBytes * 1024 });
        findings.nvidiaSmi.push_back(table);
        OomMessage message;
        message.device = 0;
        message.processes.push_back({ int64_t(99), std::nullopt, false });
        findings.oomMessages.push_back(message);
        model.setFindings(findings);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.index(0, ProcessesModel::PidColumn).data().toString(), QStringLiteral("4242"));
        QCOMPARE(model.index(0, ProcessesModel::MemoryColumn).data().toString(), QStringLiteral("10.00 GiB"));
        QCOMPARE(model.index(1, ProcessesModel::MemoryColumn).data().toString(), QStringLiteral("not reported"));
        QVERIFY(!model.index(1, ProcessesModel::MemoryColumn).data(ProcessesModel::BytesRole).isValid());
    }

    void allocationsAtMoments()
    {
        const auto data = timeline();
        AllocationsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        proxy.setSortRole(AllocationsModel::SortRole);
        proxy.setFilterRole(AllocationsModel::FilterRole);
        proxy.setFilterCaseSensitivity(Qt::CaseInsensitive);
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);

        model.setMoment(data, -1);
        QCOMPARE(model.rowCount(), 1); // only what predates the trace
        QCOMPARE(model.totalBytes(), 512 * MiBytes);
        QCOMPARE(
            model.index(0, AllocationsModel::AllocatedAtColumn).data().toString(), QStringLiteral("before the trace"));

        model.setMoment(data, data->eventCount() - 1);
        QCOMPARE(model.totalBytes(), (512 + 300 + 200) * MiBytes);
        QCOMPARE(model.totalBytes(), data->allocatedAt(data->eventCount() - 1));
        QCOMPARE(model.index(0, AllocationsModel::SizeColumn).data(AllocationsModel::BytesRole).toULongLong(),
            512 * MiBytes); // biggest first

        proxy.sort(AllocationsModel::SizeColumn, Qt::AscendingOrder);
        QCOMPARE(proxy.index(0, AllocationsModel::SizeColumn).data(AllocationsModel::BytesRole).toULongLong(),
            200 * MiBytes);
        proxy.setFilterFixedString(QStringLiteral("no such frame anywhere"));
        QCOMPARE(proxy.rowCount(), 0);
        proxy.setFilterFixedString(QString());
        QCOMPARE(proxy.rowCount(), 3);
    }

    void events()
    {
        const auto data = timeline();
        EventsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setTimeline(data);
        QCOMPARE(model.rowCount(), int(data->eventCount()));
        int ooms = 0;
        for (int row = 0; row < model.rowCount(); ++row) {
            const QString action = model.index(row, EventsModel::ActionColumn).data().toString();
            QVERIFY(!action.isEmpty());
            QCOMPARE(model.index(row, 0).data(EventsModel::EventRole).toLongLong(), qlonglong(row));
            if (action == QLatin1String("oom")) {
                ++ooms;
                QVERIFY(model.index(row, EventsModel::AddressColumn).data().toString().isEmpty());
                QCOMPARE(model.index(row, EventsModel::SizeColumn).data().toString(), QStringLiteral("2.00 GiB"));
            }
            if (action == QLatin1String("alloc"))
                QVERIFY(!model.index(row, EventsModel::CategoryColumn).data().toString().isEmpty());
        }
        QCOMPARE(ooms, 1);
        model.setTimeline(nullptr);
        QCOMPARE(model.rowCount(), 0);
    }
};

QTEST_MAIN(TestViewModels)
#include "tst_viewmodels.moc"
