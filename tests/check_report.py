#!/usr/bin/env python3
"""The evolve report in a browser: sample runs rendered by RENDER_BINARY, opened in headless
Chromium, and the drawn page (its DOM after the script ran) checked against the data.

Four pages: a full run (3 islands, 60 evaluations of every outcome, a 4-step lineage,
re-timed figures); the same run with schedules holding "</script>" and "<!--<script>",
which must come out as text and break nothing; an empty run; a run with nothing correct.
Each must draw without a JavaScript error (neither on Chromium's console nor in the
page's own #errors), with one point per evaluation that has a speedup, one grid per
island and one cell per occupied cell, one lineage entry per step and one failure row
per verdict category.
SKIPs (exit 77) without /usr/bin/chromium.

With --page, one report written by `ksmith evolve` is checked the same way against
the data it holds (one point per evaluation with a speedup, every cell, step and
failure row).

Usage: check_report.py RENDER_BINARY
       check_report.py --page REPORT.html
"""
import html.parser
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

CHROMIUM = "/usr/bin/chromium"
FEATURES = [{"name": "kernels", "edges": [2, 3, 4]}, {"name": "max_group_size", "edges": [32, 64, 128, 256, 512]}]
VERDICTS = {
    "incorrect": "incorrect at N=5, D=37: y[2, 10] is 0.118 for 0.0931",
    "flagged": "keeps a previous answer: given new inputs with the last outputs left in place, y[0, 19] was 0.999",
    "failed": "build: error: use of undeclared identifier 'dj'",
    "refused": "refused: bind y.n group.x twice",
    "timeout": "timed out after 30 s",
}
STEPS = ["bind y.n group.x", "split y.d 512 -> dj t", "bind t local.x", "cache_read x local", "vectorize t 4",
         "unroll dj", "reorder dj t"]


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def sample_run(schedule_extra=""):
    """A run's data as `ksmith evolve` writes it, from a fixed seed."""
    rng = random.Random(7)
    ident = lambda: "%016x" % rng.getrandbits(64)
    statuses = ["correct"] * 6 + ["incorrect", "incorrect", "flagged", "failed", "refused", "timeout"]
    evaluations, best_in = [], {}
    for seq in range(1, 61):
        island = seq % 3
        status = statuses[rng.randrange(len(statuses))] if seq > 3 else "correct"
        schedule = "\n".join(rng.sample(STEPS, rng.randint(1, 4)))
        if seq % 17 == 0:
            schedule += "\n" + schedule_extra if schedule_extra else ""
        e = {"seq": seq, "id": ident(), "island": island, "proposer": rng.choice(["mutator", "llm"]),
             "iteration": seq // 3 + 1, "parent": ident(), "status": status,
             "verdict": "correct" if status == "correct" else VERDICTS[status], "speedup": None,
             "median_ms": None, "cell": None, "schedule": schedule, "seconds": round(rng.uniform(0.5, 4), 2)}
        if status in ("correct", "flagged"):  # a flagged candidate is timed too, and drawn hollow
            e["speedup"] = round(rng.lognormvariate(seq / 60, 0.3), 3)
            e["median_ms"] = round(2.31 / e["speedup"], 4)
            e["cell"] = [rng.randrange(4), rng.randrange(6)]
        if status == "correct":
            key = (island, tuple(e["cell"]))
            if key not in best_in or best_in[key]["speedup"] < e["speedup"]:
                best_in[key] = e
        evaluations.append(e)
    islands = [{"island": i, "cells": [{"cell": list(cell), "id": e["id"], "speedup": e["speedup"],
                                        "schedule": e["schedule"], "migrant": False}
                                       for (isl, cell), e in sorted(best_in.items()) if isl == i]} for i in range(3)]
    champion = max((e for e in evaluations if e["status"] == "correct"), key=lambda e: e["speedup"])
    islands[(champion["island"] + 1) % 3]["cells"].append(
        {"cell": [3, 5], "id": champion["id"], "speedup": champion["speedup"], "schedule": champion["schedule"],
         "migrant": True})
    lineage = [{"id": ident(), "speedup": 1.0, "schedule": "", "added": [], "removed": [], "proposer": "naive"}]
    for k, (added, removed, speedup) in enumerate([(["bind y.n group.x"], [], 1.8),
                                                  (["split y.d 512 -> dj t", "bind t local.x"], [], 2.6),
                                                  (["vectorize t 4" + schedule_extra], ["bind t local.x"],
                                                   champion["speedup"])]):
        lineage.append({"id": champion["id"] if k == 2 else ident(), "speedup": speedup,
                        "schedule": "\n".join(added), "added": added, "removed": removed,
                        "proposer": "mutator", "gain": round(speedup / lineage[-1]["speedup"], 3)})
    top = sorted((e for e in evaluations if e["status"] == "correct"), key=lambda e: -e["speedup"])[:5]
    retimed = [{"id": e["id"], "speedup": e["speedup"], "retimed_speedup": round(e["speedup"] * 0.98, 3),
                "retimed_cv": 0.004 + 0.001 * k, "median_ms": e["median_ms"]} for k, e in enumerate(top)]
    failures = []
    for category in ["incorrect", "flagged", "failed", "refused", "timeout"]:
        count = sum(e["status"] == category for e in evaluations)
        if count:
            failures.append({"category": category, "count": count, "example": VERDICTS[category] + schedule_extra})
    return {
        "run": {"id": 1, "spec": "examples/softmax.ks", "kernel": "softmax",
                "device": "NVIDIA H100 80GB HBM3 (opencl:0)", "target": "opencl", "sizes": "N=256, D=4096",
                "status": "finished", "started": "2026-11-23 15:40:02", "seconds": 291.5, "evaluations": 60,
                "budget": 60, "proposers": {"mutator": 0.7, "llm": 0.3}, "seed": 1, "baseline_ms": 2.31},
        "features": FEATURES, "evaluations": evaluations, "islands": islands,
        "best": {"id": champion["id"], "speedup": champion["speedup"], "retimed_speedup": retimed[0]["retimed_speedup"],
                 "retimed_cv": 0.004, "schedule": champion["schedule"] + schedule_extra},
        "lineage": lineage, "retimed": retimed, "failures": failures,
        "device_time": {"evaluations": 60, "median_s": 0.031,
                        "by_phase": {"timed.time": 1.2, "compare.run": 0.4, "check.run": 0.2, "timed.build": 9.5}},
    }


def empty_run():
    return {"run": {"id": 2, "spec": "examples/softmax.ks", "kernel": "softmax", "device": "pocl (opencl:0)",
                    "target": "opencl", "sizes": "N=256, D=4096", "status": "running", "started": "2026-11-23 16:00:00",
                    "seconds": 0.0, "evaluations": 0, "budget": 200, "proposers": {"mutator": 1.0}, "seed": 1,
                    "baseline_ms": None},
            "features": FEATURES, "evaluations": [], "islands": [], "best": None, "lineage": [], "retimed": [],
            "failures": []}


def no_correct_run():
    """Evaluations, islands and failures, but nothing correct: no point, cell or lineage to draw."""
    data = empty_run()
    data["run"].update(status="finished", evaluations=12, budget=12, seconds=40.2)
    data["evaluations"] = [{"seq": seq, "id": "%04x" % seq, "island": seq % 2, "proposer": "mutator",
                            "iteration": seq, "parent": None, "status": status, "verdict": VERDICTS[status],
                            "speedup": None, "median_ms": None, "cell": None, "schedule": "bind y.n group.x",
                            "seconds": 1.0}
                           for seq, status in enumerate(["failed", "refused", "incorrect"] * 4, start=1)]
    data["islands"] = [{"island": 0, "cells": []}, {"island": 1, "cells": []}]
    data["failures"] = [{"category": c, "count": 4, "example": VERDICTS[c]} for c in ["failed", "refused", "incorrect"]]
    return data


class Page(html.parser.HTMLParser):
    """What the checks need from the drawn page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.points, self.misses, self.steps, self.failure_rows, self.grids = 0, 0, 0, [], {}
        self.ids, self.texts, self.body_points, self.errors = set(), [], None, ""
        self._island, self._in_errors, self._row, self._cell_text = None, False, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "body":
            self.body_points = a.get("data-points")
        elif tag == "svg" and "grid" in classes:
            self._island = a.get("data-island")
            self.grids[self._island] = 0
        elif tag == "circle" and "eval" in classes:
            self.points += 1
        elif "miss" in classes:
            self.misses += 1
        elif tag == "rect" and "cell" in classes:
            if self._island is None:
                fail("a cell outside an island's grid")
            self.grids[self._island] += 1
        elif tag == "li" and "step" in classes:
            self.steps += 1
        elif tag == "tr" and "failure" in classes:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell_text = ""
        elif tag == "pre" and a.get("id") == "errors":
            self._in_errors = True

    def handle_endtag(self, tag):
        if tag == "svg":
            self._island = None
        elif tag == "td" and self._row is not None:
            self._row.append(self._cell_text.strip())
            self._cell_text = None
        elif tag == "tr" and self._row is not None:
            self.failure_rows.append(self._row)
            self._row = None
        elif tag == "pre":
            self._in_errors = False

    def handle_data(self, text):
        self.texts.append(text)
        if self._in_errors:
            self.errors += text
        if self._cell_text is not None:
            self._cell_text += text


def open_in_chromium(render, data, work, name):
    source, page = os.path.join(work, name + ".json"), os.path.join(work, name + ".html")
    with open(source, "w") as f:
        json.dump(data, f)
    r = subprocess.run([render, source, page], capture_output=True, text=True)
    if r.returncode:
        fail(f"{render} exited with {r.returncode}: {r.stderr.strip()}")
    return open_page(page, work, name)


def page_data(page):
    """The run's data a report holds in its <script type="application/json" id="data">."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    start = text.index('id="data">') + len('id="data">')
    return json.loads(text[start:text.index("</script>", start)])


def open_page(page, work, name):
    with open(page, encoding="utf-8") as f:
        text = f.read()
    if "http://" in text.replace("http://www.w3.org/2000/svg", "") or "https://" in text:
        fail(f"{name}: the page refers to the network")
    profile = tempfile.mkdtemp(prefix="profile-", dir=work)
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
               "--dump-dom", "file://" + page]
    try:
        r = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail(f"{name}: chromium did not finish in 120 s")
    if r.returncode:
        fail(f"{name}: chromium exited with {r.returncode}:\n{r.stderr[-3000:]}")
    console = [line for line in r.stderr.splitlines() if "CONSOLE" in line]
    if console:
        fail(f"{name}: JavaScript console messages:\n" + "\n".join(console))
    dom = Page()
    dom.feed(r.stdout)
    dom.close()
    if "progress" not in dom.ids:
        fail(f"{name}: chromium's DOM is not the report:\n{r.stdout[:2000]}")
    if dom.errors.strip():
        fail(f"{name}: the page reported errors:\n{dom.errors}")
    return dom


def check(dom, data, name):
    drawn = [e for e in data["evaluations"] if isinstance(e.get("speedup"), (int, float)) and e["speedup"] > 0]
    if dom.points != len(drawn):
        fail(f"{name}: {dom.points} points drawn for {len(drawn)} evaluations with a speedup")
    if dom.points + dom.misses != len(data["evaluations"]):
        fail(f"{name}: {dom.points} points and {dom.misses} ticks drawn for {len(data['evaluations'])} evaluations")
    if dom.body_points != str(len(drawn)):
        fail(f"{name}: body data-points is {dom.body_points}, expected {len(drawn)}")
    islands = {str(i["island"]): len(i["cells"]) for i in data["islands"]}
    if dom.grids != islands:
        fail(f"{name}: cells drawn per island {dom.grids}, expected {islands}")
    if dom.steps != len(data["lineage"]):
        fail(f"{name}: {dom.steps} lineage entries for {len(data['lineage'])} steps")
    categories = [row[0] for row in dom.failure_rows]
    expected = [f["category"] for f in data["failures"]]
    if categories != expected:
        fail(f"{name}: failure rows {categories}, expected {expected}")
    for row, f in zip(dom.failure_rows, data["failures"]):
        if row[1] != str(f["count"]):
            fail(f"{name}: {f['category']} counted {row[1]}, expected {f['count']}")


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[1] != "--page"):
        print(__doc__)
        sys.exit(2)
    if not os.path.exists(CHROMIUM):
        print("SKIP: chromium not installed")
        sys.exit(77)
    if sys.argv[1] == "--page":
        work = tempfile.mkdtemp(prefix="check_report-")
        try:
            page = os.path.abspath(sys.argv[2])
            data = page_data(page)
            dom = open_page(page, work, os.path.basename(page))
            check(dom, data, page)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"PASS: {page}: {dom.points} points for {len(data['evaluations'])} evaluations, cells per island "
              f"{dom.grids}, {dom.steps} lineage steps, failure rows {[row[0] for row in dom.failure_rows]}")
        return
    render = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="check_report-")
    try:
        data = sample_run()
        dom = open_in_chromium(render, data, work, "run")
        check(dom, data, "run")
        text = "".join(dom.texts)
        best = data["best"]
        v = best["retimed_speedup"]
        figure = f"{v:.0f}x" if v >= 100 else f"{v:.1f}x" if v >= 10 else f"{v:.2f}x"
        if figure not in text or "re-timed" not in text:
            fail(f"run: the header does not show the re-timed best {figure}")
        if "0.031 s an evaluation (median): timed.time 67%, compare.run 22%, check.run 11%" not in text:
            fail("run: the header does not show where the device's time went")
        print(f"run: {dom.points} points, cells per island {dom.grids}, {dom.steps} lineage steps, "
              f"failure rows {[row[0] for row in dom.failure_rows]}")

        hostile = "</script><b id=\"injected\">x</b><!--<script>"
        data = sample_run(hostile)
        dom = open_in_chromium(render, data, work, "hostile")
        check(dom, data, "hostile")
        if "injected" in dom.ids:
            fail("hostile: a schedule's text became markup")
        if not any(hostile in t for t in dom.texts):
            fail("hostile: the schedule text with </script> is not on the page")
        print(f"hostile: {dom.points} points, the schedule text shown as text")

        data = empty_run()
        dom = open_in_chromium(render, data, work, "empty")
        check(dom, data, "empty")
        print("empty: no points, grids, steps or failures, no errors")

        data = no_correct_run()
        dom = open_in_chromium(render, data, work, "none-correct")
        check(dom, data, "none-correct")
        print(f"none-correct: empty grids {dom.grids}, failure rows {[row[0] for row in dom.failure_rows]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
