#pragma once

#include <QByteArray>
#include <QString>

namespace oomlens {

// One input to open: a file, or text the user pasted or dropped (or the CLI read from standard
// input).
struct LoadRequest
{
    QString path; // file path; empty for text
    QByteArray text; // the text when path is empty
    // The text's name among the case's inputs and in its errors: "(pasted)", "-" for stdin.
    QString textName;
    // Set when the text could not be taken in (standard input beyond its bound): the input is
    // then listed under textName with this reason.
    QString error;
    // A file found in a folder the user gave rather than named itself: when it is no kind of input
    // oomlens reads (a picture, a README), it is listed as not read without failing the run.
    bool inFolder = false;

    static LoadRequest file(const QString& path, bool inFolder = false) { return { path, {}, {}, {}, inFolder }; }
    static LoadRequest pasted(const QByteArray& text, const QString& name = QStringLiteral("(pasted)"))
    {
        return { {}, text, name, {}, false };
    }
    static LoadRequest unreadable(const QString& name, const QString& reason)
    {
        return { {}, {}, name, reason, false };
    }
    bool isFile() const { return !path.isEmpty(); }
};

} // namespace oomlens
