#include "docs/docworkspace.h"

#include "docs/docexamples.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QStandardPaths>

namespace oomlens::test {

DocWorkspace::DocWorkspace(const QString& sourceDir, const QString& binary, const QString& sharedDir)
{
    if (!m_root.isValid() || !QDir(m_root.path()).mkpath(QStringLiteral("checkout"))
        || !QDir(m_root.path()).mkpath(QStringLiteral("runtime"))
        || !QDir(m_root.path()).mkpath(QStringLiteral("bin"))) {
        m_error = QStringLiteral("cannot make a scratch folder");
        return;
    }
    // Qt wants a runtime folder only its user can enter.
    QFile::setPermissions(
        m_root.path() + QStringLiteral("/runtime"), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    const QFileInfoList entries = QDir(sourceDir).entryInfoList(QDir::AllEntries | QDir::NoDotAndDotDot);
    for (const QFileInfo& entry : entries)
        link(entry.absoluteFilePath(), checkout() + QLatin1Char('/') + entry.fileName());
    link(binary, binDir() + QStringLiteral("/oomlens"));
    if (QFileInfo(sharedDir).isDir())
        link(sharedDir, m_root.path() + QStringLiteral("/shared"));
}

void DocWorkspace::link(const QString& target, const QString& linkPath)
{
    if (!QFile::link(target, linkPath) && m_error.isEmpty())
        m_error = QStringLiteral("cannot link %1 to %2").arg(linkPath, target);
}

QString DocWorkspace::checkout() const
{
    return m_root.path() + QStringLiteral("/checkout");
}

QString DocWorkspace::binDir() const
{
    return m_root.path() + QStringLiteral("/bin");
}

ShellRun DocWorkspace::run(const QString& command, int timeoutMs) const
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    for (const char* variable : { "DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM" })
        environment.remove(QLatin1String(variable));
    environment.insert(QStringLiteral("PATH"), binDir() + QLatin1Char(':') + environment.value(QStringLiteral("PATH")));
    environment.insert(QStringLiteral("XDG_RUNTIME_DIR"), m_root.path() + QStringLiteral("/runtime"));
    QProcess shell;
    shell.setProcessEnvironment(environment);
    shell.setWorkingDirectory(checkout());
    shell.start(QStringLiteral("/bin/sh"), { QStringLiteral("-c"), command });
    shell.closeWriteChannel();
    ShellRun result;
    result.finished = shell.waitForFinished(timeoutMs);
    if (!result.finished) {
        shell.kill();
        shell.waitForFinished();
    }
    result.exitCode = shell.exitCode();
    result.printed = shell.readAllStandardOutput() + shell.readAllStandardError();
    return result;
}

QString missingProgram(const QString& command)
{
    static const QRegularExpression firstWord(QStringLiteral("^\\s*([A-Za-z0-9_.-]+)"));
    for (const QString& step : pipelineSteps(command)) {
        const QRegularExpressionMatch match = firstWord.match(step);
        if (!match.hasMatch() || match.captured(1) == QLatin1String("oomlens"))
            continue;
        if (QStandardPaths::findExecutable(match.captured(1)).isEmpty())
            return match.captured(1);
    }
    return {};
}

} // namespace oomlens::test
