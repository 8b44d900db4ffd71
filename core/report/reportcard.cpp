#include "core/presentation/cardwords.h"
#include "core/presentation/labels.h"
#include "core/presentation/palette.h"
#include "core/report/reportsections.h"
#include "core/units.h"

#include <cstdio>

namespace oomlens::report::sections {

namespace {

std::string percentWidth(uint64_t part, uint64_t whole)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.2f", whole ? 100.0 * double(part) / double(whole) : 0.0);
    return buffer;
}

// The card's capacity as one bar by holder, with its legend, in the app's colours (palette.h).
void cardBar(HtmlWriter& html, const CardReconciliation& card)
{
    uint64_t total = 0;
    for (const CardBand& band : card.bands)
        total += band.bytes;
    html.raw("<div class=\"figure\">\n<div class=\"cardbar\" style=\"display: flex; height: 22px; border: 1px "
             "solid var(--border); border-radius: 3px; overflow: hidden\">");
    for (const CardBand& band : card.bands) {
        html.raw("<span data-band=\"");
        html.text(cardBandName(band.kind));
        html.raw("\" title=\"");
        html.text(band.label + ": " + formatBytes(band.bytes));
        html.raw("\" style=\"width: ");
        html.text(percentWidth(band.bytes, total));
        html.raw("%; background: ");
        html.text(cardBandColor(band.kind).hex());
        html.raw("\"></span>");
    }
    html.raw("</div>\n<div class=\"legend\">");
    for (const CardBand& band : card.bands) {
        html.raw("<span><span class=\"swatch\" style=\"background: ");
        html.text(cardBandColor(band.kind).hex());
        html.raw("\"></span>");
        html.text(band.label + " " + formatBytes(band.bytes));
        html.raw("</span> ");
    }
    html.raw("</div>\n</div>\n");
}

} // namespace

// The card's capacity as one bar by holder, the three views' figures in one table, and what the
// rest of the card usually is when it matters to this case.
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
        html.raw("<tr>");
        // The view's name once, on its first figure.
        html.element("td", figure.view != view ? cardViewLabel(figure.view) : std::string_view());
        view = figure.view;
        html.element("td", figure.label);
        html.element("td", figure.bytes ? formatBytes(*figure.bytes) : std::string("not given"), "num");
        html.element("td", figure.source);
        html.element("td", figure.meaning);
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
    html.list(card.notes);
    // Only where that memory matters to the answer (CardReconciliation::restMatters): a runtime's
    // own context and kernels are the same in every run and would only push the fixes down.
    if (card.restMatters) {
        html.raw("<h3>The rest of the card: what it usually is</h3>\n<table>\n<tr><th>what</th><th>typical size</th>"
                 "<th>what to check</th></tr>\n");
        for (const RestOfCardPart& part : card.parts) {
            html.raw("<tr>");
            html.element("td", part.name);
            html.element("td", part.typicalSize);
            html.element("td", part.whatToCheck);
            html.raw("</tr>\n");
        }
        html.raw("</table>\n");
    }
    html.endSection();
}

} // namespace oomlens::report::sections
