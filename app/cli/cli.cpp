#include "app/cli/cli.h"

#include "app/cli/diagnose.h"
#include "app/cli/report.h"

#include <QTextStream>

#include <cstdio>
#include <cstring>

namespace oomlens::cli {

namespace {

const char* const usageText = R"(usage:
  oomlens [FILE...]                                 open the GUI, optionally with files
  oomlens diagnose [--json] [--device N] [--rules FILE] INPUT...
                                                    analyze and print; INPUT '-' reads stdin
  oomlens report INPUT... -o report.html            write the self-contained HTML report
  oomlens --help | --version
)";

} // namespace

bool isCommandLineInvocation(int argc, char** argv)
{
    if (argc < 2)
        return false;
    for (const char* command : { "diagnose", "report", "--help", "-h", "--version", "-v" }) {
        if (std::strcmp(argv[1], command) == 0)
            return true;
    }
    return false;
}

int run(const QStringList& arguments)
{
    const QString command = arguments.value(1);
    if (command == QLatin1String("--help") || command == QLatin1String("-h")) {
        std::fputs(usageText, stdout);
        return 0;
    }
    if (command == QLatin1String("--version") || command == QLatin1String("-v")) {
        std::printf("oomlens %s\n", OOMLENS_VERSION);
        return 0;
    }
    if (command == QLatin1String("report"))
        return runReport(arguments.mid(2));
    if (command == QLatin1String("diagnose"))
        return runDiagnose(arguments.mid(2));
    std::fputs(usageText, stderr);
    return 2;
}

} // namespace oomlens::cli
