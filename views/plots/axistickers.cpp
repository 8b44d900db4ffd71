#include "views/plots/axistickers.h"

#include <array>
#include <cmath>

namespace oomlens {

namespace {

// 1, 2, 5 × 10^n, the first at or above `raw`.
double niceDecimalStep(double raw)
{
    if (raw <= 0)
        return 1;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    for (double factor : { 1.0, 2.0, 5.0, 10.0 }) {
        if (factor * magnitude >= raw)
            return factor * magnitude;
    }
    return 10 * magnitude;
}

QString trimmed(double value, int decimals)
{
    QString text = QString::number(value, 'f', decimals);
    if (text.contains(QLatin1Char('.'))) {
        while (text.endsWith(QLatin1Char('0')))
            text.chop(1);
        if (text.endsWith(QLatin1Char('.')))
            text.chop(1);
    }
    return text;
}

} // namespace

double ByteAxisTicker::getTickStep(const QCPRange& range)
{
    const double raw = range.size() / std::max(1, tickCount());
    double unit = 1;
    while (unit * 1024 <= raw && unit < std::pow(1024.0, 4))
        unit *= 1024;
    m_step = niceDecimalStep(raw / unit) * unit;
    return m_step;
}

QString ByteAxisTicker::label(double bytes, double step)
{
    static constexpr std::array<const char*, 5> units = { "B", "KiB", "MiB", "GiB", "TiB" };
    size_t index = 0;
    double unit = 1;
    // The unit follows the step, so every label on one axis uses the same unit.
    while (index + 1 < units.size() && step >= unit * 1024 * 0.1 && std::abs(bytes) >= unit * 1024) {
        unit *= 1024;
        ++index;
    }
    const double scaledStep = step / unit;
    const int decimals = scaledStep >= 1 ? 0 : scaledStep >= 0.1 ? 1 : 2;
    return trimmed(bytes / unit, decimals) + QLatin1Char(' ') + QLatin1String(units[index]);
}

QString ByteAxisTicker::getTickLabel(double tick, const QLocale&, QChar, int)
{
    return tick == 0 ? QStringLiteral("0") : label(tick, m_step);
}

double TimeAxisTicker::getTickStep(const QCPRange& range)
{
    static constexpr std::array<double, 8> secondsSteps = { 1, 2, 5, 10, 15, 30, 60, 120 };
    const double raw = range.size() / std::max(1, tickCount());
    if (raw < 1e6) {
        m_step = niceDecimalStep(raw);
    } else if (raw < 120e6) {
        m_step = 300e6;
        for (double seconds : secondsSteps) {
            if (seconds * 1e6 >= raw) {
                m_step = seconds * 1e6;
                break;
            }
        }
    } else {
        m_step = niceDecimalStep(raw / 60e6) * 60e6;
    }
    return m_step;
}

QString TimeAxisTicker::label(double microseconds, double step)
{
    if (microseconds == 0)
        return QStringLiteral("0");
    if (step >= 60e6)
        return trimmed(microseconds / 60e6, 1) + QStringLiteral(" min");
    if (step >= 1e6 || std::abs(microseconds) >= 1e6)
        return trimmed(microseconds / 1e6, step >= 1e6 ? 0 : step >= 1e5 ? 1 : 3) + QStringLiteral(" s");
    if (step >= 1e3 || std::abs(microseconds) >= 1e3)
        return trimmed(microseconds / 1e3, step >= 1e3 ? 0 : 2) + QStringLiteral(" ms");
    return trimmed(microseconds, 0) + QStringLiteral(" µs");
}

QString TimeAxisTicker::getTickLabel(double tick, const QLocale&, QChar, int)
{
    return label(tick, m_step);
}

double EventAxisTicker::getTickStep(const QCPRange& range)
{
    return std::max(1.0, niceDecimalStep(range.size() / std::max(1, tickCount())));
}

QString EventAxisTicker::getTickLabel(double tick, const QLocale&, QChar, int)
{
    const double magnitude = std::abs(tick);
    if (magnitude >= 1e6)
        return trimmed(tick / 1e6, 2) + QLatin1Char('M');
    if (magnitude >= 1e4)
        return trimmed(tick / 1e3, 1) + QLatin1Char('k');
    return QString::number(qint64(std::llround(tick)));
}

} // namespace oomlens
