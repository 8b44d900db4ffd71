#include "common/textfixtures.h"

#include "common/testutil.h"
#include "parsers/text/textparser.h"

#include <QFile>
#include <QTest>

namespace oomlens::test {

std::string textFixture(const char* name)
{
    return readFile(testDataDir() + QStringLiteral("/text/") + QLatin1String(name)).toStdString();
}

TextFindings parseTextFixture(const char* name)
{
    return parseText(textFixture(name));
}

std::vector<nlohmann::json> corpusTextRecords(const QString& fileName)
{
    std::vector<nlohmann::json> records;
    QFile file(corpusDir() + QStringLiteral("/text/") + fileName);
    if (!file.open(QIODevice::ReadOnly))
        return records;
    while (!file.atEnd()) {
        const QByteArray line = file.readLine().trimmed();
        if (!line.isEmpty())
            records.push_back(nlohmann::json::parse(line.toStdString()));
    }
    return records;
}

qint64 value(const std::optional<uint64_t>& field)
{
    return field ? static_cast<qint64>(*field) : -1;
}

void addOomByteColumns()
{
    QTest::addColumn<qint64>("requested");
    QTest::addColumn<qint64>("total");
    QTest::addColumn<qint64>("free");
    QTest::addColumn<qint64>("allocated");
    QTest::addColumn<qint64>("reserved");
    QTest::addColumn<qint64>("unallocated");
    QTest::addColumn<qint64>("allowed");
}

void compareOomBytes(const OomMessage& message)
{
    QTEST(value(message.requestedBytes), "requested");
    QTEST(value(message.totalBytes), "total");
    QTEST(value(message.freeBytes), "free");
    QTEST(value(message.allocatedBytes), "allocated");
    QTEST(value(message.reservedBytes), "reserved");
    QTEST(value(message.reservedUnallocatedBytes), "unallocated");
    QTEST(value(message.allowedBytes), "allowed");
}

} // namespace oomlens::test
