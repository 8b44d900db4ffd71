#pragma once

#include <qcustomplot.h>

namespace oomlens {

// Byte axis: steps of 1/2/5 in the unit that fits the range, labels like "12 GiB" in the
// same binary units PyTorch prints, so the axis can be read against the OOM message.
class ByteAxisTicker : public QCPAxisTicker
{
public:
    static QString label(double bytes, double step);

protected:
    double getTickStep(const QCPRange& range) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override;

private:
    double m_step = 1;
};

// Time axis in microseconds since the first event: steps that are round durations.
class TimeAxisTicker : public QCPAxisTicker
{
public:
    static QString label(double microseconds, double step);

protected:
    double getTickStep(const QCPRange& range) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override;

private:
    double m_step = 1;
};

// Event-index axis: integer steps, "250k" / "1.5M" labels.
class EventAxisTicker : public QCPAxisTicker
{
protected:
    double getTickStep(const QCPRange& range) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override;
};

} // namespace oomlens
