#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet page: each policy's history as real runs leave it, and the page Chromium draws of it.

usage: fleet_page_test.py PATHWARDEN PVESIM OUT_DIR
- With pvesim on loopback and the recorded lab guest (pwtest.stand_in: no guest, no network
  namespace), four real runs of the seed's fix (check, reconcile, reconcile, verify): a check
  stores nothing; the policy's stored result keeps one history point per other run, oldest first, \
each with the run's id, finish
  time and verdict as its report says, and the intended share and throughput of a run that
  probed; `report --html --runs 2` plots only the last two; --runs out of range, or with
  --input, is refused with a clear message.
- The fleet: the real stored result copied to six more policies on three nodes and two NAS
  (a trunking case found wrong-path, rolled back, then fixed; drift with its fstab diff; a
  failed precondition with its reason; a guest that could not be observed), each with 24 runs
  of history. `report --html` draws the page; headless Chromium screenshots it to
  OUT_DIR/fleet.png; the test finds every plot by its area colour (#f1f8ff, used nowhere else)
  and checks that each is plot-sized and has its line (blue) and dots (verdict colours) drawn,
  that a red wrong-path dot and a green verified dot are on the plots, and that the fleet
  tables' stacked bars are drawn in the verdict colours. OUT_DIR/fleet.html stays for a look.
"""
import copy
import json
import os
import re
import stat
import tempfile

from pwtest import policies
from pwtest.offline_controller import PVESIM_ARGS
from pwtest.pvesim_process import Pvesim
from pwtest.screenshot import colour_count, decode_png, regions, screenshot
from pwtest.script import check, test_main
from pwtest.stand_in import STAND_IN_STATE, stand_in_controller

WIDTH, HEIGHT = 1200, 4200
# Colours of src/report (html_report.cpp, svg_plot.cpp).
PLOT_AREA = (0xF1, 0xF8, 0xFF)
LINE = (0x09, 0x69, 0xDA)
GREEN, RED, AMBER = (0x1A, 0x7F, 0x37), (0xCF, 0x22, 0x2E), (0x9A, 0x67, 0x00)
# svg_plot.cpp: 280 x 60 plot areas.
PLOT_W, PLOT_H = 280, 60  # the area, right of the labels


def report_of(r, what):
    check(r.stdout.strip().startswith("{"), f"{what}: exit {r.returncode}, no JSON report\n{r.stderr}")
    return json.loads(r.stdout)


def history_of(state_dir, policy):
    with open(os.path.join(state_dir, "results", policy + ".json")) as f:
        return json.load(f)


def runs(pattern, start_hour=0):
    """24 history points: pattern(i) → (verdict, share, throughput) per run, an hour apart."""
    out = []
    for i in range(24):
        verdict, share, rate = pattern(i)
        point = {"finished_at": f"2026-12-0{1 + (start_hour + i) // 24}T{(start_hour + i) % 24:02d}:00:00.000Z",
                 "run_id": f"r{i}", "verdict": verdict}
        if share is not None:
            point["intended_share"] = share
        if rate is not None:
            point["throughput_bytes_per_second"] = rate
        out.append(point)
    return out


def fleet(real, drift_planned):
    """Six more stored results, each the real one with another name, place, verdict and history;
    the drift's planned steps are the real check's, its fstab line before as an older vers=4.1 one."""
    planned = copy.deepcopy(drift_planned)
    for step in planned:
        if step["action"] == "change-fstab":
            step["before"] = step["after"].replace("vers=3,nconnect=8", "vers=4.1")

    def entry(policy, node, nas, verdict, history, **details):
        e = copy.deepcopy(real)
        e["policy"], e["verdict"], e["history"] = policy, verdict, history
        e["details"].update(policy=policy, node=node, nas=nas, verdict=verdict, **details)
        return e

    fixed_at = 15  # the trunking case: wrong-path until the fix, then verified
    return [
        entry("a-movies-trunking", "pve1", "nas1.lab", "verified",
              runs(lambda i: ("wrong-path", 0.01 + 0.002 * (i % 3), 9.6e7) if i < fixed_at - 1 else
                   ("rolled-back", 0.02, 9.4e7) if i == fixed_at - 1 else
                   ("verified", 0.985 + 0.001 * (i % 4), 1.08e9 + 2e7 * (i % 3)))),
        entry("b-backups", "pve2", "nas2.lab", "drift",
              runs(lambda i: ("verified", 0.99, 6.1e8 + 1e7 * (i % 5)) if i < 20 else ("drift", None, None)),
              changes=[], planned=planned, verification=None),
        entry("c-photos", "pve2", "nas1.lab", "precondition-failed",
              runs(lambda i: ("verified", 0.97, 5e8) if i < 22 else ("precondition-failed", None, None)),
              changes=[], verification=None,
              errors=["guest photo-vm: the NAS address 203.0.113.10 is not reachable from the guest "
                      "(ping: 100% loss)"]),
        entry("d-media-2", "pve3", "nas2.lab", "unobserved",
              runs(lambda i: ("verified", 0.96 + 0.01 * (i % 2), 7e8) if i % 6 else ("unobserved", None, None)),
              changes=[], verification=None, errors=["guest media-2: SSH: connection timed out"]),
        entry("e-scratch", "pve3", "nas1.lab", "verified",
              runs(lambda i: ("verified", 0.99, 3e8 + 4e7 * (i % 6)))),
        entry("f-archive", "pve1", "nas2.lab", "converged",
              runs(lambda i: ("converged" if i % 4 else "verified", None if i % 4 else 0.99,
                              None if i % 4 else 2.2e8))),
    ]


def write_private(path, document):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w") as f:
        json.dump(document, f)


def main(binary, pvesim, out):
    binary, out = os.path.abspath(binary), os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pw-fleet-") as work, Pvesim(pvesim, STAND_IN_STATE, PVESIM_ARGS) as sim:
        ctl = stand_in_controller(binary, sim, work)
        pol = os.path.join(work, "policies")
        policies.write(pol, "movies.yaml", policies.seed_fix("movies-10g", 101, "media-vm", queues=8))

        # Real runs: a check stores nothing; every other run leaves one point in the policy's history.
        r = ctl.run("reconcile", pol, "--check", "--output", "json")
        check(r.returncode == 3 and not os.path.exists(os.path.join(ctl.state_dir, "results", "movies-10g.json")),
              f"reconcile --check: exit {r.returncode}, or it stored a result\n{r.stderr}")
        drift_planned = report_of(r, "reconcile --check")["policies"][0]["planned"]
        reports = []
        for args, codes in ((["reconcile", pol], (2,)), (["reconcile", pol], (0,)), (["verify", pol, "--probe"], (0,))):
            r = ctl.run(*args, "--output", "json")
            check(r.returncode in codes, f"{args}: exit {r.returncode}\n{r.stderr}")
            reports.append(report_of(r, f"{args}"))
        stored = history_of(ctl.state_dir, "movies-10g")
        check(stored["details"]["nas"] == policies.NAS_10G, f"the stored result's nas: {stored['details'].get('nas')}")
        history = stored["history"]
        check(len(history) == 3, f"3 runs, {len(history)} history points: {history}")
        for point, rep in zip(history, reports):
            p = rep["policies"][0]
            check(point["run_id"] == rep["run_id"] and point["finished_at"] == rep["finished_at"]
                  and point["verdict"] == p["verdict"],
                  f"history point {point} is not its run's ({rep['run_id']}, {p['verdict']})")
            v = p["verification"] or {}
            check(point.get("intended_share") == v.get("intended_share")
                  and point.get("throughput_bytes_per_second") == v.get("throughput_bytes_per_second"),
                  f"history point {point}: the run's share/throughput are "
                  f"{v.get('intended_share')}/{v.get('throughput_bytes_per_second')}")
        check(history[0]["verdict"] == "verified" and 0.5 < history[0]["intended_share"] <= 1
              and history[0]["throughput_bytes_per_second"] > 0, f"the fix's point: {history[0]}")
        check(history[1]["verdict"] == "converged" and "intended_share" not in history[1],
              f"the converged point: {history[1]}")
        check(history[2]["verdict"] == "verified" and history[2]
              ["intended_share"] > 0.5, f"verify's point: {history[2]}")

        page = os.path.join(work, "two.html")
        r = ctl.run("report", "--html", page, "--runs", "2")
        check(r.returncode == 0, f"report --runs 2: exit {r.returncode}\n{r.stderr}")
        check(stat.S_IMODE(os.stat(page).st_mode) == 0o644, "the page is written 0644, to be served or mailed")
        with open(page) as f:
            html = f.read()
        check(re.search(r"last 2 runs: [^<]* \((just now|\d+ s ago)\)</figcaption>", html),
              "the history says how long ago its last run was")
        check("aria-label=\"verdicts of the last 2 runs, oldest first\"" in html and
              f"last 2 runs: {history[1]['finished_at']} → {history[2]['finished_at']}" in html,
              "report --runs 2 does not plot the last two runs")
        for bad, message in ((["--runs", "0"], "--runs '0' is not a number from 1 to 100"),
                             (["--runs", "many"], "--runs 'many' is not a number from 1 to 100"),
                             (["--runs", "3", "--input", page],
                              "--runs draws the stored history: it does not go with --input")):
            r = ctl.run("report", "--html", os.path.join(work, "x.html"), *bad)
            check(r.returncode == 1 and message in r.stderr, f"report {bad}: exit {r.returncode}\n{r.stderr}")

        # The fleet: the real result and six copies placed elsewhere, each with 24 runs.
        for e in fleet(stored, drift_planned):
            write_private(os.path.join(ctl.state_dir, "results", e["policy"] + ".json"), e)
        page = os.path.join(out, "fleet.html")
        r = ctl.run("report", "--html", page)
        check(r.returncode == 0 and "(7 policies)" in r.stdout,
              f"report --html: exit {r.returncode}\n{r.stdout}{r.stderr}")
        with open(page) as f:
            html = f.read()
        n_plots = html.count('<svg class="plot"')
        check(n_plots == 14, f"{n_plots} plots, want 2 for each of 7 policies")
        check("http:" not in html and "https:" not in html, "the page names a URL")
        check("<b>Why:</b> guest photo-vm: the NAS address 203.0.113.10 is not reachable" in html,
              "no reason for c-photos")
        fstab = next(c for c in drift_planned if c["action"] == "change-fstab")
        check("<h3>Drift: what a run would change</h3>" in html and
              f'<code class="add">+ {fstab["after"]}</code>' in html and '<code class="del">- ' in html,
              "b-backups' drift is not shown as its fstab diff")
        check("<caption>By NAS</caption>" in html and "<tr><th>nas1.lab</th><td class=\"n\">3</td>" in html,
              "the fleet by NAS does not count nas1.lab's 3 policies")

    png = os.path.join(out, "fleet.png")
    if os.path.exists(png):
        os.unlink(png)
    with tempfile.TemporaryDirectory(prefix="pw-chromium-") as work:
        screenshot(page, png, work, WIDTH, HEIGHT)
    with open(png, "rb") as f:
        width, height, rows = decode_png(f.read())
    check((width, height) == (WIDTH, HEIGHT), f"screenshot is {width}x{height}")

    plots = [b for b in regions(rows, PLOT_AREA) if b[2] - b[0] > 20 and b[3] - b[1] > 20]
    sizes = sorted({(b[2] - b[0], b[3] - b[1]) for b in plots})
    print(f"{png}: {len(plots)} plots drawn, sizes {sizes}")
    check(len(plots) >= 8, f"only {len(plots)} plots on the screenshot (want at least 8 of the 14 within {HEIGHT} px)")
    red_dots = green_dots = lines = 0
    for b in plots:
        w, h = b[2] - b[0], b[3] - b[1]
        # The axis line near the bottom cuts off the area's last rows: 50 to 60 rows are found.
        check(abs(w - PLOT_W) <= 3 and PLOT_H - 10 <= h <= PLOT_H + 2,
              f"a plot area is {w}x{h} at {b[:2]}, want {PLOT_W}x{PLOT_H}")
        # The dots in verdict colours, the line between them (none where runs between had no
        # figure: f-archive's converged runs leave its share plot single dots).
        line = colour_count(rows, LINE, b, tolerance=6)
        red, green, amber = (colour_count(rows, c, b, tolerance=6) for c in (RED, GREEN, AMBER))
        check(line + red + green + amber >= 30,
              f"the plot at {b[:2]}: {line} line, {red + green + amber} dot pixels: not drawn")
        lines += line
        red_dots += red
        green_dots += green
    check(lines >= 40 * len(plots), f"the plots' lines: {lines} pixels over {len(plots)} plots")
    check(red_dots >= 40 and green_dots >= 40, f"verdict dots on the plots: {red_dots} red, {green_dots} green pixels")
    # The fleet tables and the overview come first: their bars and badges in the verdict colours.
    top = (0, 0, WIDTH, 900)
    counts = {name: colour_count(rows, c, top, tolerance=4)
              for name, c in (("green", GREEN), ("red", RED), ("amber", AMBER))}
    print(f"top of the page: {counts}")
    check(all(n >= 300 for n in counts.values()), f"fleet tables' verdict colours barely drawn: {counts}")
    return 0


if __name__ == "__main__":
    test_main(main, __doc__, 3)
