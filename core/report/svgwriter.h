#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oomlens::report {

// Builds inline SVG by string concatenation. Every piece of text passes through escapeHtml;
// colours come from CSS classes so the report's light/dark and print styles apply to charts.
class SvgWriter
{
public:
    SvgWriter(double width, double height, std::string_view cssClass, std::string_view ariaLabel);

    void rect(
        double x, double y, double width, double height, std::string_view cssClass, std::string_view tooltip = {});
    void line(double x1, double y1, double x2, double y2, std::string_view cssClass);
    // A closed polygon through the points, in order.
    void polygon(
        const std::vector<std::pair<double, double>>& points, std::string_view cssClass, std::string_view tooltip = {});
    void polyline(const std::vector<std::pair<double, double>>& points, std::string_view cssClass);
    enum class Anchor { Start, Middle, End };
    void text(double x, double y, std::string_view content, std::string_view cssClass, Anchor anchor = Anchor::Start);
    void beginGroup(std::string_view cssClass, std::string_view tooltip = {});
    void endGroup();

    // Closes the <svg> element and returns the markup; the writer is empty afterwards.
    std::string finish();

private:
    void number(double value);
    void attribute(std::string_view name, std::string_view value);
    void titleElement(std::string_view tooltip);
    void pointList(const std::vector<std::pair<double, double>>& points);
    void closeElement(std::string_view element, std::string_view tooltip);

    std::string m_out;
};

} // namespace oomlens::report
