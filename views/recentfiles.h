#pragma once

#include <QObject>
#include <QStringList>

class QMenu;

namespace oomlens {

// The files opened lately, newest first, kept in QSettings ("recentFiles") so they outlive the
// session, and the File ▸ Open Recent menu that lists them. A file that has since gone stays
// listed: it may be on a drive that comes back, and opening it says what is wrong.
class RecentFiles : public QObject
{
    Q_OBJECT
public:
    static constexpr int maxCount = 10;

    explicit RecentFiles(QObject* parent = nullptr);

    QStringList paths() const;
    // Puts the paths first, each once: the last one given ends up newest. The oldest past
    // maxCount are forgotten.
    void add(const QStringList& paths);
    void clear();
    // Where a file dialog starts: the newest file's folder, or the home folder.
    QString lastFolder() const;

    // Keeps `menu` listing the files: filled now and again each time it is about to show.
    void attachMenu(QMenu* menu);
    // One entry per file ("name  —  folder"), then Clear; a disabled "(none)" when there are none.
    void fillMenu(QMenu* menu);

signals:
    void openRequested(const QStringList& paths);
    void changed(const QStringList& paths);

private:
    void store(const QStringList& paths);
};

} // namespace oomlens
