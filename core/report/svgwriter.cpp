#include "core/report/svgwriter.h"

#include "core/report/htmlescape.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace oomlens::report {

SvgWriter::SvgWriter(double width, double height, std::string_view cssClass, std::string_view ariaLabel)
{
    m_out += "<svg viewBox=\"0 0 ";
    number(width);
    m_out += ' ';
    number(height);
    m_out += '"';
    attribute("class", cssClass);
    m_out += " role=\"img\"";
    attribute("aria-label", ariaLabel);
    m_out += " preserveAspectRatio=\"xMidYMid meet\">";
}

void SvgWriter::number(double value)
{
    // One decimal is sub-pixel at any sensible print size and keeps the file small. A timeline has
    // tens of thousands of coordinates, so they are written from integers rather than by printf
    // ("%.0f" or "%.1f" of the value rounded to tenths, "-0" included, as printf writes them).
    if (!std::isfinite(value))
        value = 0;
    const double tenths = std::round(value * 10.0);
    if (std::fabs(tenths) > 1e15) {
        char buffer[32];
        const double rounded = tenths / 10.0;
        std::snprintf(buffer, sizeof buffer, rounded == std::floor(rounded) ? "%.0f" : "%.1f", rounded);
        m_out += buffer;
        return;
    }
    const auto scaled = static_cast<int64_t>(tenths);
    if (scaled < 0 || (scaled == 0 && std::signbit(tenths)))
        m_out += '-';
    const uint64_t magnitude = scaled < 0 ? static_cast<uint64_t>(-scaled) : static_cast<uint64_t>(scaled);
    char buffer[24];
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, magnitude / 10).ptr;
    m_out.append(buffer, end);
    if (magnitude % 10 != 0) {
        m_out += '.';
        m_out += static_cast<char>('0' + magnitude % 10);
    }
}

void SvgWriter::attribute(std::string_view name, std::string_view value)
{
    if (value.empty())
        return;
    m_out += ' ';
    m_out += name;
    m_out += "=\"";
    appendEscaped(m_out, value);
    m_out += '"';
}

void SvgWriter::titleElement(std::string_view tooltip)
{
    if (tooltip.empty())
        return;
    m_out += "<title>";
    appendEscaped(m_out, tooltip);
    m_out += "</title>";
}

void SvgWriter::pointList(const std::vector<std::pair<double, double>>& points)
{
    for (size_t i = 0; i < points.size(); ++i) {
        if (i > 0)
            m_out += ' ';
        number(points[i].first);
        m_out += ',';
        number(points[i].second);
    }
}

// A shape with a tooltip needs a <title> child, so it cannot be self-closing.
void SvgWriter::closeElement(std::string_view element, std::string_view tooltip)
{
    if (tooltip.empty()) {
        m_out += "/>";
        return;
    }
    m_out += '>';
    titleElement(tooltip);
    m_out += "</";
    m_out += element;
    m_out += '>';
}

void SvgWriter::rect(
    double x, double y, double width, double height, std::string_view cssClass, std::string_view tooltip)
{
    m_out += "<rect x=\"";
    number(x);
    m_out += "\" y=\"";
    number(y);
    m_out += "\" width=\"";
    number(std::max(width, 0.0));
    m_out += "\" height=\"";
    number(std::max(height, 0.0));
    m_out += '"';
    attribute("class", cssClass);
    closeElement("rect", tooltip);
}

void SvgWriter::line(double x1, double y1, double x2, double y2, std::string_view cssClass)
{
    m_out += "<line x1=\"";
    number(x1);
    m_out += "\" y1=\"";
    number(y1);
    m_out += "\" x2=\"";
    number(x2);
    m_out += "\" y2=\"";
    number(y2);
    m_out += '"';
    attribute("class", cssClass);
    m_out += "/>";
}

void SvgWriter::polygon(
    const std::vector<std::pair<double, double>>& points, std::string_view cssClass, std::string_view tooltip)
{
    m_out += "<polygon points=\"";
    pointList(points);
    m_out += '"';
    attribute("class", cssClass);
    closeElement("polygon", tooltip);
}

void SvgWriter::polyline(const std::vector<std::pair<double, double>>& points, std::string_view cssClass)
{
    m_out += "<polyline points=\"";
    pointList(points);
    m_out += '"';
    attribute("class", cssClass);
    m_out += "/>";
}

void SvgWriter::text(double x, double y, std::string_view content, std::string_view cssClass, Anchor anchor)
{
    m_out += "<text x=\"";
    number(x);
    m_out += "\" y=\"";
    number(y);
    m_out += '"';
    if (anchor == Anchor::Middle)
        m_out += " text-anchor=\"middle\"";
    else if (anchor == Anchor::End)
        m_out += " text-anchor=\"end\"";
    attribute("class", cssClass);
    m_out += '>';
    appendEscaped(m_out, content);
    m_out += "</text>";
}

void SvgWriter::beginGroup(std::string_view cssClass, std::string_view tooltip)
{
    m_out += "<g";
    attribute("class", cssClass);
    m_out += '>';
    titleElement(tooltip);
}

void SvgWriter::endGroup()
{
    m_out += "</g>";
}

std::string SvgWriter::finish()
{
    m_out += "</svg>";
    return std::move(m_out);
}

} // namespace oomlens::report
