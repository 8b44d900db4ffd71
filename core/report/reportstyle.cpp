#include "core/report/reportstyle.h"

#include "core/presentation/palette.h"

#include <string>

namespace oomlens::report {

namespace {

// The category fills come from the palette the app draws with, so a band has one colour in both.
std::string categoryStyles()
{
    std::string light = ":root {";
    std::string dark = "@media (prefers-color-scheme: dark) {\n  :root {";
    std::string classes;
    for (int c = 0; c < categoryCount; ++c) {
        const auto category = static_cast<Category>(c);
        const std::string name(categoryName(category));
        light += " --" + name + ": " + categoryColor(category, Theme::Light).hex() + ";";
        dark += " --" + name + ": " + categoryColor(category, Theme::Dark).hex() + ";";
        classes += ".cat-" + name + " { fill: var(--" + name + "); background: var(--" + name + "); }\n";
    }
    return light + " }\n" + dark + " }\n}\n" + classes;
}

} // namespace

std::string_view reportStyleSheet()
{
    static constexpr std::string_view fixed = R"css(
:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1d232b; --muted: #5c6773; --card: #f5f7fa; --border: #d5dbe3;
  --accent: #2160c4; --bad: #c62828; --warn: #a15c00; --good: #2e7d32; --code: #eef1f5;
  --grid: #e3e7ec; --axis: #8a96a3;
  --reserved: #1d232b; --phase-load: #f0ecf9; --phase-forward: #eaf2fb; --phase-backward: #fbf0e6;
  --phase-optimizer: #fbeaea; --phase-eval: #eaf6ea; --phase-data: #f6f6e6;
  --segment: #e6ebf1; --block-allocated: #2f6fb3; --block-pending: #8c564b; --block-unknown: #9a9aa2;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #14181d; --fg: #e3e8ee; --muted: #9aa7b4; --card: #1d232b; --border: #333d48;
    --accent: #7aa7f0; --bad: #ef6b6b; --warn: #e0a44a; --good: #74c37a; --code: #242b34;
    --grid: #2a323c; --axis: #6b7784;
    --reserved: #e3e8ee; --phase-load: #2a2536; --phase-forward: #1c2835; --phase-backward: #33281e;
    --phase-optimizer: #352122; --phase-eval: #1e2e20; --phase-data: #2d2d1e;
    --segment: #2a323c; --block-allocated: #5b9bd5; --block-pending: #c49c94; --block-unknown: #909098;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 24px 20px 64px; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.25em; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--border); }
h3 { font-size: 1.05em; margin: 18px 0 6px; }
p { margin: 6px 0; }
.subtitle, .note { color: var(--muted); }
.note { font-size: 0.92em; }
nav ul { list-style: none; padding: 0; margin: 8px 0 0; display: flex; flex-wrap: wrap; gap: 6px 16px; }
nav a, a { color: var(--accent); text-decoration: none; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; font-size: 0.93em; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--border); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", monospace; font-size: 0.9em; }
pre { background: var(--code); padding: 10px 12px; border-radius: 6px; overflow-x: auto; white-space: pre-wrap;
  word-break: break-word; margin: 6px 0; }
code { background: var(--code); padding: 0 3px; border-radius: 3px; }
pre code { background: none; padding: 0; }
.card { background: var(--card); border: 1px solid var(--border); border-left: 4px solid var(--accent);
  border-radius: 8px; padding: 12px 16px; margin: 12px 0; break-inside: avoid; }
.card h3 { margin-top: 0; }
.card .confidence { float: right; color: var(--muted); font-size: 0.9em; }
.evidence li { margin: 2px 0; }
.fixes > li { margin: 10px 0; }
.saving { color: var(--good); font-weight: 600; white-space: nowrap; }
.verdict.fits { color: var(--good); font-weight: 600; }
.verdict.short { color: var(--bad); font-weight: 600; }
.badge { display: inline-block; font-size: 0.78em; padding: 1px 7px; border-radius: 10px; margin-left: 6px;
  border: 1px solid currentColor; white-space: nowrap; }
.badge.experiment { color: var(--warn); }
.badge.error { color: var(--bad); }
.badge.ok { color: var(--good); }
.figure { margin: 10px 0; }
svg.chart { width: 100%; height: auto; display: block; font-size: 11px; }
svg .tick, svg .axis-title, svg .marker-label { fill: var(--muted); }
svg .small { font-size: 9px; }
svg .marker-label { fill: var(--fg); font-weight: 600; }
svg .grid { stroke: var(--grid); stroke-width: 1; }
svg .axis { stroke: var(--axis); stroke-width: 1; }
svg .band { stroke: none; }
svg .reserved-line { fill: none; stroke: var(--reserved); stroke-width: 1.5; stroke-dasharray: 5 3; }
svg .rest-of-card { fill: var(--bad); fill-opacity: 0.18; stroke: var(--bad); stroke-width: 0.8; stroke-dasharray: 1 2; }
svg .capacity-line { stroke: var(--bad); stroke-width: 1; stroke-dasharray: 2 3; }
svg .span-bar { fill: var(--accent); fill-opacity: 0.18; stroke: var(--accent); stroke-opacity: 0.6; stroke-width: 0.75; }
svg .span-bar.open { stroke-dasharray: 3 2; }
svg .span-label { fill: var(--fg); }
svg .plan-overhead { fill: var(--reserved); opacity: 0.35; }
svg .host-allocated { fill: var(--accent); fill-opacity: 0.35; stroke: var(--accent); stroke-width: 1; }
svg .marker { stroke-width: 1.5; }
svg .peak-marker { stroke: var(--fg); }
svg .oom-marker { stroke: var(--bad); stroke-width: 2; }
svg .segment { fill: var(--segment); }
svg .block-allocated { fill: var(--block-allocated); }
svg .block-pending { fill: var(--block-pending); }
svg .block-unknown { fill: var(--block-unknown); }
.phase-load { fill: var(--phase-load); background: var(--phase-load); }
.phase-forward { fill: var(--phase-forward); background: var(--phase-forward); }
.phase-backward { fill: var(--phase-backward); background: var(--phase-backward); }
.phase-optimizer { fill: var(--phase-optimizer); background: var(--phase-optimizer); }
.phase-eval { fill: var(--phase-eval); background: var(--phase-eval); }
.phase-data { fill: var(--phase-data); background: var(--phase-data); }
.phase-rollout { fill: rgba(22, 156, 156, 0.16); background: rgba(22, 156, 156, 0.16); }
.phase-reference, .phase-reward { fill: rgba(122, 168, 46, 0.16); background: rgba(122, 168, 46, 0.16); }
.phase-weight_sync { fill: rgba(192, 57, 107, 0.14); background: rgba(192, 57, 107, 0.14); }
.phase-sleep, .phase-wake, .phase-offload, .phase-reload { fill: rgba(154, 132, 92, 0.16); background: rgba(154, 132, 92, 0.16); }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 0.88em; color: var(--muted); margin: 4px 0; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 4px; vertical-align: -1px;
  border: 1px solid var(--border); }
.swatch.reserved { background: none; border: 1px dashed var(--reserved); }
.swatch.rest-of-card { background: var(--bad); opacity: 0.3; }
.swatch.block-allocated { background: var(--block-allocated); }
.swatch.block-pending { background: var(--block-pending); }
.swatch.segment { background: var(--segment); }
.swatch.plan-overhead { background: var(--reserved); opacity: 0.35; }
.swatch.host-allocated { background: var(--accent); opacity: 0.35; }
svg .compare-a-band { fill: var(--axis); opacity: 0.25; stroke: none; }
svg .compare-b-band { fill: var(--accent); opacity: 0.25; stroke: none; }
svg .compare-a-line { fill: none; stroke: var(--axis); stroke-width: 1.5; }
svg .compare-b-line { fill: none; stroke: var(--accent); stroke-width: 1.5; }
.swatch.compare-a { background: var(--axis); }
.swatch.compare-b { background: var(--accent); }
td.grew { color: var(--bad); }
td.shrank { color: var(--good); }
details { margin: 4px 0; }
summary { cursor: pointer; }
details pre { margin-left: 16px; }
footer { margin-top: 48px; color: var(--muted); font-size: 0.85em; }
@media print {
  :root { color-scheme: light; }
  body { background: #fff; color: #000; font-size: 11pt; }
  main { max-width: none; padding: 0; }
  nav, .no-print { display: none; }
  a { color: inherit; }
  h2 { break-after: avoid; }
  .card, figure, .figure, table, pre { break-inside: avoid; }
  pre { white-space: pre-wrap; }
  details::details-content { content-visibility: visible; display: block; }
}
)css";
    static const std::string css = std::string(fixed) + categoryStyles();
    return css;
}

} // namespace oomlens::report
