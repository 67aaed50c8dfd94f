# SPDX-License-Identifier: GPL-3.0-or-later
"""Headless Chromium screenshots of pathwarden's HTML pages, and a PNG decoder to check them.

Debian's chromium draws the page (no network: the page has no external assets and the flags
turn background traffic off); decode_png reads the screenshot with zlib alone, so a test can
count the pixels of each colour the page's CSS and SVG use. Run with Debian's /usr/bin/python3.
"""
import os
import shutil
import struct
import subprocess
import tempfile
import zlib

from .script import check


def decode_png(data):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG, non-interlaced."""
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = ihdr
    check(depth == 8 and colour in (2, 6) and interlace == 0, f"unexpected PNG format {ihdr}")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        start = y * (stride + 1)
        ftype, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        else:
            check(ftype == 0, f"bad PNG filter {ftype} in row {y}")
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def near(pixel, colour, tolerance=4):
    return all(abs(p - c) <= tolerance for p, c in zip(pixel, colour))


def screenshot(html, png, workdir, width, height):
    chromium = shutil.which("chromium")
    check(chromium is not None, "chromium is not installed (tests/packages.txt lists it)")
    profile = tempfile.mkdtemp(prefix="profile-", dir=workdir)
    env = dict(os.environ, HOME=workdir)
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--hide-scrollbars", f"--user-data-dir={profile}", f"--screenshot={png}",
           f"--window-size={width},{height}", "file://" + html]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180, env=env)
    check(proc.returncode == 0 and os.path.exists(png),
          f"chromium exited {proc.returncode} without a screenshot:\n{proc.stderr[-2000:]}")


def colour_count(rows, colour, box=None, tolerance=4):
    """Pixels near `colour` in rows, or only inside box = (x0, y0, x1, y1), ends excluded."""
    x0, y0, x1, y1 = box or (0, 0, len(rows[0]), len(rows))
    return sum(1 for y in range(y0, y1) for px in rows[y][x0:x1] if near(px, colour, tolerance))


def regions(rows, colour, tolerance=0):
    """Bounding boxes (x0, y0, x1, y1) of the 4-connected areas of `colour`, merged where they
    touch or overlap (a line drawn across an area splits it; the box is the whole area's)."""
    height, width = len(rows), len(rows[0])
    colour = tuple(colour)
    mask = [bytearray(1 if (px == colour if tolerance == 0 else near(px, colour, tolerance)) else 0 for px in row)
            for row in rows]
    boxes = []
    for y in range(height):
        row = mask[y]
        x = row.find(1)
        while x != -1:
            stack, box = [(x, y)], [x, y, x + 1, y + 1]
            row[x] = 0
            while stack:
                cx, cy = stack.pop()
                box = [min(box[0], cx), min(box[1], cy), max(box[2], cx + 1), max(box[3], cy + 1)]
                for nx, ny in ((cx + 1, cy), (cx - 1, cy), (cx, cy + 1), (cx, cy - 1)):
                    if 0 <= nx < width and 0 <= ny < height and mask[ny][nx]:
                        mask[ny][nx] = 0
                        stack.append((nx, ny))
            boxes.append(box)
            x = row.find(1, x + 1)
    merged = True
    while merged:
        merged = False
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                a, b = boxes[i], boxes[j]
                if a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]:
                    boxes[i] = [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])]
                    del boxes[j]
                    merged = True
                    break
            if merged:
                break
    return [tuple(b) for b in boxes]
