#include "views/recentfiles.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QMenu>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace oomlens;

namespace {

QStringList entryTexts(const QMenu& menu)
{
    QStringList texts;
    for (const QAction* action : menu.actions())
        texts << (action->isSeparator() ? QStringLiteral("---") : action->text());
    return texts;
}

QAction* entry(const QMenu& menu, const QString& text)
{
    for (QAction* action : menu.actions()) {
        if (action->text() == text)
            return action;
    }
    return nullptr;
}

} // namespace

class TestRecentFiles : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QApplication::setOrganizationName(QStringLiteral("oomlens-tests"));
        QApplication::setApplicationName(QStringLiteral("tst_recentfiles"));
    }
    void init() { QSettings().remove(QStringLiteral("recentFiles")); }

    void newestFirst()
    {
        RecentFiles recent;
        recent.add({ QStringLiteral("/runs/a.pickle") });
        recent.add({ QStringLiteral("/runs/b.pickle") });
        QCOMPARE(recent.paths(), QStringList({ QStringLiteral("/runs/b.pickle"), QStringLiteral("/runs/a.pickle") }));
    }

    void severalAtOnceEndWithTheLastNewest()
    {
        RecentFiles recent;
        recent.add({ QStringLiteral("/a"), QStringLiteral("/b"), QStringLiteral("/c") });
        QCOMPARE(recent.paths(), QStringList({ QStringLiteral("/c"), QStringLiteral("/b"), QStringLiteral("/a") }));
    }

    void aFileOpenedAgainMovesToTheFrontOnce()
    {
        RecentFiles recent;
        recent.add({ QStringLiteral("/a"), QStringLiteral("/b"), QStringLiteral("/c") });
        recent.add({ QStringLiteral("/a") });
        QCOMPARE(recent.paths(), QStringList({ QStringLiteral("/a"), QStringLiteral("/c"), QStringLiteral("/b") }));
        recent.add({ QStringLiteral("/b"), QStringLiteral("/b") });
        QCOMPARE(recent.paths(), QStringList({ QStringLiteral("/b"), QStringLiteral("/a"), QStringLiteral("/c") }));
    }

    void keepsTheNewestTen()
    {
        RecentFiles recent;
        QStringList opened;
        for (int i = 0; i < 12; ++i) {
            opened << QStringLiteral("/runs/%1.pickle").arg(i);
            recent.add({ opened.back() });
        }
        QCOMPARE(RecentFiles::maxCount, 10);
        QCOMPARE(recent.paths().size(), 10);
        QCOMPARE(recent.paths().front(), QStringLiteral("/runs/11.pickle"));
        QCOMPARE(recent.paths().back(), QStringLiteral("/runs/2.pickle"));
    }

    void aMissingFileStaysListed()
    {
        // It may live on a drive that comes back; opening it then says what is wrong.
        RecentFiles recent;
        const QString gone = QStringLiteral("/no/such/folder/gone.pickle");
        recent.add({ gone });
        QCOMPARE(recent.paths(), QStringList({ gone }));
        QMenu menu;
        recent.fillMenu(&menu);
        QVERIFY(entry(menu, QStringLiteral("gone.pickle  —  /no/such/folder")));
    }

    void outlivesTheObject()
    {
        RecentFiles().add({ QStringLiteral("/a") });
        QCOMPARE(RecentFiles().paths(), QStringList({ QStringLiteral("/a") }));
    }

    void tellsWhenTheListChanges()
    {
        RecentFiles recent;
        QSignalSpy changed(&recent, &RecentFiles::changed);
        recent.add({});
        QCOMPARE(changed.count(), 0);
        recent.add({ QStringLiteral("/a") });
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed.last().at(0).toStringList(), QStringList({ QStringLiteral("/a") }));
        recent.clear();
        QCOMPARE(changed.count(), 2);
        QVERIFY(changed.last().at(0).toStringList().isEmpty());
        QVERIFY(recent.paths().isEmpty());
    }

    void dialogsStartInTheNewestFilesFolder()
    {
        RecentFiles recent;
        QCOMPARE(recent.lastFolder(), QDir::homePath());
        recent.add({ QStringLiteral("/runs/old/a.pickle"), QStringLiteral("/runs/new/b.pickle") });
        QCOMPARE(recent.lastFolder(), QStringLiteral("/runs/new"));
    }

    void menuSaysNoneWhenEmpty()
    {
        RecentFiles recent;
        QMenu menu;
        recent.fillMenu(&menu);
        QCOMPARE(entryTexts(menu), QStringList({ QStringLiteral("(none)") }));
        QVERIFY(!menu.actions().front()->isEnabled());
    }

    void menuListsNewestFirstThenClear()
    {
        RecentFiles recent;
        recent.add({ QStringLiteral("/runs/a.pickle"), QStringLiteral("/logs/b.txt") });
        QMenu menu;
        recent.fillMenu(&menu);
        QCOMPARE(entryTexts(menu),
            QStringList({ QStringLiteral("b.txt  —  /logs"), QStringLiteral("a.pickle  —  /runs"),
                QStringLiteral("---"), QStringLiteral("Clear") }));
    }

    void choosingAnEntryAsksToOpenIt()
    {
        RecentFiles recent;
        recent.add({ QStringLiteral("/runs/a.pickle"), QStringLiteral("/logs/b.txt") });
        QMenu menu;
        recent.fillMenu(&menu);
        QSignalSpy open(&recent, &RecentFiles::openRequested);
        entry(menu, QStringLiteral("a.pickle  —  /runs"))->trigger();
        QCOMPARE(open.count(), 1);
        QCOMPARE(open.front().at(0).toStringList(), QStringList({ QStringLiteral("/runs/a.pickle") }));
    }

    void clearForgetsEverything()
    {
        RecentFiles recent;
        recent.add({ QStringLiteral("/a") });
        QMenu menu;
        recent.fillMenu(&menu);
        entry(menu, QStringLiteral("Clear"))->trigger();
        QVERIFY(recent.paths().isEmpty());
        recent.fillMenu(&menu);
        QCOMPARE(entryTexts(menu), QStringList({ QStringLiteral("(none)") }));
    }

    void anAttachedMenuIsRefilledWhenItOpens()
    {
        RecentFiles recent;
        QMenu menu;
        recent.attachMenu(&menu);
        QCOMPARE(entryTexts(menu), QStringList({ QStringLiteral("(none)") }));
        recent.add({ QStringLiteral("/runs/a.pickle") });
        emit menu.aboutToShow();
        QCOMPARE(entryTexts(menu).front(), QStringLiteral("a.pickle  —  /runs"));
    }
};

QTEST_MAIN(TestRecentFiles)
#include "tst_recentfiles.moc"
