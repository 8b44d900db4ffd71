#pragma once

#include <QWidget>

class QHBoxLayout;
class QVBoxLayout;

namespace oomlens {

// What a new window shows: what oomlens reads and the three ways to give it something.
class EmptyStateWidget : public QWidget
{
    Q_OBJECT
public:
    explicit EmptyStateWidget(QWidget* parent = nullptr);
    void setRecentFiles(const QStringList& paths);
    void setExampleAvailable(bool available);

signals:
    void openRequested();
    void pasteRequested();
    void exampleRequested();
    void recentRequested(const QString& path);

private:
    // Open, Paste and the example, centred in a row; connected to the signals.
    QHBoxLayout* buildButtons();

    QWidget* m_recentBox = nullptr;
    QVBoxLayout* m_recentLayout = nullptr;
    QWidget* m_exampleButton = nullptr;
};

} // namespace oomlens
