#include "core/report/htmlwriter.h"

#include "core/report/htmlescape.h"

namespace oomlens::report {

void HtmlWriter::text(std::string_view content)
{
    appendEscaped(m_out, content);
}

void HtmlWriter::element(Markup tag, std::string_view content, std::string_view cssClass)
{
    raw("<");
    raw(tag);
    if (!cssClass.empty()) {
        raw(" class=\"");
        text(cssClass);
        raw("\"");
    }
    raw(">");
    text(content);
    raw("</");
    raw(tag);
    raw(">");
}

void HtmlWriter::beginSection(Markup id, std::string_view heading)
{
    raw("<section id=\"");
    raw(id);
    raw("\">\n");
    element("h2", heading);
    raw("\n");
}

void HtmlWriter::keyValueRow(std::string_view key, std::string_view value)
{
    raw("<tr>");
    element("th", key);
    element("td", value);
    raw("</tr>\n");
}

void HtmlWriter::list(const std::vector<std::string>& items)
{
    if (items.empty())
        return;
    raw("<ul class=\"reading\">\n");
    for (const std::string& item : items) {
        element("li", item);
        raw("\n");
    }
    raw("</ul>\n");
}

void HtmlWriter::swatch(std::string_view cssClass)
{
    raw("<span class=\"swatch ");
    text(cssClass);
    raw("\"></span>");
}

void HtmlWriter::legendEntry(std::string_view cssClass, std::string_view label)
{
    raw("<span>");
    swatch(cssClass);
    text(label);
    raw("</span>");
}

} // namespace oomlens::report
