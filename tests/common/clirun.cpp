#include "common/clirun.h"

#include <QJsonDocument>
#include <QJsonParseError>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>

namespace oomlens::test {

QString oomlensBinary()
{
    return qEnvironmentVariable("OOMLENS_BINARY");
}

CliRun runOomlens(const QStringList& arguments, const QByteArray& stdinBytes)
{
    static QTemporaryDir runtimeDir;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtimeDir.path());
    environment.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    QProcess process;
    process.setProcessEnvironment(environment);
    process.start(oomlensBinary(), arguments);
    if (!stdinBytes.isEmpty())
        process.write(stdinBytes);
    process.closeWriteChannel();
    if (!process.waitForFinished(120000))
        qFatal("oomlens %s did not finish", qPrintable(arguments.join(QLatin1Char(' '))));
    if (process.exitStatus() != QProcess::NormalExit)
        qFatal("oomlens %s crashed: %s", qPrintable(arguments.join(QLatin1Char(' '))),
            process.readAllStandardError().constData());
    return { process.exitCode(), process.readAllStandardOutput(), process.readAllStandardError() };
}

QJsonObject parseJsonObject(const QByteArray& bytes)
{
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(bytes, &error);
    if (error.error != QJsonParseError::NoError)
        qFatal("not JSON: %s\n%s", qPrintable(error.errorString()), bytes.left(2000).constData());
    return document.object();
}

} // namespace oomlens::test
