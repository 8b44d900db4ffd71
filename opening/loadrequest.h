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

    static LoadRequest file(const QString& path) { return { path, {}, {} }; }
    static LoadRequest pasted(const QByteArray& text, const QString& name = QStringLiteral("(pasted)"))
    {
        return { {}, text, name };
    }
    bool isFile() const { return !path.isEmpty(); }
};

} // namespace oomlens
