#include "views/mainwindow.h"
#include "views/recentfiles.h"

#include <QAction>
#include <QApplication>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QSettings>
#include <QTest>

using namespace oomlens;

namespace {

// A menu as a user reads it: each entry's text, shortcut and whether it can be chosen, a line
// for a separator, a submenu by its title.
QStringList entries(const QMenu* menu)
{
    QStringList lines;
    for (const QAction* action : menu->actions()) {
        if (action->isSeparator()) {
            lines << QStringLiteral("---");
            continue;
        }
        QString line = action->text();
        if (!action->shortcut().isEmpty())
            line += QStringLiteral(" [%1]").arg(action->shortcut().toString(QKeySequence::PortableText));
        if (action->menu())
            line += QStringLiteral(" >");
        if (!action->isEnabled())
            line += QStringLiteral(" (disabled)");
        lines << line;
    }
    return lines;
}

QStringList lines(std::initializer_list<const char*> texts)
{
    QStringList list;
    for (const char* text : texts)
        list << QString::fromUtf8(text);
    return list;
}

QMenu* menuTitled(MainWindow& window, const QString& title)
{
    for (QAction* action : window.menuBar()->actions()) {
        if (action->text() == title)
            return action->menu();
    }
    return nullptr;
}

} // namespace

// The window's menus, shortcuts and what they do: every entry where the user finds it.
class TestMainMenus : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QApplication::setOrganizationName(QStringLiteral("oomlens-tests"));
        QApplication::setApplicationName(QStringLiteral("tst_mainmenus"));
    }

    void menuBarHoldsFileViewGoHelp()
    {
        MainWindow window;
        QStringList titles;
        for (const QAction* action : window.menuBar()->actions())
            titles << action->text();
        QCOMPARE(titles, lines({ "&File", "&View", "&Go", "&Help" }));
    }

    void everyEntryAndShortcut_data()
    {
        QTest::addColumn<QString>("menu");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("file") << QStringLiteral("&File")
                              << lines({ "&Open… [Open]", "&Add to Case… [Ctrl+Shift+O]", "Open &Job… [Ctrl+Shift+J]",
                                     "Open Job &Folder…", "Open &Recent >", "---", "&Paste [Paste]",
                                     "Paste as &New Case [Ctrl+Shift+V]", "Open &Example Case", "---",
                                     "&Export Chart… [Ctrl+E]", "Export &Report… [Ctrl+Shift+E]", "---",
                                     "&Settings… [Ctrl+,]", "&Close Case [Close]", "---", "&Quit [Quit]" });
        QTest::newRow("view") << QStringLiteral("&View")
                              << lines({ "&Overview [Ctrl+1]", "&Timeline [Ctrl+2]", "&Events [Ctrl+3]", "---",
                                     "&Compare… [Ctrl+Shift+C]", "---", "Cancel Loading [Esc]" });
        QTest::newRow("go") << QStringLiteral("&Go")
                            << lines({ "To the &Peak [Ctrl+P]", "To the &OOM [Ctrl+M]", "&Search Stacks [Find]" });
        QTest::newRow("help") << QStringLiteral("&Help") << lines({ "&Keyboard Shortcuts [Help]", "&About oomlens" });
    }

    void everyEntryAndShortcut()
    {
        QFETCH(QString, menu);
        QFETCH(QStringList, expected);
        // The example case is a resource of the app's, which a build (this test) may leave out.
        if (!QFileInfo::exists(QStringLiteral(":/oomlens/examples/oom_case.txt")))
            expected.replaceInStrings(
                QStringLiteral("Open &Example Case"), QStringLiteral("Open &Example Case (disabled)"));
        // Standard keys (Close is Ctrl+W or Ctrl+F4, Quit may have none) are the platform's.
        const std::pair<const char*, QKeySequence::StandardKey> standard[] = { { " [Open]", QKeySequence::Open },
            { " [Paste]", QKeySequence::Paste }, { " [Close]", QKeySequence::Close }, { " [Quit]", QKeySequence::Quit },
            { " [Find]", QKeySequence::Find }, { " [Help]", QKeySequence::HelpContents } };
        for (const auto& [name, key] : standard) {
            const QString sequence = QKeySequence(key).toString(QKeySequence::PortableText);
            expected.replaceInStrings(
                QString::fromUtf8(name), sequence.isEmpty() ? QString() : QStringLiteral(" [%1]").arg(sequence));
        }
        MainWindow window;
        const QMenu* found = menuTitled(window, menu);
        QVERIFY(found);
        QCOMPARE(entries(found), expected);
    }

    void openRecentListsTheRecentFiles()
    {
        QSettings().remove(QStringLiteral("recentFiles"));
        RecentFiles().add({ QStringLiteral("/runs/a.pickle") });
        MainWindow window;
        QMenu* file = menuTitled(window, QStringLiteral("&File"));
        QVERIFY(file);
        QMenu* recent = nullptr;
        for (QAction* action : file->actions()) {
            if (action->text() == QStringLiteral("Open &Recent"))
                recent = action->menu();
        }
        QVERIFY(recent);
        emit recent->aboutToShow();
        QCOMPARE(entries(recent), lines({ "a.pickle  —  /runs", "---", "Clear" }));
        QSettings().remove(QStringLiteral("recentFiles"));
    }

    void compareEntryOpensTheCompareTab()
    {
        MainWindow window;
        QMenu* view = menuTitled(window, QStringLiteral("&View"));
        QVERIFY(view);
        for (QAction* action : view->actions()) {
            if (action->text() == QStringLiteral("&Compare…"))
                action->trigger();
        }
        QVERIFY(window.compareView());
        QCOMPARE(window.tabCount(), 1);
    }
};

QTEST_MAIN(TestMainMenus)
#include "tst_mainmenus.moc"
