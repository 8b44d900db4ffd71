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

bool oomlensBinaryHasGui()
{
    return OOMLENS_BINARY_HAS_GUI;
}

CliRun runOomlens(const QStringList& arguments, const QByteArray& stdinBytes)
{
    CliOptions options;
    options.stdinBytes = stdinBytes;
    options.noDisplay = false;
    options.timeoutMs = 120000;
    return runOomlensWith(arguments, options);
}

CliRun runOomlensWith(const QStringList& arguments, const CliOptions& options)
{
    static QTemporaryDir runtimeDir;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtimeDir.path());
    if (options.noDisplay) {
        for (const char* variable : { "DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM" })
            environment.remove(QLatin1String(variable));
    } else {
        environment.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    }
    QProcess process;
    process.setProcessEnvironment(environment);
    if (!options.stdinFile.isEmpty())
        process.setStandardInputFile(options.stdinFile);
    if (!options.workingDirectory.isEmpty())
        process.setWorkingDirectory(options.workingDirectory);
    process.start(oomlensBinary(), arguments);
    if (options.stdinFile.isEmpty()) {
        if (!options.stdinBytes.isEmpty())
            process.write(options.stdinBytes);
        process.closeWriteChannel();
    }
    if (!process.waitForFinished(options.timeoutMs)) {
        process.kill();
        process.waitForFinished();
        qFatal("oomlens %s did not finish in %d s", qPrintable(arguments.join(QLatin1Char(' '))),
            options.timeoutMs / 1000);
    }
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
