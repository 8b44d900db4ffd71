#include "common/longsession.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QThread>

#include <fstream>
#include <string>

namespace oomlens::test {

GeneratedSnapshot generateSnapshot(const QString& dir, const QString& name, const QStringList& options)
{
    GeneratedSnapshot snapshot;
    const QString out = dir + QLatin1Char('/') + name;
    QProcess process;
    process.start(QStringLiteral(OOMLENS_PYTHON),
        QStringList { QStringLiteral(OOMLENS_SOURCE_DIR "/bench/gen_snapshot.py"), QStringLiteral("--out"), out }
            + options);
    if (!process.waitForFinished(300000) || process.exitCode() != 0) {
        qWarning("gen_snapshot.py failed: %s", process.readAllStandardError().constData());
        return snapshot;
    }
    // "PATH: 100042 events, 20981234 bytes (209.7 bytes/event), protocol 4, 4.4 s"
    const QString printed = QString::fromUtf8(process.readAllStandardOutput());
    const QRegularExpressionMatch match = QRegularExpression(QStringLiteral(": (\\d+) events, ")).match(printed);
    if (!match.hasMatch()) {
        qWarning("gen_snapshot.py printed no event count: %s", qPrintable(printed));
        return snapshot;
    }
    snapshot.path = out;
    snapshot.bytes = QFileInfo(out).size();
    snapshot.events = match.captured(1).toLongLong();
    return snapshot;
}

double residentMiB(qint64 pid)
{
    // /proc files report size 0, so QFile's atEnd() holds at once: read them with a stream.
    std::ifstream status(pid == 0 ? std::string("/proc/self/status") : "/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stod(line.substr(6)) / 1024.0;
    }
    return 0;
}

double settledResidentMiB(qint64 pid)
{
    double last = residentMiB(pid);
    int same = 0;
    for (QElapsedTimer timer; !timer.isValid() || timer.elapsed() < 5000;) {
        if (!timer.isValid())
            timer.start();
        QThread::msleep(25);
        const double now = residentMiB(pid);
        same = now == last ? same + 1 : 0;
        last = now;
        if (same == 4)
            break;
    }
    return last;
}

QString MemoryBound::describe(int warmRound, int endRound) const
{
    return QStringLiteral("RSS %1 MiB after round %2, %3 MiB after round %4: growth %5 MiB, tolerance %6 MiB "
                          "(one case's budget)")
        .arg(warmMiB, 0, 'f', 1)
        .arg(warmRound)
        .arg(endMiB, 0, 'f', 1)
        .arg(endRound)
        .arg(growthMiB(), 0, 'f', 1)
        .arg(toleranceMiB, 0, 'f', 1);
}

int longSessionCount(const char* variable, int ciDefault)
{
    bool ok = false;
    const int asked = qEnvironmentVariableIntValue(variable, &ok);
    return ok && asked > 0 ? asked : ciDefault;
}

} // namespace oomlens::test
