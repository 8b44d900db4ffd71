#include "app/cli/commandline.h"

#include "app/cli/errorlines.h"
#include "parsers/categoryrulesparser.h"

#include <cstdio>

namespace oomlens::cli {

QString parseError(const QCommandLineParser& parser)
{
    const QStringList unknown = parser.unknownOptionNames();
    if (unknown.isEmpty())
        return parser.errorText();
    const QString& name = unknown.front();
    return QStringLiteral("unknown option ") + (name.size() == 1 ? QStringLiteral("-") : QStringLiteral("--")) + name;
}

CommandLine::CommandLine(const char* synopsis, const QString& description)
    : m_synopsis(QString::fromUtf8(synopsis))
    , m_command(m_synopsis.section(QLatin1Char(' '), 0, 0))
{
    m_parser.setApplicationDescription(description);
    m_parser.addHelpOption();
}

std::optional<int> CommandLine::parse(const QStringList& arguments)
{
    // QCommandLineParser skips the first word as the program's name.
    if (!m_parser.parse(QStringList { QStringLiteral("oomlens ") + m_command } + arguments))
        return usageError(parseError(m_parser));
    // Qt's addHelpOption() also adds --help-all (Qt's own options, which a command has none of).
    if (m_parser.isSet(QStringLiteral("help")) || m_parser.isSet(QStringLiteral("help-all"))) {
        std::fputs(qPrintable(helpText()), stdout);
        return 0;
    }
    return std::nullopt;
}

int CommandLine::usageError(const QString& message) const
{
    printErrorLine(QStringLiteral("oomlens %1: %2").arg(m_command, message));
    std::fprintf(stderr, "usage: oomlens %s\n", qPrintable(m_synopsis));
    return 2;
}

bool CommandLine::readDevice(const QCommandLineOption& option, std::optional<int32_t>& device) const
{
    if (!m_parser.isSet(option))
        return true;
    bool ok = false;
    const QString value = m_parser.value(option);
    const int ordinal = value.toInt(&ok);
    if (!ok || ordinal < 0) {
        usageError(QStringLiteral("--device needs a device ordinal (0, 1, ...), got '%1'").arg(value));
        return false;
    }
    device = ordinal;
    return true;
}

std::optional<int> CommandLine::readRules(const QCommandLineOption& option, AnalysisOptions& options) const
{
    if (!m_parser.isSet(option))
        return std::nullopt;
    const QString path = m_parser.value(option);
    if (path.isEmpty())
        return usageError(QStringLiteral("--rules needs a file"));
    setCategoryRules(options, path.toStdString());
    if (!options.rulesError.empty()) {
        printErrorLine(QStringLiteral("oomlens %1: %2").arg(m_command, QString::fromStdString(options.rulesError)));
        return 1;
    }
    return std::nullopt;
}

QString CommandLine::helpText() const
{
    // Qt's first line names the program by its full path and puts "[options]" first; the
    // synopsis says how the command is really typed.
    QString text = m_parser.helpText();
    text.remove(0, text.indexOf(QLatin1Char('\n')));
    return QStringLiteral("Usage: oomlens ") + m_synopsis + text;
}

} // namespace oomlens::cli
