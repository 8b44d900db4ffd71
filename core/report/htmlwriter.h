#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace oomlens::report {

// Markup written in this module's source: a string literal (or a choice between literals), never a
// string made at run time. HtmlWriter takes tags and fixed markup only in this form, so nothing read
// from an input can reach the document without passing through escaping.
class Markup
{
public:
    consteval Markup(const char* markup)
        : m_markup(markup)
    { }
    std::string_view view() const { return m_markup; }

private:
    std::string_view m_markup;
};

// Writes the report's HTML. Fixed markup comes in as Markup; every other string (text, attribute
// values, CSS classes) is escaped on the way in. Charts come from SvgWriter, which escapes its own
// text, and the style sheet is the module's own constant.
class HtmlWriter
{
public:
    void raw(Markup markup) { m_out += markup.view(); }
    void text(std::string_view content);
    // <tag class="cssClass">content</tag>, the class left out when empty.
    void element(Markup tag, std::string_view content, std::string_view cssClass = {});
    void beginSection(Markup id, std::string_view heading);
    void endSection() { raw("</section>\n"); }
    // <tr><th>key</th><td>value</td></tr>
    void keyValueRow(std::string_view key, std::string_view value);
    // <ul class="reading"> with one <li> per item; nothing when empty.
    void list(const std::vector<std::string>& items);
    // <span class="swatch cssClass"></span>
    void swatch(std::string_view cssClass);
    // <span><span class="swatch cssClass"></span>label</span>: one entry of a chart's legend.
    void legendEntry(std::string_view cssClass, std::string_view label);
    // Inline SVG from SvgWriter::finish() (already escaped there) and the report's style sheet.
    void svg(const std::string& svgMarkup) { m_out += svgMarkup; }
    void styleSheet(std::string_view css) { m_out += css; }

    // The document so far; the writer is empty afterwards.
    std::string finish() { return std::move(m_out); }

private:
    std::string m_out;
};

} // namespace oomlens::report
