//! The page's style sheet, inline in every report: system fonts only (so
//! nothing is downloaded), and the chart strokes and text sizes set here so
//! that the SVG markup stays small.

pub const STYLE: &str = r#"
:root { --ink: #1d2330; --muted: #5d6675; --line: #dde1e7; --soft: #f4f6f9; --accent: #2563a8; --bad: #b3261e; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; font: 15px/1.5 system-ui, sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 28px 28px 48px; }
header h1 { margin: 0; font-size: 26px; letter-spacing: -0.01em; }
header .target { margin: 4px 0 0; font: 600 16px/1.4 ui-monospace, monospace; word-break: break-all; color: var(--accent); }
header .sub { margin: 2px 0 0; color: var(--muted); }
h2 { font-size: 19px; margin: 36px 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 24px 0 8px; }
code { font: 13px ui-monospace, monospace; word-break: break-all; }
.warn { background: #fdecea; border-left: 4px solid var(--bad); padding: 8px 12px; color: #6b1a14; }
.verdict { border-left: 4px solid; padding: 8px 12px; }
.verdict.met { background: #e8f4ec; border-color: #2f8a4c; color: #1d4d2c; }
.verdict.failed { background: #fdecea; border-color: var(--bad); color: #6b1a14; }
.verdict.unsure { background: #fdf6e3; border-color: #b7791f; color: #5c3d0a; }
tr.failed th, tr.failed td { background: #fdf3f2; }
tr.unsure th, tr.unsure td { background: #fdf9ee; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { padding: 5px 14px 5px 0; text-align: left; vertical-align: top; border-bottom: 1px solid var(--line); }
thead th { color: var(--muted); font-weight: 600; font-size: 13px; }
table.config th { color: var(--muted); font-weight: 500; width: 180px; }
table.numbers td { text-align: right; font-variant-numeric: tabular-nums; padding-left: 24px; }
table.numbers thead th:not(:first-child) { text-align: right; padding-left: 24px; }
table.numbers tbody th { font-weight: 500; }
table.threads tbody tr:last-child th, table.threads tbody tr:last-child td { font-weight: 600; border-top: 2px solid var(--line); }
table.steps td, table.steps thead th:not(:first-child) { padding-left: 16px; white-space: nowrap; }
table.steps td:last-child, table.steps thead th:last-child { text-align: left; white-space: normal; }
.cards { display: grid; grid-template-columns: repeat(4, 1fr); gap: 12px; }
.card { background: var(--soft); border-radius: 8px; padding: 12px 14px; border-top: 3px solid var(--accent); }
.card.alert { border-top-color: var(--bad); }
.card .label { font-size: 13px; color: var(--muted); }
.card .value { font-size: 24px; font-weight: 650; font-variant-numeric: tabular-nums; }
.card .note { font-size: 12px; color: var(--muted); }
.pair { display: flex; flex-wrap: wrap; gap: 12px 56px; align-items: flex-start; }
.pair h3 { margin-top: 4px; }
.pair p { max-width: 340px; }
figure { margin: 8px 0 20px; }
figcaption { color: var(--muted); font-size: 14px; margin-top: 4px; max-width: 860px; }
svg.chart { width: 100%; height: auto; display: block; font-family: inherit; }
svg .grid { stroke: #e8ebef; stroke-width: 1; }
svg .axis { stroke: #8a93a0; stroke-width: 1.2; fill: none; }
svg .tick { font-size: 12px; fill: var(--muted); font-variant-numeric: tabular-nums; }
svg .title { font-size: 13px; fill: var(--ink); }
svg .legend { font-size: 13px; fill: var(--ink); }
svg .note { font-size: 15px; fill: var(--muted); }
svg .series { fill: none; stroke-width: 2.2; stroke-linejoin: round; stroke-linecap: round; }
svg .dot { fill-opacity: 0; }
svg .dot.shown { fill-opacity: 0.9; r: 3; }
svg .ring { fill: none; stroke-width: 2; }
svg .dot:hover { fill-opacity: 1; stroke: #fff; stroke-width: 1.5; }
footer { margin-top: 40px; color: var(--muted); font-size: 13px; }
@media (max-width: 720px) { .cards { grid-template-columns: repeat(2, 1fr); } }
"#;
