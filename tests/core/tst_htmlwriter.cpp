#include "core/report/chartframe.h"
#include "core/report/htmlwriter.h"
#include "core/report/svgwriter.h"

#include <QTest>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

using namespace oomlens::report;

// The report's markup writer: fixed markup goes in as literals, everything else comes out escaped,
// whatever it holds (a frame name from a pickle, a path from the command line).
class TestHtmlWriter : public QObject
{
    Q_OBJECT

private slots:
    void textAndElementsAreEscaped()
    {
        HtmlWriter html;
        html.element("td", "<script>alert('x')</script> & \"quoted\"", "num\" onload=\"x");
        QCOMPARE(html.finish(),
            std::string("<td class=\"num&quot; onload=&quot;x\">&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; "
                        "&quot;quoted&quot;</td>"));
    }

    void invalidUtf8BecomesReplacementCharacter()
    {
        HtmlWriter html;
        html.text(std::string("frame\xff name"));
        QCOMPARE(html.finish(), std::string("frame\xEF\xBF\xBD name"));
    }

    void sectionsRowsAndLists()
    {
        HtmlWriter html;
        html.beginSection("inputs", "Inputs <and> versions");
        html.keyValueRow("PyTorch", "2.0 & newer");
        html.list({ "one", "<two>" });
        html.list({}); // nothing for an empty list
        html.endSection();
        QCOMPARE(html.finish(),
            std::string("<section id=\"inputs\">\n<h2>Inputs &lt;and&gt; versions</h2>\n"
                        "<tr><th>PyTorch</th><td>2.0 &amp; newer</td></tr>\n"
                        "<ul class=\"reading\">\n<li>one</li>\n<li>&lt;two&gt;</li>\n</ul>\n</section>\n"));
    }

    void legendEntriesEscapeClassAndLabel()
    {
        HtmlWriter html;
        html.legendEntry("cat-activations", "Activations");
        html.legendEntry("x\"><b", "label <i>");
        QCOMPARE(html.finish(),
            std::string("<span><span class=\"swatch cat-activations\"></span>Activations</span>"
                        "<span><span class=\"swatch x&quot;&gt;&lt;b\"></span>label &lt;i&gt;</span>"));
    }

    void finishEmptiesTheWriter()
    {
        HtmlWriter html;
        html.raw("<p>");
        QCOMPARE(html.finish(), std::string("<p>"));
        QCOMPARE(html.finish(), std::string());
    }

    // Coordinates are written to one decimal exactly as printf's "%.0f"/"%.1f" of the value rounded
    // to tenths would write them (the reports' bytes do not depend on how).
    void svgNumbersAsPrintfWritesThem()
    {
        const auto reference = [](double value) {
            if (!std::isfinite(value))
                value = 0;
            const double rounded = std::round(value * 10.0) / 10.0;
            char buffer[64];
            std::snprintf(buffer, sizeof buffer, rounded == std::floor(rounded) ? "%.0f" : "%.1f", rounded);
            return std::string(buffer);
        };
        const auto written = [](double value) {
            SvgWriter svg(1, 1, {}, {});
            svg.line(value, 0, 0, 0, {});
            const std::string markup = svg.finish();
            const size_t begin = markup.find("x1=\"") + 4;
            return markup.substr(begin, markup.find('"', begin) - begin);
        };
        std::vector<double> values = { 0, -0.0, 0.04, -0.04, 0.05, -0.05, 0.25, 12.25, -7.96, 944, 71.95, 1e14, -1e14,
            3e17, -3e17, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity() };
        std::mt19937_64 random(27);
        std::uniform_real_distribution<double> coordinate(-2000, 2000);
        for (int i = 0; i < 100000; ++i)
            values.push_back(coordinate(random));
        for (int i = -20000; i <= 20000; ++i)
            values.push_back(i / 100.0);
        for (const double value : values) {
            if (written(value) != reference(value))
                QFAIL(qPrintable(QStringLiteral("%1: %2, printf %3")
                                     .arg(value, 0, 'g', 17)
                                     .arg(QString::fromStdString(written(value)))
                                     .arg(QString::fromStdString(reference(value)))));
        }
    }

    void byteAxisNeverClipsTheTop()
    {
        // Binary steps, at most five below the top, and one more step above it.
        constexpr uint64_t gib = uint64_t(1) << 30;
        const ByteAxis axis = byteAxisFor(14 * gib);
        QCOMPARE(axis.step, 4 * gib);
        QCOMPARE(axis.max, 16 * gib);
        QCOMPARE(byteAxisFor(16 * gib).max, 20 * gib);
        QCOMPARE(byteAxisFor(0).max, uint64_t(1));
        QCOMPARE(binaryByteStep(5), uint64_t(1));
        QCOMPARE(binaryByteStep(6), uint64_t(2));
    }
};

QTEST_GUILESS_MAIN(TestHtmlWriter)
#include "tst_htmlwriter.moc"
