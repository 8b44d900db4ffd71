#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QTest>

namespace oomlens::test {

// What the built `oomlens` printed and returned.
struct CliRun
{
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

// The `oomlens` binary that ctest names in OOMLENS_BINARY; empty when run outside ctest.
QString oomlensBinary();

// Whether that binary holds the window: false for a command-line-only build (OOMLENS_BUILD_GUI=OFF,
// as the asan-ci and portable presets build it), where what would open it says so in one line.
bool oomlensBinaryHasGui();

// Runs `oomlens arguments...` as a shell would, `stdinBytes` on its standard input, offscreen and
// with a runtime dir of its own (arguments that are not a command take the GUI path, whose
// platform plugin warns on stderr without a login session: root in CI). A run that hangs for two
// minutes or crashes stops the test with its stderr.
CliRun runOomlens(const QStringList& arguments, const QByteArray& stdinBytes = {});

// How runOomlensWith runs it.
struct CliOptions
{
    QByteArray stdinBytes;
    QString stdinFile; // standard input read from this file instead (/dev/zero: an endless stream)
    // As on an ssh node or in CI: DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM all unset.
    bool noDisplay = true;
    int timeoutMs = 60000; // longer is a hang: the test stops with the command line
    QString workingDirectory; // empty: the test's own
};
CliRun runOomlensWith(const QStringList& arguments, const CliOptions& options);

// The JSON object a command printed; anything else stops the test with the start of the text.
QJsonObject parseJsonObject(const QByteArray& bytes);

} // namespace oomlens::test

// Skips the suite when it is not run through ctest, which names the binary to run.
#define OOMLENS_REQUIRE_BINARY()                                                                                       \
    do {                                                                                                               \
        if (oomlens::test::oomlensBinary().isEmpty())                                                                  \
            QSKIP("OOMLENS_BINARY is not set; run this test through ctest");                                           \
    } while (false)
