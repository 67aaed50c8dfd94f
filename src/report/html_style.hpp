// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The HTML page's one stylesheet, inline (the page's Content-Security-Policy allows inline
// styles only): colours match html_report.cpp's verdict colours, and the plot area's #f1f8ff
// (svg_plot.cpp) is used nowhere else, so a screenshot test can find every plot.

namespace pw::report {

inline constexpr const char* kPageStyle = R"css(
*{box-sizing:border-box}
body{margin:0;background:#f6f8fa;color:#1f2328;font:15px/1.45 "DejaVu Sans",system-ui,sans-serif}
header{background:#fff;border-bottom:1px solid #d0d7de;padding:18px 28px}
h1{margin:0 0 4px;font-size:22px}
h1 code,.meta code{font-family:"DejaVu Sans Mono",monospace;font-size:.9em}
.meta{margin:0;color:#59636e}
.exit{display:inline-block;margin:10px 0 0;padding:4px 10px;border-radius:6px;color:#fff;font-weight:bold}
.tally{list-style:none;margin:10px 0 0;padding:0;display:flex;flex-wrap:wrap;gap:14px}
.tally li{display:flex;align-items:center;gap:6px}
.dot{display:inline-block;width:12px;height:12px;border-radius:50%}
.alert{margin:10px 0 0;padding:8px 12px;border-radius:6px;background:#ffebe9;border:1px solid #cf222e}
main{padding:18px 28px;display:flex;flex-direction:column;gap:18px}
.policy{background:#fff;border:1px solid #d0d7de;border-left:8px solid;border-radius:8px;padding:14px 20px}
.head{display:flex;align-items:center;gap:12px;flex-wrap:wrap}
h2{margin:0;font-size:19px}
.verdict{padding:3px 12px;border-radius:999px;color:#fff;font-weight:bold;letter-spacing:.02em;white-space:nowrap}
.cause{color:#59636e}
.where,.context{margin:4px 0 0;color:#59636e}
.summary{margin:12px 0 8px;font-weight:600}
table.bars{width:100%;border-collapse:collapse;table-layout:fixed}
.bars th{width:250px;text-align:left;font-weight:normal;padding:5px 10px 5px 0;vertical-align:middle}
.bars th small{color:#59636e;font-family:"DejaVu Sans Mono",monospace}
.bars td.track{padding:5px 0}
.track div.rail{background:#eaeef2;border-radius:4px;height:22px}
.track div.bar{height:22px;border-radius:4px;background:#8c959f}
.intended .track div.bar{background:#0969da}
.bars td.num{width:190px;text-align:right;font-variant-numeric:tabular-nums;padding-left:10px;white-space:nowrap}
.tag{display:inline-block;margin-left:6px;padding:0 6px;border-radius:4px;background:#ddf4ff;color:#0550ae;font-size:12px}
.tag.disruptive{background:#fff8c5;color:#9a6700}
.figures{display:flex;flex-wrap:wrap;gap:6px 28px;margin:10px 0 0;padding:0;list-style:none;color:#1f2328}
.figures b{font-variant-numeric:tabular-nums}
.old{margin:8px 0 0;padding:6px 10px;border-radius:6px;background:#fff8c5;border:1px solid #d4a72c}
h3{margin:14px 0 4px;font-size:15px}
ul.items{margin:0;padding-left:22px}
ul.items li{margin:2px 0}
.change code{display:block;font-family:"DejaVu Sans Mono",monospace;font-size:.85em;white-space:pre-wrap;color:#59636e}
.diagnosis{margin:12px 0 0;padding:8px 12px;border-radius:6px;background:#f6f8fa;border:1px solid #d0d7de}
.diagnosis h3:first-child{margin-top:0}
.warning{color:#9a6700}
.error{color:#cf222e}
table.overview{width:100%;border-collapse:collapse;background:#fff;border:1px solid #d0d7de;border-radius:8px}
.overview th,.overview td{text-align:left;padding:7px 12px;border-bottom:1px solid #eaeef2;vertical-align:middle}
.overview tbody th{white-space:nowrap}
.overview td.what{min-width:220px}
.overview thead th{font-size:13px;color:#59636e;font-weight:600}
.overview td.split{width:38%}
.stack{display:flex;height:14px;border-radius:4px;overflow:hidden;background:#eaeef2;margin-bottom:3px}
.stack span{display:block;height:14px;background:#8c959f}
.stack span.intended{background:#0969da}
.overview small{color:#59636e}
footer{padding:0 28px 20px;color:#59636e;font-size:13px}
.fleet-view{display:flex;flex-wrap:wrap;gap:18px}
table.fleet{flex:1 1 420px;border-collapse:collapse;background:#fff;border:1px solid #d0d7de;border-radius:8px}
.fleet caption{text-align:left;font-weight:600;padding:0 0 6px}
.fleet th,.fleet td{text-align:left;padding:6px 12px;border-bottom:1px solid #eaeef2;vertical-align:middle}
.fleet td.n{width:40px;text-align:right;font-variant-numeric:tabular-nums}
.fleet td.mix{width:60%}
.fleet .dot{width:9px;height:9px;vertical-align:middle}
.history{margin:10px 0 0}
.history .plots{display:flex;flex-wrap:wrap;gap:8px 36px;margin:8px 0 0}
.history figure{margin:0}
.history figcaption{font-size:12px;color:#59636e}
svg.plot text{font-family:"DejaVu Sans",sans-serif}
.why{margin:8px 0 0;padding:6px 10px;border-radius:6px;background:#fff8c5;border:1px solid #d4a72c}
.change code.del{background:#ffebe9;color:#82071e}
.change code.add{background:#dafbe1;color:#116329}
)css";

}  // namespace pw::report
