#include "views/recentfiles.h"

#include <QDir>
#include <QFileInfo>
#include <QMenu>
#include <QSettings>

namespace oomlens {

namespace {

const QString settingsKey = QStringLiteral("recentFiles");

} // namespace

RecentFiles::RecentFiles(QObject* parent)
    : QObject(parent)
{ }

QStringList RecentFiles::paths() const
{
    return QSettings().value(settingsKey).toStringList();
}

void RecentFiles::add(const QStringList& paths)
{
    if (paths.isEmpty())
        return;
    QStringList recent = this->paths();
    for (const QString& path : paths) {
        recent.removeAll(path);
        recent.prepend(path);
    }
    while (recent.size() > maxCount)
        recent.removeLast();
    store(recent);
}

void RecentFiles::clear()
{
    QSettings().remove(settingsKey);
    emit changed({});
}

void RecentFiles::store(const QStringList& paths)
{
    QSettings().setValue(settingsKey, paths);
    emit changed(paths);
}

QString RecentFiles::lastFolder() const
{
    const QStringList recent = paths();
    return recent.isEmpty() ? QDir::homePath() : QFileInfo(recent.front()).absolutePath();
}

void RecentFiles::attachMenu(QMenu* menu)
{
    connect(menu, &QMenu::aboutToShow, this, [this, menu] { fillMenu(menu); });
    fillMenu(menu);
}

void RecentFiles::fillMenu(QMenu* menu)
{
    menu->clear();
    const QStringList recent = paths();
    for (const QString& path : recent)
        menu->addAction(QFileInfo(path).fileName() + QStringLiteral("  —  ") + QFileInfo(path).absolutePath(), this,
            [this, path] { emit openRequested({ path }); });
    if (recent.isEmpty()) {
        menu->addAction(QStringLiteral("(none)"))->setEnabled(false);
        return;
    }
    menu->addSeparator();
    menu->addAction(QStringLiteral("Clear"), this, &RecentFiles::clear);
}

} // namespace oomlens
