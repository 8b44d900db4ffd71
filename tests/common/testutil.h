#pragma once

#include <QString>
#include <QStringList>
#include <QTest>

#include <string>
#include <vector>

namespace oomlens::test {

// ../shared beside the checkout (CI has it; a user's clone may not).
QString sharedDir();
bool hasShared();
QString corpusDir(); // ../shared/corpus
QString testDataDir(); // tests/data in the source tree
QByteArray readFile(const QString& path);
// stdout of `python3 -c script args...` (the interpreter CMake found); a failure is logged with
// its stderr and whatever was printed is returned.
QByteArray runPython(const QString& script, const QStringList& args = {});

// Compares `actual` with tests/data/golden/<name>. On mismatch writes <name>.actual beside it,
// prints `diff -u`, and returns false. Set OOMLENS_UPDATE_GOLDEN=1 to rewrite the golden file.
bool matchesGolden(const QString& name, const std::string& actual);

// Paths between the suites (QString) and the engine (std::string, UTF-8), which takes no Qt type.
inline std::vector<std::string> toStdStrings(const QStringList& list)
{
    std::vector<std::string> strings;
    for (const QString& each : list)
        strings.push_back(each.toStdString());
    return strings;
}

inline QStringList toQStringList(const std::vector<std::string>& strings)
{
    QStringList list;
    for (const std::string& each : strings)
        list.append(QString::fromStdString(each));
    return list;
}

} // namespace oomlens::test

// Skips the current test with a clear message when ../shared is absent.
#define OOMLENS_REQUIRE_SHARED()                                                                                       \
    do {                                                                                                               \
        if (!oomlens::test::hasShared())                                                                               \
            QSKIP("../shared (the real corpus) is not beside this checkout; skipping corpus checks");                  \
    } while (false)

#define OOMLENS_COMPARE_GOLDEN(name, actual)                                                                           \
    QVERIFY2(oomlens::test::matchesGolden(name, actual), "golden mismatch: see diff above")
