#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""`pathwarden report --html` rendered by headless Chromium: the page is drawn, with its colours.

usage: html_screenshot_test.py PATHWARDEN OUT_DIR
Renders tests/report/data/trunking-and-fix.json (a rolled-back trunking case and a verified fix)
to OUT_DIR/report.html with the real CLI, screenshots it with Debian's chromium (no network: the
page has no external assets and the flags turn background traffic off) to OUT_DIR/report.png,
decodes the PNG with zlib and checks that the page is not blank and that the verdict colours
(red rolled-back, green verified) and both bar colours (intended NIC blue, other NIC grey) are
drawn in blocks, not just specks.
"""
import os
import subprocess
import sys
import tempfile

from pwtest.screenshot import decode_png, near, screenshot
from pwtest.script import Failure, check

HERE = os.path.dirname(os.path.realpath(__file__))
REPORT = os.path.join(HERE, "data", "trunking-and-fix.json")
WIDTH, HEIGHT = 1200, 900

# Colours of src/report/html_report.cpp.
RED = (0xCF, 0x22, 0x2E)    # rolled-back badge, card border, exit-code banner
GREEN = (0x1A, 0x7F, 0x37)  # verified badge
BLUE = (0x09, 0x69, 0xDA)   # bar of the intended NIC
GREY = (0x8C, 0x95, 0x9F)   # bar of another NIC


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    binary, out = sys.argv[1], os.path.abspath(sys.argv[2])
    os.makedirs(out, exist_ok=True)
    html, png = os.path.join(out, "report.html"), os.path.join(out, "report.png")
    for f in (html, png):
        if os.path.exists(f):
            os.unlink(f)
    proc = subprocess.run([binary, "report", "--input", REPORT, "--html", html],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    check(proc.returncode == 0, f"pathwarden report exited {proc.returncode}:\n{proc.stderr}")
    with tempfile.TemporaryDirectory(prefix="pw-chromium-") as work:
        screenshot(html, png, work, WIDTH, HEIGHT)
    with open(png, "rb") as f:
        width, height, rows = decode_png(f.read())
    check((width, height) == (WIDTH, HEIGHT), f"screenshot is {width}x{height}, want {WIDTH}x{HEIGHT}")

    counts = {"red": 0, "green": 0, "blue": 0, "grey": 0, "non-white": 0}
    colours = set()
    for row in rows:
        for px in row:
            colours.add(px)
            if px[0] < 240 or px[1] < 240 or px[2] < 240:
                counts["non-white"] += 1
            for name, c in (("red", RED), ("green", GREEN), ("blue", BLUE), ("grey", GREY)):
                if near(px, c):
                    counts[name] += 1
    total = width * height
    print(f"{png}: {counts}, {len(colours)} distinct colours")
    # Not blank: text and blocks cover part of the page, and text is anti-aliased.
    check(counts["non-white"] > total * 0.05, f"page looks blank: only {counts['non-white']} non-white pixels")
    check(len(colours) > 200, f"page looks blank: {len(colours)} distinct colours")
    # A verdict badge is about 90x22 pixels less its white text; the legend dot alone is ~110.
    check(counts["red"] > 2000, f"rolled-back red barely drawn: {counts['red']} pixels")
    check(counts["green"] > 800, f"verified green badge not drawn: {counts['green']} pixels")
    check(counts["blue"] > 2000, f"intended NIC's blue bar not drawn: {counts['blue']} pixels")
    check(counts["grey"] > 2000, f"other NIC's grey bar not drawn: {counts['grey']} pixels")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"FAIL: {e}")
        sys.exit(1)
