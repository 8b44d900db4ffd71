#include "app/cli/launch.h"
#include "common/clirun.h"
#include "common/testutil.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <array>

using namespace oomlens;

// Where there is no display (an ssh node, CI) nothing aborts inside Qt: the window path says so in
// one line and exits 2, a mistyped command is a usage error whether or not a display exists, and
// `--screenshot` renders offscreen by itself. Run with DISPLAY, WAYLAND_DISPLAY and
// QT_QPA_PLATFORM unset, as such a machine has them.
class TestLaunchCli : public QObject
{
    Q_OBJECT

    using Run = test::CliRun;

    static Run headless(const QStringList& arguments, const QString& workingDirectory = {})
    {
        test::CliOptions options;
        options.workingDirectory = workingDirectory;
        options.timeoutMs = 120000;
        return test::runOomlensWith(arguments, options);
    }

    static QString snapshot() { return test::testDataDir() + QStringLiteral("/scenarios/first_backward.pickle"); }

    static void verifyOneLine(const Run& run, const char* part)
    {
        QVERIFY2(run.err.endsWith('\n') && run.err.count('\n') == 1, run.err.constData());
        QVERIFY2(run.err.contains(part), run.err.constData());
        QVERIFY(run.out.isEmpty());
    }

private Q_SLOTS:
    void initTestCase() { OOMLENS_REQUIRE_BINARY(); }

    void windowWithoutDisplaySaysSoInOneLine_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::newRow("no arguments") << QStringList();
        QTest::newRow("a snapshot") << QStringList { snapshot() };
        QTest::newRow("a path that is not there") << QStringList { QStringLiteral("runs/missing.pickle") };
    }

    void windowWithoutDisplaySaysSoInOneLine()
    {
        QFETCH(QStringList, arguments);
        const Run run = headless(arguments);
        QCOMPARE(run.exitCode, 2);
        verifyOneLine(run, "no display");
        QVERIFY(run.err.contains("oomlens diagnose FILE"));
        QVERIFY(run.err.contains("oomlens report FILE"));
    }

    void mistypedCommandIsAUsageError()
    {
        for (const bool display : { false, true }) {
            test::CliOptions options;
            options.noDisplay = !display;
            const Run typo = test::runOomlensWith({ QStringLiteral("diagnos"), QStringLiteral("x") }, options);
            QCOMPARE(typo.exitCode, 2);
            verifyOneLine(typo, "unknown command 'diagnos'");
            QVERIFY2(typo.err.contains("did you mean 'diagnose'?"), typo.err.constData());

            const Run unknown = test::runOomlensWith({ QStringLiteral("frobnicate") }, options);
            QCOMPARE(unknown.exitCode, 2);
            verifyOneLine(unknown, "unknown command 'frobnicate'");
            QVERIFY(!unknown.err.contains("did you mean"));
        }
    }

    // A file that happens to be named like a command word is opened, not taken for a typo.
    void aFileNamedLikeACommandIsAFile()
    {
        QTemporaryDir dir;
        QVERIFY(QFile::copy(snapshot(), dir.filePath(QStringLiteral("diagnos"))));
        const Run run = headless({ QStringLiteral("diagnos") }, dir.path());
        QCOMPARE(run.exitCode, 2);
        verifyOneLine(run, "no display");
    }

    void screenshotsRenderOffscreenByThemselves()
    {
        QTemporaryDir dir;
        const Run run = headless({ QStringLiteral("--screenshot"), dir.path(), snapshot() });
        if (run.exitCode == 2 && run.err.contains("unknown option"))
            QSKIP("this oomlens was built without the GUI");
        QVERIFY2(run.exitCode == 0, run.err.constData());
        QVERIFY(!run.err.contains("platform plugin"));
        const QStringList pictures = QDir(dir.path()).entryList({ QStringLiteral("*.png") }, QDir::Files);
        QVERIFY2(pictures.contains(QStringLiteral("overview.png")), qPrintable(pictures.join(QLatin1Char(' '))));
    }

    // The decision itself, for environments a test machine cannot be put in.
    void decision()
    {
        using Kind = cli::Launch::Kind;
        cli::DisplayEnvironment none;
        cli::DisplayEnvironment x11;
        x11.display = true;
        cli::DisplayEnvironment chosen;
        chosen.platformChosen = true;
        cli::DisplayEnvironment desktop; // Windows, macOS: a window needs no display server
        desktop.needsDisplay = false;
        const auto decide = [](std::initializer_list<const char*> words, const cli::DisplayEnvironment& environment) {
            std::vector<const char*> argv { "oomlens" };
            argv.insert(argv.end(), words.begin(), words.end());
            return cli::decideLaunch(argv, environment);
        };
        QCOMPARE(decide({ "diagnose", "x" }, none).kind, Kind::Command);
        QCOMPARE(decide({ "--version" }, none).kind, Kind::Command);
        QCOMPARE(decide({}, none).kind, Kind::Stop);
        QCOMPARE(decide({}, none).exitStatus, 2);
        QCOMPARE(decide({}, x11).kind, Kind::Window);
        QCOMPARE(decide({}, chosen).kind, Kind::Window);
        QCOMPARE(decide({}, desktop).kind, Kind::Window);
        QCOMPARE(decide({ "reprot" }, x11).kind, Kind::Stop);
        QVERIFY(decide({ "reprot" }, x11).message.contains(QStringLiteral("did you mean 'report'?")));
        const cli::Launch screenshots = decide({ "--screenshot", "/tmp/shots", "a.pickle" }, none);
        QCOMPARE(screenshots.kind, Kind::Window);
        QVERIFY(screenshots.offscreen);
        QVERIFY(!decide({ "--screenshot=/tmp/shots" }, chosen).offscreen); // the platform asked for wins

        QCOMPARE(cli::closestCommand("diagnos"), QStringLiteral("diagnose"));
        QCOMPARE(cli::closestCommand("sumarize"), QStringLiteral("summarize"));
        QCOMPARE(cli::closestCommand("pln"), QStringLiteral("plan"));
        QVERIFY(cli::closestCommand("frobnicate").isEmpty());
        QVERIFY(cli::closestCommand("x").isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestLaunchCli)
#include "tst_launchcli.moc"
