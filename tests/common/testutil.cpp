#include "common/testutil.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>

namespace oomlens::test {

QString sharedDir()
{
    return QStringLiteral(OOMLENS_SHARED_DIR);
}

bool hasShared()
{
    return QFileInfo(corpusDir()).isDir();
}

QString corpusDir()
{
    return sharedDir() + QStringLiteral("/corpus");
}

QString testDataDir()
{
    return QStringLiteral(OOMLENS_TEST_DATA_DIR);
}

QByteArray readFile(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read test file %s", qPrintable(path));
    return file.readAll();
}

QByteArray runPython(const QString& script, const QStringList& args)
{
    QProcess process;
    process.start(QStringLiteral(OOMLENS_PYTHON), QStringList { QStringLiteral("-c"), script } + args);
    if (!process.waitForFinished(60000) || process.exitCode() != 0)
        qWarning("python failed: %s", process.readAllStandardError().constData());
    return process.readAllStandardOutput();
}

bool matchesGolden(const QString& name, const std::string& actual)
{
    const QString goldenPath = testDataDir() + QStringLiteral("/golden/") + name;
    const QByteArray actualBytes = QByteArray::fromStdString(actual);
    if (qEnvironmentVariableIsSet("OOMLENS_UPDATE_GOLDEN")) {
        QDir().mkpath(QFileInfo(goldenPath).absolutePath());
        QFile out(goldenPath);
        out.open(QIODevice::WriteOnly);
        out.write(actualBytes);
        return true;
    }
    QFile golden(goldenPath);
    if (golden.open(QIODevice::ReadOnly) && golden.readAll() == actualBytes)
        return true;
    const QString actualPath = goldenPath + QStringLiteral(".actual");
    QFile out(actualPath);
    if (out.open(QIODevice::WriteOnly))
        out.write(actualBytes);
    out.close();
    QProcess diff;
    diff.setProcessChannelMode(QProcess::MergedChannels);
    diff.start(QStringLiteral("diff"), { QStringLiteral("-u"), goldenPath, actualPath });
    diff.waitForFinished();
    qWarning().noquote() << "golden mismatch for" << name << "(set OOMLENS_UPDATE_GOLDEN=1 to accept)\n"
                         << QString::fromUtf8(diff.readAll());
    return false;
}

} // namespace oomlens::test
