#include "common/testutil.h"
#include "fuzz/mcptarget.h"

#include <QDir>
#include <QTest>

#include <cstring>
#include <memory>

// Replays every seed and crash reproducer of the mcp fuzz target (fuzz/corpus/mcp/) through the
// function the libFuzzer executable runs (fuzz/mcptarget.h), in any build: a fixed crash of the MCP
// server stays fixed without clang. (tests/parsers/tst_fuzzregression.cpp does the same for the
// targets that link no CLI.)
class TestMcpFuzzRegression : public QObject
{
    Q_OBJECT

    static QString corpusDir() { return QStringLiteral(OOMLENS_SOURCE_DIR "/fuzz/corpus/mcp"); }

private Q_SLOTS:
    void corpus_data()
    {
        QTest::addColumn<QString>("path");
        const QDir dir(corpusDir());
        const QStringList files = dir.entryList(QDir::Files, QDir::Name);
        QVERIFY2(files.contains(QStringLiteral("crash-params-nested-fifty-thousand-deep")),
            qPrintable(QStringLiteral("the first named seed is missing from ") + dir.path()));
        QVERIFY(files.size() >= 10);
        for (const QString& file : files)
            QTest::addRow("%s", qPrintable(file)) << dir.filePath(file);
    }

    void corpus()
    {
        QFETCH(QString, path);
        const QByteArray bytes = oomlens::test::readFile(path);
        QVERIFY(!bytes.isEmpty());
        // In an exactly sized heap block, as libFuzzer passes it.
        const auto size = static_cast<size_t>(bytes.size());
        const auto copy = std::make_unique<uint8_t[]>(size);
        std::memcpy(copy.get(), bytes.constData(), size);
        const std::string problem = oomlens::fuzz::mcpTarget(copy.get(), size);
        QVERIFY2(problem.empty(), problem.c_str());
    }
};

QTEST_GUILESS_MAIN(TestMcpFuzzRegression)
#include "tst_mcpfuzzregression.moc"
