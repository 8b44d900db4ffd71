#include "common/testutil.h"
#include "core/jsonexport.h"
#include "views/casewidget.h"
#include "views/mainwindow.h"

#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QMimeData>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <memory>

using namespace oomlens;

// The headline ways in: drag files, a folder or text onto the window, Ctrl+drop for a new case,
// and Ctrl+V. Driven through the events Qt delivers for a real drag (enter, then drop, both
// with a QMimeData) and a real key press, offscreen.
namespace {

QString scenario(const QString& name)
{
    return test::testDataDir() + QStringLiteral("/scenarios/") + name;
}

bool waitForLoads(MainWindow& window)
{
    return QTest::qWaitFor([&] { return !window.isLoading(); }, 60000);
}

std::unique_ptr<QMimeData> fileDrag(const QStringList& paths)
{
    auto mime = std::make_unique<QMimeData>();
    QList<QUrl> urls;
    for (const QString& path : paths)
        urls << QUrl::fromLocalFile(path);
    mime->setUrls(urls);
    return mime;
}

std::unique_ptr<QMimeData> textDrag(const QString& text)
{
    auto mime = std::make_unique<QMimeData>();
    mime->setText(text);
    return mime;
}

// What Qt sends while the user drags over the window and lets go in its middle: the window
// must accept the drag on enter, or the drop never comes. Returns whether the drop was taken.
bool dropOn(MainWindow& window, const QMimeData& mime, Qt::KeyboardModifiers modifiers = Qt::NoModifier)
{
    const QPoint middle = window.rect().center();
    QDragEnterEvent enter(middle, Qt::CopyAction | Qt::MoveAction | Qt::LinkAction, &mime, Qt::LeftButton, modifiers);
    QApplication::sendEvent(&window, &enter);
    if (!enter.isAccepted())
        return false;
    QDropEvent drop(QPointF(middle), enter.dropAction(), &mime, Qt::LeftButton, modifiers);
    QApplication::sendEvent(&window, &drop);
    return drop.isAccepted();
}

QStringList inputPaths(const CaseWidget* view)
{
    QStringList paths;
    for (const CaseInput& input : view->loadedCase()->input.inputs)
        paths << QString::fromStdString(input.path);
    return paths;
}

// The first diagnosis's id as `diagnose --json` names it.
QString topDiagnosis(const AnalyzedCase& loaded)
{
    const auto json = caseToJson(loaded.input, loaded.analysis);
    const auto& diagnoses = json.at("diagnoses");
    return diagnoses.empty() ? QString() : QString::fromStdString(diagnoses.front().at("id").get<std::string>());
}

} // namespace

class TestDropAndPaste : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QApplication::setOrganizationName(QStringLiteral("oomlens-tests"));
        QApplication::setApplicationName(QStringLiteral("tst_dropandpaste"));
    }

    void droppedFileOpensACase()
    {
        MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        const QString file = scenario(QStringLiteral("first_backward.pickle"));
        QVERIFY(dropOn(window, *fileDrag({ file })));
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);
        QVERIFY2(window.bannerText().isEmpty(), qPrintable(window.bannerText()));
        const AnalyzedCasePtr loaded = window.currentCase()->loadedCase();
        QCOMPARE(loaded->input.snapshots.size(), size_t(1));
        QCOMPARE(inputPaths(window.currentCase()), QStringList { file });
        // A snapshot has a timeline to look at.
        QVERIFY(window.currentCase()->tabs()->isTabEnabled(CaseWidget::TimelineTab));
    }

    void severalDroppedFilesAreOneCase()
    {
        MainWindow window;
        window.show();
        const QStringList files { scenario(QStringLiteral("fragmentation.pickle")),
            scenario(QStringLiteral("fragmentation.oom.txt")), scenario(QStringLiteral("fragmentation.summary.txt")) };
        QVERIFY(dropOn(window, *fileDrag(files)));
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);
        QVERIFY2(window.bannerText().isEmpty(), qPrintable(window.bannerText()));
        const AnalyzedCasePtr loaded = window.currentCase()->loadedCase();
        QCOMPARE(inputPaths(window.currentCase()), files);
        QCOMPARE(loaded->input.snapshots.size(), size_t(1));
        QCOMPARE(loaded->input.text.oomMessages.size(), size_t(1));
        QCOMPARE(loaded->input.text.summaries.size(), size_t(1));
        // Linked into one case, the three inputs agree on the failure the message names.
        QCOMPARE(topDiagnosis(*loaded), QStringLiteral("fragmentation"));
    }

    void droppedFolderSaysItIsAFolder()
    {
        MainWindow window;
        window.show();
        window.openFiles({ scenario(QStringLiteral("leak.oom.txt")) });
        QVERIFY(waitForLoads(window));
        const AnalyzedCasePtr before = window.currentCase()->loadedCase();

        QTemporaryDir folder;
        QVERIFY(folder.isValid());
        QVERIFY(QFile::copy(scenario(QStringLiteral("leak.summary.txt")), folder.filePath(QStringLiteral("s.txt"))));
        dropOn(window, *fileDrag({ folder.path() }));
        QVERIFY(waitForLoads(window));
        // One line that names the folder; what the open case had read stays (the folder may be
        // listed among its inputs as one that could not be read).
        QCOMPARE(window.caseCount(), 1);
        QVERIFY2(window.bannerText().contains(QStringLiteral("folder")), qPrintable(window.bannerText()));
        QVERIFY(window.bannerText().contains(QDir(folder.path()).dirName()));
        QCOMPARE(window.bannerText().count(QLatin1Char('\n')), 0);
        const AnalyzedCasePtr after = window.currentCase()->loadedCase();
        QCOMPARE(after->input.text.oomMessages.size(), before->input.text.oomMessages.size());
        QCOMPARE(after->input.text.summaries.size(), size_t(0));
        QCOMPARE(QString::fromStdString(after->input.inputs.front().path),
            QString::fromStdString(before->input.inputs.front().path));
    }

    void droppedTextIsReadLikeAPaste()
    {
        MainWindow window;
        window.show();
        const QString message = QString::fromUtf8(test::readFile(scenario(QStringLiteral("first_backward.oom.txt"))));
        QVERIFY(!message.isEmpty());
        QVERIFY(dropOn(window, *textDrag(message)));
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);
        const AnalyzedCasePtr loaded = window.currentCase()->loadedCase();
        QCOMPARE(loaded->input.text.oomMessages.size(), size_t(1));
        QCOMPARE(topDiagnosis(*loaded), QStringLiteral("first_backward"));
    }

    void dropJoinsTheCurrentCaseAndCtrlDropStartsANewOne()
    {
        MainWindow window;
        window.show();
        window.openFiles({ scenario(QStringLiteral("leak.oom.txt")) });
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);

        // A plain drop on an open case adds to it: the summary joins its OOM message.
        QVERIFY(dropOn(window, *fileDrag({ scenario(QStringLiteral("leak.summary.txt")) })));
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);
        QCOMPARE(window.currentCase()->loadedCase()->input.inputs.size(), size_t(2));

        // Ctrl+drop opens a second case and leaves the first one alone.
        CaseWidget* first = window.currentCase();
        QVERIFY(dropOn(window, *fileDrag({ scenario(QStringLiteral("capacity.oom.txt")) }), Qt::ControlModifier));
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 2);
        QCOMPARE(first->loadedCase()->input.inputs.size(), size_t(2));
        QVERIFY(window.currentCase() != first);
        QCOMPARE(inputPaths(window.currentCase()), QStringList { scenario(QStringLiteral("capacity.oom.txt")) });
    }

    void ctrlVPastesIntoTheCurrentCase()
    {
        MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.openFiles({ scenario(QStringLiteral("optimizer_step2.pickle")) });
        QVERIFY(waitForLoads(window));
        QVERIFY(window.currentCase()->loadedCase()->input.text.oomMessages.empty());

        // The message pasted after its snapshot joins it: one case, both inputs, linked.
        QApplication::clipboard()->setText(
            QString::fromUtf8(test::readFile(scenario(QStringLiteral("optimizer_step2.oom.txt")))));
        QTest::keyClick(&window, Qt::Key_V, Qt::ControlModifier);
        QVERIFY(window.isLoading());
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);
        const AnalyzedCasePtr loaded = window.currentCase()->loadedCase();
        QCOMPARE(loaded->input.inputs.size(), size_t(2));
        QCOMPARE(loaded->input.snapshots.size(), size_t(1));
        QCOMPARE(loaded->input.text.oomMessages.size(), size_t(1));

        // Ctrl+Shift+V starts a new case with the same text.
        QTest::keyClick(&window, Qt::Key_V, Qt::ControlModifier | Qt::ShiftModifier);
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 2);
        QCOMPARE(window.currentCase()->loadedCase()->input.inputs.size(), size_t(1));
    }

    void dropOfNothingReadableIsRefused()
    {
        MainWindow window;
        window.show();
        QMimeData empty;
        QVERIFY(!dropOn(window, empty));
        QVERIFY(!window.isLoading());
        QCOMPARE(window.caseCount(), 0);
    }
};

QTEST_MAIN(TestDropAndPaste)
#include "tst_dropandpaste.moc"
