#pragma once

#include <QStringList>
#include <QWidget>

class QLabel;

namespace oomlens {

// The red strip above the tabs that says what went wrong (unreadable files, a rules file that no
// longer parses, a report that could not be written), one problem a line, until the user
// dismisses it or a later load goes well.
class ErrorBanner : public QWidget
{
    Q_OBJECT
public:
    explicit ErrorBanner(QWidget* parent = nullptr);

    void showLines(const QStringList& lines);
    void dismiss();
    // What it says; empty once dismissed.
    QString text() const;

private:
    QLabel* m_text = nullptr;
};

} // namespace oomlens
