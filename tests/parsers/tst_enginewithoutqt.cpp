// The engine (core/, parsers/, opening/) takes no Qt type, so that the command line builds where
// Qt is not installed; the paths it prints and writes into rank summaries, the folders it lists
// and the memory_viz pages it decodes must come out as they did when it used Qt's classes. Each
// helper is checked here against the Qt class it replaced, on the shapes users give.
#include "parsers/filepaths.h"
#include "parsers/pickle/base64.h"

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>

using namespace oomlens;

namespace {

QString q(const std::string& text)
{
    return QString::fromStdString(text);
}

const QStringList pathShapes { QStringLiteral("rank0.pickle"), QStringLiteral("./rank0.pickle"),
    QStringLiteral("runs/../rank0.pickle"), QStringLiteral("runs//job/./rank0.pickle"), QStringLiteral("runs/job/"),
    QStringLiteral("../rank0.pickle"), QStringLiteral("/"), QStringLiteral("/tmp"), QStringLiteral("/tmp/"),
    QStringLiteral("/tmp//x/../y"), QStringLiteral("."), QStringLiteral(".."), QStringLiteral("/x/.."),
    QStringLiteral("rank 0 (copy).pickle"), QStringLiteral("ränk0.pickle"), QStringLiteral("a/b/c.d/e") };

} // namespace

class TestEngineWithoutQt : public QObject
{
    Q_OBJECT
private slots:
    void pathsAsQFileInfoWordsThem()
    {
        for (const QString& path : pathShapes) {
            const std::string p = path.toStdString();
            const QFileInfo info(path);
            QCOMPARE(q(absoluteFilePath(p)), info.absoluteFilePath());
            QCOMPARE(q(fileNameOf(p)), info.fileName());
            QCOMPARE(q(folderOf(p)), info.path());
            for (const QString& name : { QStringLiteral("x.pickle"), QString(), QStringLiteral("/abs/x") })
                QCOMPARE(q(pathInFolder(p, name.toStdString())), QDir(path).filePath(name));
            // The snapshot a summary names, looked for beside the summary.
            QCOMPARE(q(pathInFolder(folderOf(p), fileNameOf("/cluster/run/rank3.pickle"))),
                info.dir().filePath(QStringLiteral("rank3.pickle")));
        }
        QCOMPARE(q(pathInFolder("", "x")), QDir(QString()).filePath(QStringLiteral("x")));
    }

    void filesAsQFileInfoSeesThem()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("rank0.pickle"));
        QFile out(file);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write("0123456789");
        out.close();
        QVERIFY(QFile::link(file, dir.filePath(QStringLiteral("link.pickle"))));
        const QStringList paths { file, dir.path(), dir.filePath(QStringLiteral("link.pickle")),
            dir.filePath(QStringLiteral("missing")), dir.path() + QStringLiteral("/./rank0.pickle") };
        for (const QString& path : paths) {
            const std::string p = path.toStdString();
            const QFileInfo info(path);
            QCOMPARE(isRegularFile(p), info.isFile());
            QCOMPARE(isFolder(p), info.isDir());
            QCOMPARE(fileSizeAt(p), uint64_t(info.size()));
            QCOMPARE(q(canonicalFilePath(p)), info.canonicalFilePath());
        }
    }

    // A folder as QDir listed it by name: files (and folders), no hidden entries, no pipes or
    // dangling links; a link to anything that exists is listed.
    void foldersAsQDirListedThem()
    {
        QTemporaryDir dir;
        const auto touch = [&](const QString& name) {
            QFile file(dir.filePath(name));
            QVERIFY(file.open(QIODevice::WriteOnly));
        };
        touch(QStringLiteral("b.pickle"));
        touch(QStringLiteral("A.txt"));
        touch(QStringLiteral(".hidden"));
        touch(QStringLiteral("ränk.json"));
        QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("sub")));
        QVERIFY(QDir(dir.path()).mkdir(QStringLiteral(".git")));
        QCOMPARE(::mkfifo(dir.filePath(QStringLiteral("pipe")).toLocal8Bit().constData(), 0600), 0);
        QVERIFY(QFile::link(dir.filePath(QStringLiteral("gone")), dir.filePath(QStringLiteral("dangling"))));
        QVERIFY(QFile::link(dir.filePath(QStringLiteral("A.txt")), dir.filePath(QStringLiteral("to-file"))));
        QVERIFY(QFile::link(dir.filePath(QStringLiteral("sub")), dir.filePath(QStringLiteral("to-folder"))));
        QVERIFY(QFile::link(dir.filePath(QStringLiteral("pipe")), dir.filePath(QStringLiteral("to-pipe"))));
        const QStringList folders { dir.path(), dir.path() + QStringLiteral("/") };
        for (const QString& folder : folders) {
            const QDir listed(folder);
            QStringList files;
            for (const QString& name : listed.entryList(QDir::Files, QDir::Name))
                files << listed.filePath(name);
            QCOMPARE(files.size(), 5);
            QStringList all;
            for (const QString& name : listed.entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
                all << listed.filePath(name);
            QStringList engineFiles;
            for (const std::string& path : folderEntries(folder.toStdString(), false))
                engineFiles << q(path);
            QStringList engineAll;
            for (const std::string& path : folderEntries(folder.toStdString(), true))
                engineAll << q(path);
            QCOMPARE(engineFiles, files);
            QCOMPARE(engineAll, all);
        }
        QVERIFY(folderEntries(dir.filePath(QStringLiteral("missing")).toStdString(), true).empty());
    }

    // memory_viz pages embed the snapshot as base64: decoded, and refused, as Qt's decoder did.
    void base64AsQByteArrayDecodedIt()
    {
        const QByteArray alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
        QList<QByteArray> inputs { "", "gA==", "gAJ9cQ==", "gAJ9cQ", "gAJ9c",
            "gAJ9c===", "g=A=", "gA=", "gA==gA==", "gA\n==", "-_-_", QByteArray("gAJ9\0cQ==", 9), "\xc3\xa4gA==" };
        QRandomGenerator random(37);
        for (int i = 0; i < 4000; ++i) {
            QByteArray input;
            const int length = int(random.bounded(13));
            for (int c = 0; c < length; ++c)
                input += random.bounded(40) == 0 ? char(random.bounded(256)) : alphabet[int(random.bounded(65))];
            inputs << input << input.toBase64();
        }
        for (const QByteArray& input : inputs) {
            const auto qt = QByteArray::fromBase64Encoding(input, QByteArray::AbortOnBase64DecodingErrors);
            const std::optional<std::string> ours
                = pickle::decodeBase64(std::string_view(input.constData(), size_t(input.size())));
            QVERIFY2(bool(qt) == ours.has_value(), input.toHex().constData());
            if (ours)
                QCOMPARE(QByteArray::fromStdString(*ours), qt.decoded);
        }
    }
};

QTEST_GUILESS_MAIN(TestEngineWithoutQt)
#include "tst_enginewithoutqt.moc"
