#include "app/cli/reportfile.h"

#include "app/cli/errorlines.h"

#include <QSaveFile>

#include <cstdio>

namespace oomlens::cli {

bool writeReportFile(const QString& path, const std::string& html)
{
    if (path == QLatin1String("-")) {
        std::fwrite(html.data(), 1, html.size(), stdout);
        std::fflush(stdout);
        return true;
    }
    // QSaveFile writes beside the target and renames on commit.
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)
        || file.write(html.data(), static_cast<qint64>(html.size())) != static_cast<qint64>(html.size())
        || !file.commit()) {
        printErrorLine(QStringLiteral("oomlens: cannot write %1: %2").arg(path, file.errorString()));
        return false;
    }
    return true;
}

} // namespace oomlens::cli
