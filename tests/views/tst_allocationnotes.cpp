#include "common/snapshotbytes.h"
#include "common/testutil.h"
#include "views/models/allocationsmodel.h"
#include "views/plots/timelinedata.h"
#include "views/timelinewidget.h"

#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
#include <QTest>

using namespace oomlens;

// What torch.cuda.memory._annotate_tensor attached to an allocation, in the app: the live-allocations
// table's Annotations column (only the notes made by the moment shown), its filter and tooltip, and
// the timeline's hover on the annotate event and on the allocation's own events.
class TestAllocationNotes : public QObject
{
    Q_OBJECT

    std::shared_ptr<const TimelineData> timeline()
    {
        const QByteArray bytes
            = test::readFile(test::testDataDir() + QStringLiteral("/snapshots/annotated_tensors.pickle"));
        const auto snapshot = test::readSnapshotBytes(bytes);
        if (!snapshot)
            return nullptr;
        const auto analysis = std::make_shared<const SnapshotAnalysis>(analyzeSnapshot(snapshot));
        return std::make_shared<const TimelineData>(analysis, 0);
    }

    static QString notesOfRow(const AllocationsModel& model, uint64_t bytes)
    {
        for (int row = 0; row < model.rowCount(); ++row) {
            if (model.index(row, AllocationsModel::SizeColumn).data(AllocationsModel::BytesRole).toULongLong() == bytes)
                return model.index(row, AllocationsModel::NotesColumn).data().toString();
        }
        return QStringLiteral("<no such row>");
    }

private Q_SLOTS:
    void tableShowsNotesByMoment()
    {
        const auto data = timeline();
        QVERIFY(data);
        const auto& notes = data->allocationAnnotations().all();
        QCOMPARE(notes.size(), size_t(4));
        constexpr uint64_t MiB = 1024 * 1024;
        AllocationsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(
            model.headerData(AllocationsModel::NotesColumn, Qt::Horizontal).toString(), QStringLiteral("Annotations"));

        model.setMoment(data, notes[0].event - 1);
        QCOMPARE(notesOfRow(model, 16 * MiB), QString()); // not annotated yet
        model.setMoment(data, notes[0].event);
        QCOMPARE(notesOfRow(model, 16 * MiB), QStringLiteral("saved for backward"));
        model.setMoment(data, notes[1].event);
        QCOMPARE(notesOfRow(model, 16 * MiB), QStringLiteral("saved for backward; layer 3 kv"));
        QCOMPARE(notesOfRow(model, 8 * MiB), QString());

        model.setMoment(data, data->eventCount() - 1);
        QCOMPARE(notesOfRow(model, 16 * MiB), QStringLiteral("<no such row>")); // freed
        QCOMPARE(notesOfRow(model, 12 * MiB), QStringLiteral("grad bucket")); // the block reused at its address
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        proxy.setFilterRole(AllocationsModel::FilterRole);
        proxy.setFilterFixedString(QStringLiteral("grad bucket"));
        QCOMPARE(proxy.rowCount(), 1);
        QVERIFY(proxy.index(0, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("Annotated: grad bucket")));
    }

    void hoverNamesTheNote()
    {
        const auto data = timeline();
        QVERIFY(data);
        const auto& notes = data->allocationAnnotations().all();
        TimelineWidget widget;
        widget.setTimeline(data);
        const QString onEvent = widget.describe(notes[0].event, -1);
        QVERIFY2(onEvent.contains(QStringLiteral("annotate <b>saved for backward</b>")), qPrintable(onEvent));
        QVERIFY2(onEvent.contains(QStringLiteral("on the 16.00 MiB")), qPrintable(onEvent));
        const QString lost = widget.describe(notes[2].event, -1);
        QVERIFY2(lost.contains(QStringLiteral("whose allocation the trace does not hold")), qPrintable(lost));
        // The allocation's own free event lists every note it carries.
        const int64_t freeEvent = data->device()->allocations[size_t(notes[0].allocation)].freeEvent;
        const QString onFree = widget.describe(freeEvent, -1);
        QVERIFY2(onFree.contains(QStringLiteral("annotated: <b>saved for backward</b>")), qPrintable(onFree));
        QVERIFY2(onFree.contains(QStringLiteral("annotated: <b>layer 3 kv</b>")), qPrintable(onFree));
    }
};

QTEST_MAIN(TestAllocationNotes)
#include "tst_allocationnotes.moc"
