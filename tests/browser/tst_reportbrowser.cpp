#include "common/testutil.h"
#include "core/tst_htmlfixture.h"

#include "core/caseanalysis.h"
#include "core/report/htmlescape.h"
#include "core/report/htmlreport.h"
#include "parsers/inputloader.h"

#include <QColor>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace oomlens;

// Renders reports in a real headless Chromium and checks what a reader's browser would do:
// no console message (the page has no script, so any message is a CSP refusal or a parse
// problem), no request leaving the page, a non-blank picture with the chart colours in it,
// and the diagnosis in the DOM with hostile strings still inert text.
class TestReportBrowser : public QObject
{
    Q_OBJECT

    QString m_chromium;
    QTemporaryDir m_dir;

    struct Rendered
    {
        int exitCode = -1;
        QByteArray dom;
        QByteArray log;
        QStringList pageRequests; // URLs the page itself asked the network stack for
        QImage screenshot;
        QByteArray pdf;
    };

    QStringList baseArguments(const QString& profile) const
    {
        return { QStringLiteral("--headless"), QStringLiteral("--no-sandbox"), QStringLiteral("--disable-gpu"),
            QStringLiteral("--no-first-run"), QStringLiteral("--disable-background-networking"),
            QStringLiteral("--disable-component-update"), QStringLiteral("--disable-sync"),
            QStringLiteral("--user-data-dir=") + profile, QStringLiteral("--enable-logging=stderr"),
            QStringLiteral("--v=0") };
    }

    // Requests the page made: Chromium's own background fetches (update checks, account
    // probes) carry the initiator "not an origin"; anything a document starts has one.
    static QStringList pageRequestsIn(const QString& netLogPath)
    {
        QFile file(netLogPath);
        if (!file.open(QIODevice::ReadOnly))
            return { QStringLiteral("(no net log written)") };
        QByteArray bytes = file.readAll();
        // Chromium may be stopped before it closes the JSON; close it ourselves.
        if (!bytes.trimmed().endsWith('}')) {
            bytes = bytes.trimmed();
            if (bytes.endsWith(','))
                bytes.chop(1);
            bytes += "]}";
        }
        const QJsonObject root = QJsonDocument::fromJson(bytes).object();
        const QJsonObject types
            = root.value(QStringLiteral("constants")).toObject().value(QStringLiteral("logEventTypes")).toObject();
        const int startJob = types.value(QStringLiteral("URL_REQUEST_START_JOB")).toInt(-1);
        QStringList urls;
        for (const QJsonValue& value : root.value(QStringLiteral("events")).toArray()) {
            const QJsonObject event = value.toObject();
            if (event.value(QStringLiteral("type")).toInt() != startJob)
                continue;
            const QJsonObject params = event.value(QStringLiteral("params")).toObject();
            const QString url = params.value(QStringLiteral("url")).toString();
            if (url.isEmpty() || params.value(QStringLiteral("initiator")).toString() == QLatin1String("not an origin"))
                continue;
            urls.append(url);
        }
        return urls;
    }

    Rendered render(const QString& htmlPath, const QString& tag, bool dark = false)
    {
        Rendered result;
        const QString url = QStringLiteral("file://") + htmlPath;
        const auto run = [&](const QStringList& action, const QString& netLog, QByteArray* out) {
            QTemporaryDir profile;
            QStringList arguments = baseArguments(profile.path());
            arguments << QStringLiteral("--log-net-log=") + netLog << action << url;
            if (dark)
                arguments.prepend(QStringLiteral("--force-dark-mode"));
            QProcess chromium;
            chromium.start(m_chromium, arguments);
            if (!chromium.waitForFinished(90000)) {
                chromium.kill();
                chromium.waitForFinished();
                return -1;
            }
            if (out)
                *out = chromium.readAllStandardOutput();
            result.log += chromium.readAllStandardError();
            result.pageRequests += pageRequestsIn(netLog);
            return chromium.exitCode();
        };
        const QString screenshotPath = m_dir.filePath(tag + QStringLiteral(".png"));
        const int domExit
            = run({ QStringLiteral("--dump-dom") }, m_dir.filePath(tag + QStringLiteral(".dom.netlog")), &result.dom);
        const int shotExit
            = run({ QStringLiteral("--window-size=1200,2000"), QStringLiteral("--screenshot=") + screenshotPath },
                m_dir.filePath(tag + QStringLiteral(".shot.netlog")), nullptr);
        const QString pdfPath = m_dir.filePath(tag + QStringLiteral(".pdf"));
        const int pdfExit
            = run({ QStringLiteral("--no-pdf-header-footer"), QStringLiteral("--print-to-pdf=") + pdfPath },
                m_dir.filePath(tag + QStringLiteral(".pdf.netlog")), nullptr);
        result.exitCode = domExit != 0 ? domExit : (shotExit != 0 ? shotExit : pdfExit);
        result.screenshot = QImage(screenshotPath);
        QFile pdf(pdfPath);
        if (pdf.open(QIODevice::ReadOnly))
            result.pdf = pdf.readAll();
        return result;
    }

    QString write(const QString& name, const std::string& html)
    {
        const QString path = m_dir.filePath(name);
        QFile file(path);
        if (!file.open(QIODevice::WriteOnly))
            qFatal("cannot write %s", qPrintable(path));
        file.write(html.data(), static_cast<qint64>(html.size()));
        return path;
    }

    static QStringList consoleMessages(const QByteArray& log)
    {
        QStringList messages;
        for (const QByteArray& line : log.split('\n')) {
            if (line.contains(":CONSOLE"))
                messages.append(QString::fromUtf8(line));
        }
        return messages;
    }

    static double grayStdDev(const QImage& image)
    {
        double sum = 0;
        double squares = 0;
        const qint64 count = qint64(image.width()) * image.height();
        for (int y = 0; y < image.height(); ++y) {
            for (int x = 0; x < image.width(); ++x) {
                const double gray = qGray(image.pixel(x, y));
                sum += gray;
                squares += gray * gray;
            }
        }
        const double mean = sum / static_cast<double>(count);
        return std::sqrt(std::max(0.0, squares / static_cast<double>(count) - mean * mean));
    }

    static int pixelsNear(const QImage& image, QColor color)
    {
        int hits = 0;
        for (int y = 0; y < image.height(); ++y) {
            for (int x = 0; x < image.width(); ++x) {
                const QColor pixel = image.pixelColor(x, y);
                if (std::abs(pixel.red() - color.red()) + std::abs(pixel.green() - color.green())
                        + std::abs(pixel.blue() - color.blue())
                    < 12)
                    ++hits;
            }
        }
        return hits;
    }

    // DOM serialisation escapes only &, < and > in text.
    static QByteArray domText(const std::string& text)
    {
        QByteArray out;
        for (char c : text) {
            if (c == '&')
                out += "&amp;";
            else if (c == '<')
                out += "&lt;";
            else if (c == '>')
                out += "&gt;";
            else
                out += c;
        }
        return out;
    }

    void checkRendered(const Rendered& page, const CaseAnalysis& analysis)
    {
        QCOMPARE(page.exitCode, 0);
        const QStringList console = consoleMessages(page.log);
        QVERIFY2(console.isEmpty(), qPrintable(console.join(QLatin1Char('\n'))));
        QVERIFY2(page.pageRequests.isEmpty(), qPrintable(page.pageRequests.join(QLatin1Char('\n'))));
        QVERIFY(page.dom.contains("<article class=\"card\""));
        QVERIFY(!analysis.diagnoses.empty());
        QVERIFY2(
            page.dom.contains(domText(analysis.diagnoses.front().title)), analysis.diagnoses.front().title.c_str());
        QVERIFY(!page.dom.contains("<script"));
        QVERIFY(!page.dom.contains("<img"));
        QVERIFY(page.dom.contains("<svg"));
        QVERIFY(!page.screenshot.isNull());
        QCOMPARE(page.screenshot.width(), 1200);
        // @media print yields a real document, several pages of it.
        QVERIFY(page.pdf.startsWith("%PDF-"));
        const QRegularExpression pageObject(QStringLiteral("/Type\\s*/Page(?!s)"));
        const qsizetype pages = QString::fromLatin1(page.pdf).count(pageObject);
        QVERIFY2(pages >= 2, qPrintable(QStringLiteral("the printed report has %1 pages").arg(pages)));
        const double spread = grayStdDev(page.screenshot);
        QVERIFY2(spread > 20, qPrintable(QStringLiteral("screenshot looks blank: gray std-dev %1").arg(spread)));
    }

private Q_SLOTS:
    void initTestCase()
    {
        for (const QString& name :
            { QStringLiteral("chromium"), QStringLiteral("chromium-browser"), QStringLiteral("google-chrome") }) {
            m_chromium = QStandardPaths::findExecutable(name);
            if (!m_chromium.isEmpty())
                break;
        }
        if (m_chromium.isEmpty())
            QSKIP("no chromium on PATH (/usr/bin/chromium): the report is not checked in a real browser");
        QVERIFY(m_dir.isValid());
        if (qEnvironmentVariableIsSet("OOMLENS_KEEP_REPORTS")) {
            m_dir.setAutoRemove(false);
            qInfo("reports and screenshots kept in %s", qPrintable(m_dir.path()));
        }
    }

    // The checker itself: a page that does load something and breaks CSP must be caught.
    void detectsNetworkAndConsoleInAControlPage()
    {
        const QString path = write(QStringLiteral("control.html"),
            "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" "
            "content=\"default-src 'none'\"></head><body><p>control</p>"
            "<img src=\"http://127.0.0.1:9/pixel.png\"><iframe src=\"http://127.0.0.1:9/\"></iframe>"
            "</body></html>");
        const Rendered page = render(path, QStringLiteral("control"));
        QVERIFY2(!consoleMessages(page.log).isEmpty(), "a CSP refusal should show up as a console message");

        const QString open = write(QStringLiteral("open.html"),
            "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/pixel.png\"></body></html>");
        const Rendered unlocked = render(open, QStringLiteral("open"));
        QVERIFY2(!unlocked.pageRequests.isEmpty(), "a page-initiated request should appear in the net log");
    }

    void hostileFixture()
    {
        const auto [input, analysis] = test::hostileTrainingCase();
        const QString path = write(QStringLiteral("hostile.html"), report::buildHtmlReport(input, analysis));
        const Rendered page = render(path, QStringLiteral("hostile"));
        checkRendered(page, analysis);
        QVERIFY(page.dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        QVERIFY(page.dom.contains("\"&gt;&lt;img src=x onerror=alert(1)&gt;"));
        // The stacked bands are painted: the activations colour (#e37b22) fills part of the chart.
        QVERIFY(pixelsNear(page.screenshot, QColor(0xe3, 0x7b, 0x22)) > 2000);

        const Rendered dark = render(path, QStringLiteral("hostile-dark"), true);
        QCOMPARE(dark.exitCode, 0);
        QVERIFY(qGray(dark.screenshot.pixel(5, 5)) < 60); // dark background
        QVERIFY(qGray(page.screenshot.pixel(5, 5)) > 200); // light background
        QVERIFY(pixelsNear(dark.screenshot, QColor(0xf2, 0x9b, 0x4c)) > 2000); // dark-mode activations
    }

    void realInputs_data()
    {
        QTest::addColumn<QStringList>("files");
        const QString scenarios = test::testDataDir() + QStringLiteral("/scenarios/");
        QTest::newRow("first_backward scenario") << QStringList { scenarios + QStringLiteral("first_backward.pickle"),
            scenarios + QStringLiteral("first_backward.oom.txt"),
            scenarios + QStringLiteral("first_backward.summary.txt") };
        QTest::newRow("fragmentation scenario") << QStringList { scenarios + QStringLiteral("fragmentation.pickle"),
            scenarios + QStringLiteral("fragmentation.oom.txt") };
        QTest::newRow("corpus full step") << QStringList { test::corpusDir()
                + QStringLiteral("/snapshots/kkaitlyn111__cs336-a2-systems__memory_ctx128_fullstep_.pickle"),
            scenarios + QStringLiteral("first_backward.oom.txt") };
    }

    void realInputs()
    {
        QFETCH(QStringList, files);
        if (QString::fromUtf8(QTest::currentDataTag()).startsWith(QLatin1String("corpus")))
            OOMLENS_REQUIRE_SHARED();
        Case input;
        for (const QString& file : files)
            addFile(input, file.toStdString());
        for (const CaseInput& read : input.inputs)
            QVERIFY2(!read.error, read.error ? read.error->c_str() : "");
        const CaseAnalysis analysis = analyzeCase(input);
        const std::string html = report::buildHtmlReport(input, analysis);
        const QString tag = QString::fromUtf8(QTest::currentDataTag()).replace(QLatin1Char(' '), QLatin1Char('_'));
        const Rendered page = render(write(tag + QStringLiteral(".html"), html), tag);
        checkRendered(page, analysis);
    }
};

QTEST_GUILESS_MAIN(TestReportBrowser)
#include "tst_reportbrowser.moc"
