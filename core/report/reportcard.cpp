#include "core/presentation/labels.h"
#include "core/report/reportsections.h"
#include "core/units.h"

#include <cstdio>

namespace oomlens::report::sections {

namespace {

std::string_view bandColor(std::string_view key)
{
    if (key == "allocated")
        return "var(--block-allocated)";
    if (key == "cached_free")
        return "var(--axis)";
    if (key == "process_outside_allocator")
        return "var(--warn)";
    if (key == "other_processes")
        return "var(--bad)";
    if (key == "unattributed")
        return "var(--block-unknown)";
    return "var(--segment)";
}

std::string percentWidth(uint64_t part, uint64_t whole)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.2f", whole ? 100.0 * double(part) / double(whole) : 0.0);
    return buffer;
}

// The card's capacity as one bar by holder, with its legend.
void cardBar(HtmlWriter& html, const CardReconciliation& card)
{
    uint64_t total = 0;
    for (const CardBand& band : card.bands)
        total += band.bytes;
    html.raw("<div class=\"figure\">\n<div class=\"cardbar\" style=\"display: flex; height: 22px; border: 1px "
             "solid var(--border); border-radius: 3px; overflow: hidden\">");
    for (const CardBand& band : card.bands) {
        html.raw("<span data-band=\"");
        html.text(std::string(cardBandName(band.kind)));
        html.raw("\" title=\"");
        html.text(band.label + ": " + formatBytes(band.bytes));
        html.raw("\" style=\"width: ");
        html.text(percentWidth(band.bytes, total));
        html.raw("%; background: ");
        html.text(bandColor(std::string(cardBandName(band.kind))));
        html.raw("\"></span>");
    }
    html.raw("</div>\n<div class=\"legend\">");
    for (const CardBand& band : card.bands) {
        html.raw("<span><span class=\"swatch\" style=\"background: ");
        html.text(bandColor(std::string(cardBandName(band.kind))));
        html.raw("\"></span>");
        html.text(band.label + " " + formatBytes(band.bytes));
        html.raw("</span> ");
    }
    html.raw("</div>\n</div>\n");
}

} // namespace

// The card's capacity as one bar by holder, the three views' figures in one table, and what the
// rest of the card usually is.
void card(HtmlWriter& html, const ReportContext& context)
{
    const CardReconciliation& card = context.card;
    if (!card.available())
        return;
    html.beginSection("card", "The card's memory: allocator, process, card");
    if (!card.bands.empty())
        cardBar(html, card);
    html.raw("<table class=\"card-reconciliation\">\n<tr><th>view</th><th>figure</th><th class=\"num\">bytes</th>"
             "<th>from</th><th>what it means</th></tr>\n");
    std::optional<CardFigure::View> view;
    for (const CardFigure& figure : card.figures) {
        html.raw("<tr><td>");
        if (figure.view != view)
            html.text(cardViewLabel(figure.view));
        view = figure.view;
        html.raw("</td><td>");
        html.text(figure.label);
        html.raw("</td><td class=\"num\">");
        html.text(figure.bytes ? formatBytes(*figure.bytes) : std::string("not given"));
        html.raw("</td><td>");
        html.text(figure.source);
        html.raw("</td><td>");
        html.text(figure.meaning);
        html.raw("</td></tr>\n");
    }
    html.raw("</table>\n");
    if (!card.notes.empty()) {
        html.raw("<ul class=\"reading\">\n");
        for (const std::string& note : card.notes) {
            html.raw("<li>");
            html.text(note);
            html.raw("</li>\n");
        }
        html.raw("</ul>\n");
    }
    if (!card.parts.empty()) {
        html.raw("<h3>The rest of the card: what it usually is</h3>\n<table>\n<tr><th>what</th><th>typical size</th>"
                 "<th>what to check</th></tr>\n");
        for (const RestOfCardPart& part : card.parts) {
            html.raw("<tr><td>");
            html.text(part.name);
            html.raw("</td><td>");
            html.text(part.typicalSize);
            html.raw("</td><td>");
            html.text(part.whatToCheck);
            html.raw("</td></tr>\n");
        }
        html.raw("</table>\n");
    }
    html.endSection();
}

} // namespace oomlens::report::sections
