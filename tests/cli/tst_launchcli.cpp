#include "app/cli/launch.h"
#include "common/clirun.h"
#include "common/testutil.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
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

    // What a window that cannot open says: no display where the build has a GUI, none at all where not.
    static const char* noWindowWords() { return test::oomlensBinaryHasGui() ? "no display" : "this build has no GUI"; }

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
        verifyOneLine(run, noWindowWords());
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
        verifyOneLine(run, noWindowWords());
    }

    void screenshotsRenderOffscreenByThemselves()
    {
        if (!test::oomlensBinaryHasGui())
            QSKIP("this oomlens was built without the GUI (OOMLENS_BUILD_GUI=OFF)");
        QTemporaryDir dir;
        const Run run = headless({ QStringLiteral("--screenshot"), dir.path(), snapshot() });
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
        QVERIFY(decide({ "reprot" }, x11).message.find("did you mean 'report'?") != std::string::npos);
        const cli::Launch screenshots = decide({ "--screenshot", "/tmp/shots", "a.pickle" }, none);
        QCOMPARE(screenshots.kind, Kind::Window);
        QVERIFY(screenshots.offscreen);
        QVERIFY(!decide({ "--screenshot=/tmp/shots" }, chosen).offscreen); // the platform asked for wins

        QCOMPARE(cli::closestCommand("diagnos"), std::string("diagnose"));
        QCOMPARE(cli::closestCommand("sumarize"), std::string("summarize"));
        QCOMPARE(cli::closestCommand("pln"), std::string("plan"));
        QVERIFY(cli::closestCommand("frobnicate").empty());
        QVERIFY(cli::closestCommand("x").empty());
    }

    // A command-line-only build (OOMLENS_BUILD_GUI=OFF, the static binary for cluster nodes): what
    // would open the window says in one line that there is none, display or not, and exits 2;
    // every command, --help and --version, and a mistyped command, are answered as in any build.
    void decisionWithoutTheGui()
    {
        using Kind = cli::Launch::Kind;
        cli::DisplayEnvironment x11;
        x11.display = true;
        cli::DisplayEnvironment none;
        const auto decide = [](std::initializer_list<const char*> words, const cli::DisplayEnvironment& environment) {
            std::vector<const char*> argv { "oomlens" };
            argv.insert(argv.end(), words.begin(), words.end());
            return cli::decideLaunch(argv, environment, cli::Gui::Absent);
        };
        const QString existing = snapshot();
        const QByteArray file = existing.toUtf8();
        for (const cli::DisplayEnvironment& environment : { x11, none }) {
            for (const std::vector<const char*>& words :
                std::vector<std::vector<const char*>> { {}, { file.constData() }, { "runs/missing.pickle" }, { "-" },
                    { "--screenshot", "/tmp/shots" }, { "--screenshot=/tmp/shots", file.constData() } }) {
                std::vector<const char*> argv { "oomlens" };
                argv.insert(argv.end(), words.begin(), words.end());
                const cli::Launch launch = cli::decideLaunch(argv, environment, cli::Gui::Absent);
                QCOMPARE(launch.kind, Kind::Stop);
                QCOMPARE(launch.exitStatus, 2);
                QVERIFY(launch.message.ends_with('\n'));
                QCOMPARE(std::count(launch.message.begin(), launch.message.end(), '\n'), 1);
                QVERIFY2(launch.message.starts_with("oomlens: this build has no GUI; "), launch.message.c_str());
                QVERIFY(launch.message.find("'oomlens diagnose FILE...'") != std::string::npos);
            }
            QCOMPARE(decide({ "diagnose", "x" }, environment).kind, Kind::Command);
            QCOMPARE(decide({ "mcp" }, environment).kind, Kind::Command);
            QCOMPARE(decide({ "--help" }, environment).kind, Kind::Command);
            QCOMPARE(decide({ "--version" }, environment).kind, Kind::Command);
            // An option the window would not take either is the usage error it always was.
            QCOMPARE(decide({ "--bogus" }, environment).kind, Kind::Command);
            const cli::Launch typo = decide({ "diagnos", "x" }, environment);
            QCOMPARE(typo.kind, Kind::Stop);
            QVERIFY(typo.message.find("did you mean 'diagnose'?") != std::string::npos);
        }
    }

    // In that build `oomlens --help` lists every command but the window.
    void usageWithoutTheGui()
    {
        const std::string built = cli::usageText(cli::Gui::Built);
        const std::string absent = cli::usageText(cli::Gui::Absent);
        QVERIFY(built.find("oomlens [FILE...]") != std::string::npos);
        QVERIFY(absent.find("oomlens [FILE...]") == std::string::npos);
        QVERIFY(absent.find("GUI") == std::string::npos);
        for (const cli::Command& command : cli::commands())
            QVERIFY2(absent.find(std::string("oomlens ") + command.synopsis) != std::string::npos, command.name);
    }
};

QTEST_GUILESS_MAIN(TestLaunchCli)
#include "tst_launchcli.moc"
