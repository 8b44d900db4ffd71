#include "app/cli/optionparser.h"
#include "core/numbertext.h"

#include <QCommandLineParser>
#include <QTest>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace oomlens;

// The command line's own parser and number readers (app/cli/optionparser.h, numbertext.h) read
// every command line as QCommandLineParser and QString's toInt / toUInt / toDouble did before
// them, so that no option, value, error or help line changed: both are run side by side on the
// same words, the tricky ones and thousands of random ones, and must agree in everything a
// command asks of them.
class TestOptionParser : public QObject
{
    Q_OBJECT

    struct Spec
    {
        std::vector<std::string> names;
        std::string description;
        std::string valueName;
        bool hidden = false;
    };

    // A command's options: switches, options with values, a two-name option (-o/--output), long
    // descriptions that wrap, one hidden option and two positional arguments.
    static std::vector<Spec> specs()
    {
        return {
            { { "json" }, "Print one JSON object instead of text.", {}, false },
            { { "device" }, "Describe snapshot device N (default: the device of the OOM event).", "N", false },
            { { "o", "output" }, "Write the report to FILE ('-' for standard output).", "FILE", false },
            { { "x" }, "A short switch.", {}, false },
            { { "model" },
                "A Hugging Face config.json, or a preset: gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-2-7b, "
                "llama-2-13b, llama-2-70b, llama-65b, mistral-7b, llama-3-70b, mixtral-8x7b.",
                "FILE", false },
            { { "a-very-long-option-name-that-takes-most-of-the-column" }, "Wraps its names too.", "VALUE", false },
            { { "secret" }, "Not listed.", "DIR", true },
            { { "unbroken" }, std::string(120, 'w') + " then words", {}, false },
        };
    }

    struct Parsers
    {
        QCommandLineParser qt;
        cli::OptionParser own;
        std::vector<QCommandLineOption> qtOptions;
        std::vector<cli::Option> ownOptions;
    };

    static void define(Parsers& parsers)
    {
        parsers.qt.setApplicationDescription(QStringLiteral("Does a thing, described at some length so that the "
                                                            "description runs past one line of the terminal."));
        parsers.own.setDescription("Does a thing, described at some length so that the description runs past one "
                                   "line of the terminal.");
        // Qt's addHelpOption with our --help-all wording (the command line has no Qt options to
        // include); for reading words, help options are options like any other.
        parsers.qt.addOption(QCommandLineOption(
            { QStringLiteral("h"), QStringLiteral("help") }, QStringLiteral("Displays help on commandline options.")));
        parsers.qt.addOption(
            QCommandLineOption(QStringLiteral("help-all"), QStringLiteral("Displays the same help as --help.")));
        parsers.own.addHelpOption();
        for (const Spec& spec : specs()) {
            QStringList names;
            for (const std::string& name : spec.names)
                names.append(QString::fromStdString(name));
            QCommandLineOption qtOption(
                names, QString::fromStdString(spec.description), QString::fromStdString(spec.valueName));
            cli::Option ownOption(spec.names, spec.description, spec.valueName);
            if (spec.hidden) {
                qtOption.setFlags(QCommandLineOption::HiddenFromHelp);
                ownOption.hiddenFromHelp = true;
            }
            parsers.qt.addOption(qtOption);
            parsers.own.addOption(ownOption);
            parsers.qtOptions.push_back(qtOption);
            parsers.ownOptions.push_back(ownOption);
        }
        parsers.qt.addPositionalArgument(QStringLiteral("INPUT"),
            QStringLiteral("Snapshot, OOM message, traceback or log; '-' reads standard input; a folder stands for "
                           "every file in it."),
            QStringLiteral("INPUT..."));
        parsers.own.addPositionalArgument("INPUT",
            "Snapshot, OOM message, traceback or log; '-' reads standard input; a folder stands for every file in "
            "it.",
            "INPUT...");
        parsers.qt.addPositionalArgument(QStringLiteral("B"), QStringLiteral("The second."));
        parsers.own.addPositionalArgument("B", "The second.");
    }

    static std::vector<std::string> toStd(const QStringList& list)
    {
        std::vector<std::string> words;
        for (const QString& word : list)
            words.push_back(word.toStdString());
        return words;
    }

    static QString shown(const std::vector<std::string>& words)
    {
        QStringList quoted;
        for (const std::string& word : words)
            quoted.append(QLatin1Char('[') + QString::fromStdString(word) + QLatin1Char(']'));
        return quoted.join(QLatin1Char(' '));
    }

    // Both parsers on `words`: the same verdict, options, values, positional arguments and errors.
    static void verifySameReading(const std::vector<std::string>& words)
    {
        Parsers parsers;
        define(parsers);
        QStringList qtWords { QStringLiteral("program") };
        for (const std::string& word : words)
            qtWords.append(QString::fromStdString(word));
        const QByteArray where = shown(words).toUtf8();
        QVERIFY2(parsers.qt.parse(qtWords) == parsers.own.parse(words), where.constData());
        QVERIFY2(parsers.qt.errorText().toStdString() == parsers.own.errorText(), where.constData());
        QVERIFY2(toStd(parsers.qt.unknownOptionNames()) == parsers.own.unknownOptionNames(), where.constData());
        QVERIFY2(toStd(parsers.qt.positionalArguments()) == parsers.own.positionalArguments(), where.constData());
        for (const char* name : { "help", "h", "help-all" })
            QVERIFY2(parsers.qt.isSet(QString::fromLatin1(name)) == parsers.own.isSet(name), where.constData());
        for (size_t i = 0; i < parsers.ownOptions.size(); ++i) {
            QVERIFY2(
                parsers.qt.isSet(parsers.qtOptions[i]) == parsers.own.isSet(parsers.ownOptions[i]), where.constData());
            QVERIFY2(toStd(parsers.qt.values(parsers.qtOptions[i])) == parsers.own.values(parsers.ownOptions[i]),
                where.constData());
            QVERIFY2(parsers.qt.value(parsers.qtOptions[i]).toStdString() == parsers.own.value(parsers.ownOptions[i]),
                where.constData());
        }
    }

private Q_SLOTS:
    void readsTrickyWordsAsQtDid()
    {
        const std::vector<std::vector<std::string>> cases {
            {},
            { "file" },
            { "-" },
            { "--" },
            { "--", "--json", "-x" },
            { "--json" },
            { "--json=1" },
            { "--json=" },
            { "--device" },
            { "--device", "3" },
            { "--device=3" },
            { "--device=" },
            { "--device", "--json" },
            { "--device", "-" },
            { "--device", "1", "--device", "2" },
            { "-o" },
            { "-o", "out.html" },
            { "-oout.html" },
            { "-o=out.html" },
            { "-o=" },
            { "-xo", "file" },
            { "-xofile" },
            { "-ox" },
            { "-xx" },
            { "-x=1" },
            { "-xj" },
            { "-jx" },
            { "-json" },
            { "-help" },
            { "-h" },
            { "-h=3" },
            { "-hx" },
            { "--help", "--device" },
            { "--bogus" },
            { "--bogus=1", "--other" },
            { "-abc" },
            { "--=x" },
            { "---" },
            { "---json" },
            { "--é" },
            { "-é" },
            { "-xé=1" },
            { "a", "--json", "b", "-o", "c", "d" },
            { "--output", "a", "-o", "b" },
            { "--model", "gpt2", "--secret", "dir", "--unbroken" },
            { "--a-very-long-option-name-that-takes-most-of-the-column=v" },
            { "--o", "x" },
            { "--x" },
            { "-output" },
            { "-device", "1" },
        };
        for (const std::vector<std::string>& words : cases)
            verifySameReading(words);
    }

    void readsRandomWordsAsQtDid()
    {
        // Fixed seed: the same words every run, so a disagreement is reproducible.
        std::mt19937 random(20261129);
        const std::vector<std::string> pool { "--json", "--json=", "--json=1", "--device", "--device=", "--device=2",
            "-o", "-o=", "-ox", "-xo", "-x", "-xx", "-x=", "--output", "--output=a", "-", "--", "file", "1", "-1",
            "--bogus", "-b", "-bx", "-h", "--help", "--help-all", "-hx", "=", "-=", "--=", "--model", "-json", "é",
            "--secret", "--secret=d", "-é", "--unbroken", "---", "a=b" };
        for (int run = 0; run < 4000; ++run) {
            std::vector<std::string> words(random() % 6);
            for (std::string& word : words)
                word = pool[random() % pool.size()];
            verifySameReading(words);
        }
    }

    void helpIsLaidOutAsQtLaidItOut()
    {
        Parsers parsers;
        define(parsers);
        QVERIFY(parsers.qt.parse({ QStringLiteral("program") }));
        QVERIFY(parsers.own.parse({}));
        // Qt's first line names the program by its full path; the commands replace that line.
        const QString qtHelp = parsers.qt.helpText();
        const std::string ownHelp = parsers.own.helpText("program");
        const std::string qtRest = qtHelp.mid(qtHelp.indexOf(QLatin1Char('\n'))).toStdString();
        QCOMPARE(ownHelp.substr(ownHelp.find('\n')), qtRest);
        QVERIFY(ownHelp.starts_with("Usage: program [options] INPUT... B\n"));
        QVERIFY(ownHelp.find("--secret") == std::string::npos);
    }

    void readsNumbersAsQtDid()
    {
        const std::vector<std::string> texts { "0", "1", "-1", "+1", " 1", "1 ", "\t7\n", " ", "", "+", "-", "+-1",
            "-+1", "1.0", "1.", ".5", "5.", ".", "1e3", "1E3", "1e", "1e+", "1e+3", "1e-3", "e3", "1.3e9", "7000000000",
            "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967295", "4294967296",
            "99999999999999999999", "0x10", "010", "1,000", "1_000", "inf", "INF", "+inf", "-inf", "Inf", "infinity",
            "nan", "NaN", "+nan", "-nan", "1e400", "-1e400", "1e-400", "0e-400", "1e-310", "0.0", "-0", "-0.0", "1 2",
            "1x", "x1",
            "\xc2\xa0"
            "3",
            "3\xe2\x80\x83", "\xef\xbc\x93", "1e0", "0.9", "１" };
        for (const std::string& text : texts) {
            const QString qtText = QString::fromStdString(text);
            bool ok = false;
            const int qtInt = qtText.toInt(&ok);
            const std::optional<int> ownInt = intFromText(text);
            QVERIFY2(ok == ownInt.has_value() && (!ok || qtInt == *ownInt), text.c_str());
            const uint qtUnsigned = qtText.toUInt(&ok);
            const std::optional<unsigned> ownUnsigned = unsignedFromText(text);
            QVERIFY2(ok == ownUnsigned.has_value() && (!ok || qtUnsigned == *ownUnsigned), text.c_str());
            const double qtDouble = qtText.toDouble(&ok);
            const std::optional<double> ownDouble = doubleFromText(text);
            QVERIFY2(ok == ownDouble.has_value(), text.c_str());
            if (ok)
                QVERIFY2(std::isnan(qtDouble) ? std::isnan(*ownDouble) : qtDouble == *ownDouble, text.c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestOptionParser)
#include "tst_optionparser.moc"
