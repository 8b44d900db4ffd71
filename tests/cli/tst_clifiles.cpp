#include "app/cli/paths.h"
#include "opening/atomicfile.h"
#include "opening/timestamp.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSaveFile>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>

#include <sys/stat.h>

using namespace oomlens;

// The file-system side of the command line without Qt (opening/atomicfile.h, opening/timestamp.h,
// app/cli/paths.h): reports and summaries written whole or not at all as QSaveFile wrote them, the
// folders `summarize -o` makes, and the report's time stamp in QDateTime's ISO form.
class TestCliFiles : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

    std::string path(const char* name) const { return m_dir.filePath(QString::fromUtf8(name)).toStdString(); }

    static QByteArray contents(const std::string& file)
    {
        QFile in(QString::fromStdString(file));
        return in.open(QIODevice::ReadOnly) ? in.readAll() : QByteArray();
    }

    // Nothing but `expected` in the folder: no temporary file left behind.
    void verifyOnly(const QStringList& expected) const
    {
        QStringList entries = QDir(m_dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::System);
        entries.sort();
        QCOMPARE(entries, expected);
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void init()
    {
        QDir(m_dir.path()).removeRecursively();
        QVERIFY(QDir().mkpath(m_dir.path()));
    }

    void foldersAndLinks()
    {
        QVERIFY(cli::makeFolders(path("made/deep/er")));
        QVERIFY(QFileInfo(QString::fromStdString(path("made/deep/er"))).isDir());
        QVERIFY(cli::makeFolders(path("made"))); // already there
        QVERIFY(!cli::existsOrIsLink(path("missing")));
        QVERIFY(QFile::link(m_dir.filePath(QStringLiteral("nowhere")), m_dir.filePath(QStringLiteral("dangling"))));
        QVERIFY(cli::existsOrIsLink(path("dangling"))); // a dangling link is something there
        QVERIFY(!cli::makeFolders(path("dangling")));
    }

    void writesWholeFilesAndReplacesOldOnes()
    {
        std::string error;
        QVERIFY(writeFileAtomically(path("report.html"), "first", error));
        QCOMPARE(contents(path("report.html")), QByteArray("first"));
        QVERIFY(writeFileAtomically(path("report.html"), "second, longer", error));
        QCOMPARE(contents(path("report.html")), QByteArray("second, longer"));
        QVERIFY(writeFileAtomically(path("empty.html"), "", error));
        QCOMPARE(QFileInfo(QString::fromStdString(path("empty.html"))).size(), 0);
        verifyOnly({ QStringLiteral("empty.html"), QStringLiteral("report.html") });
    }

    void keepsPermissionsAndLinks()
    {
        std::string error;
        QVERIFY(writeFileAtomically(path("shared.json"), "old", error));
        QVERIFY(::chmod(path("shared.json").c_str(), 0640) == 0);
        QVERIFY(writeFileAtomically(path("shared.json"), "new", error));
        struct stat status = {};
        QVERIFY(::stat(path("shared.json").c_str(), &status) == 0);
        QCOMPARE(status.st_mode & 07777, mode_t(0640));
        // A link keeps pointing at the file, which is replaced.
        QVERIFY(QFile::link(QString::fromStdString(path("shared.json")), m_dir.filePath(QStringLiteral("link.json"))));
        QVERIFY(writeFileAtomically(path("link.json"), "through the link", error));
        QVERIFY(QFileInfo(m_dir.filePath(QStringLiteral("link.json"))).isSymLink());
        QCOMPARE(contents(path("shared.json")), QByteArray("through the link"));
        verifyOnly({ QStringLiteral("link.json"), QStringLiteral("shared.json") });
    }

    // In QSaveFile's words, which the "cannot write" lines have always ended with.
    void saysWhyItCannotWrite()
    {
        QVERIFY(QDir().mkpath(m_dir.filePath(QStringLiteral("folder"))));
        for (const char* name : { "no/such/folder/r.html", "folder" }) {
            std::string error;
            QVERIFY(!writeFileAtomically(path(name), "x", error));
            QSaveFile file(QString::fromStdString(path(name)));
            QVERIFY(!file.open(QIODevice::WriteOnly));
            QCOMPARE(error, file.errorString().toStdString());
        }
        verifyOnly({ QStringLiteral("folder") });
    }

    void timestampIsIsoUtcToTheSecond()
    {
        const QString before = QDateTime::currentDateTimeUtc().toString(Qt::ISODate);
        const std::string stamp = utcTimestampNow();
        const QString after = QDateTime::currentDateTimeUtc().toString(Qt::ISODate);
        QVERIFY2(QRegularExpression(QStringLiteral("^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$"))
                     .match(QString::fromStdString(stamp))
                     .hasMatch(),
            stamp.c_str());
        QVERIFY2(QString::fromStdString(stamp) == before || QString::fromStdString(stamp) == after, stamp.c_str());
    }
};

QTEST_GUILESS_MAIN(TestCliFiles)
#include "tst_clifiles.moc"
