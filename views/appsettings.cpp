#include "views/appsettings.h"

#include "opening/categoryrulesfile.h"
#include "views/categorycolors.h"

#include <QSettings>

namespace oomlens {

namespace {

QString colorKey(Category category)
{
    return QStringLiteral("colors/")
        + QString::fromUtf8(categoryName(category).data(), qsizetype(categoryName(category).size()));
}

} // namespace

AppSettings AppSettings::load()
{
    QSettings settings;
    AppSettings result;
    bool ok = false;
    const int device = settings.value(QStringLiteral("analysis/device"), -1).toInt(&ok);
    if (ok && device >= 0)
        result.device = device;
    result.eventAxis = settings.value(QStringLiteral("timeline/eventAxis"), false).toBool();
    for (int i = 0; i < categoryCount; ++i) {
        const QColor color(settings.value(colorKey(Category(i))).toString());
        result.categoryColors[size_t(i)] = color.isValid() ? color : QColor();
    }
    result.rulesPath = settings.value(QStringLiteral("analysis/rulesPath")).toString();
    return result;
}

void AppSettings::save() const
{
    QSettings settings;
    settings.setValue(QStringLiteral("analysis/device"), device ? *device : -1);
    settings.setValue(QStringLiteral("timeline/eventAxis"), eventAxis);
    for (int i = 0; i < categoryCount; ++i) {
        const QColor& color = categoryColors[size_t(i)];
        if (color.isValid())
            settings.setValue(colorKey(Category(i)), color.name());
        else
            settings.remove(colorKey(Category(i)));
    }
    settings.setValue(QStringLiteral("analysis/rulesPath"), rulesPath);
}

void AppSettings::applyColors() const
{
    for (int i = 0; i < categoryCount; ++i)
        colors::setCategoryOverride(Category(i), categoryColors[size_t(i)]);
}

AnalysisOptions AppSettings::analysisOptions() const
{
    AnalysisOptions options;
    options.device = device;
    setCategoryRules(options, rulesPath.toStdString());
    return options;
}

bool AppSettings::sameAnalysis(const AppSettings& other) const
{
    return device == other.device && rulesPath == other.rulesPath;
}

} // namespace oomlens
