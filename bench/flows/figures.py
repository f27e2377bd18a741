#!/usr/bin/env python3
"""Figures of bench/flows.sh from each generator's own report.

  figures.py row TOOL FILE    one tab-separated row from a report:
                              started completed, then per step (login,
                              items, item) count p99 max in ms, then the
                              items step's uncorrected p99 (metron only)
  figures.py table RESULTS    the tables, from the rows flows.sh gathered

What each report gives:
- metron (--json): visits.started and visits.completed; per step
  (endpoints[]) latency (corrected: from when the step was due) and
  uncorrected (from when it was sent), in microseconds.
- Locust (--json-file, written after --stop-timeout let the visits in
  flight finish; the stats CSV is a snapshot from the second before):
  visits started = login requests, completed = item requests that did not
  fail; per step the response_times histogram (ms, Locust's rounding),
  read with Locust's own percentile rule, and max_response_time.
- Artillery (--output): vusers.created, the item step's 200s (its
  metrics-by-endpoint plugin) and its per-step response_time summaries
  (ms).
- the floor (bench/iomodel sleep): requests sent and answered, counted
  here as visits of three requests each; it times nothing.
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in bench/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), ".."))
from figures_common import NAN, fields, med, median_table, ms, print_row

STEPS = ("login", "items", "item")
TOOLS = ("metron", "locust", "locust-fast", "artillery", "floor")
NAMES = {"metron": "metron", "locust": "Locust", "locust-fast": "Locust-fast",
         "artillery": "Artillery", "floor": "floor"}
# The floor's requests per visit: a visit is three requests.
FLOOR_STEPS = 3


def metron_row(path):
    d = json.load(open(path))
    v = d["visits"]
    by = {e["name"]: e for e in d["endpoints"]}
    out = [v["started"], v["completed"]]
    for s in STEPS:
        e = by.get(s)
        if not e or not e["latency"]["count"]:
            out += [0, "nan", "nan"]
            continue
        lat = e["latency"]
        p99 = dict(lat["percentiles"])[99.0]
        out += [lat["count"], p99 / 1000, lat["max"] / 1000]
    e = by.get("items")
    unc = e and e.get("uncorrected")
    out.append(dict(unc["percentiles"])[99.0] / 1000 if unc and unc["count"] else "nan")
    return out


def locust_percentile(times, n, q):
    # locust.stats.calculate_response_time_percentile
    want = int(n * q)
    done = 0
    for t in sorted(times, reverse=True):
        done += times[t]
        if n - done <= want:
            return t
    return 0


def locust_row(path):
    d = {e["name"]: e for e in json.load(open(path))}
    started = d["login"]["num_requests"] if "login" in d else 0
    item = d.get("item")
    completed = item["num_requests"] - item["num_failures"] if item else 0
    out = [started, completed]
    for s in STEPS:
        e = d.get(s)
        if not e or not e["num_requests"]:
            out += [0, "nan", "nan"]
            continue
        times = {int(k): c for k, c in e["response_times"].items()}
        out += [e["num_requests"], locust_percentile(times, e["num_requests"], 0.99),
                e["max_response_time"]]
    return out + ["nan"]


def artillery_row(path):
    a = json.load(open(path))["aggregate"]
    c, s_ = a["counters"], a["summaries"]
    prefix = "plugins.metrics-by-endpoint."
    out = [c.get("vusers.created", 0), c.get(prefix + "item.codes.200", 0)]
    for s in STEPS:
        e = s_.get(prefix + "response_time." + s)
        if not e:
            out += [0, "nan", "nan"]
            continue
        out += [e["count"], e["p99"], e["max"]]
    return out + ["nan"]


def floor_row(path):
    f = json.load(open(path))
    return [f["sent"] // FLOOR_STEPS, f["answered"] // FLOOR_STEPS] + [0, "nan", "nan"] * 3 + ["nan"]


def row(tool, path):
    print_row(tool, path,
              lambda: {"metron": metron_row, "locust": locust_row, "locust-fast": locust_row,
                       "artillery": artillery_row, "floor": floor_row}[tool](path),
              [0, 0] + [0, "nan", "nan"] * 3 + ["nan"])


# A row of RESULTS: scenario rate duration round tool cpu_s, then row()'s.
def load(path):
    rows = []
    for f in fields(path, 17):
        rows.append({
            "scenario": f[0], "rate": float(f[1]), "dur": float(f[2]), "round": f[3],
            "tool": f[4], "cpu": float(f[5]), "started": int(f[6]), "completed": int(f[7]),
            "steps": {s: (int(f[8 + 3 * i]), float(f[9 + 3 * i]), float(f[10 + 3 * i]))
                      for i, s in enumerate(STEPS)},
            "items_unc_p99": float(f[17]) if len(f) > 17 else NAN,
        })
    return rows


def table(path):
    rows = load(path)
    for rate in sorted({r["rate"] for r in rows if r["scenario"] == "rate"}):
        rs = [r for r in rows if r["scenario"] == "rate" and r["rate"] == rate]
        dur = rs[0]["dur"]
        n = len({r["round"] for r in rs})
        print(f"# {rate:g} visits/s asked for {dur:g} s (Locust: {rate * 2:g} users, "
              f"constant_pacing(2)); {n} alternating rounds")
        print(f"{'tool':<12} {'round':>5} {'started':>8} {'completed':>10} {'visits/s':>9} "
              f"{'CPU-s':>7} {'visits/CPU-s':>13}")
        for r in rs:
            print(f"{NAMES[r['tool']]:<12} {r['round']:>5} {r['started']:>8} {r['completed']:>10} "
                  f"{r['started'] / dur:>9.1f} {r['cpu']:>7.2f} "
                  f"{(r['completed'] / r['cpu'] if r['cpu'] else 0):>13.0f}")
        m = {}
        for t in TOOLS:
            tr = [r for r in rs if r["tool"] == t]
            if tr:
                m[t] = {
                    "started": med([r["started"] for r in tr]),
                    "completed": med([r["completed"] for r in tr]),
                    "cpu": med([r["cpu"] for r in tr]),
                    "per_cpu": med([r["completed"] / r["cpu"] for r in tr if r["cpu"]]),
                    "p99": {s: med([r["steps"][s][1] for r in tr]) for s in STEPS},
                }
        tools = [t for t in TOOLS if t in m]
        median_table(28, tools, NAMES, [
            ("  visits asked", lambda t: f"{rate * dur:.0f}"),
            ("  visits started", lambda t: f"{m[t]['started']:.0f}"),
            ("  visits completed", lambda t: f"{m[t]['completed']:.0f}"),
            ("  achieved visits/s", lambda t: f"{m[t]['started'] / dur:.1f}"),
            ("  generator CPU-s", lambda t: f"{m[t]['cpu']:.2f}"),
            ("  visits per CPU-second", lambda t: f"{m[t]['per_cpu']:.0f}"),
        ] + [(f"  {s} p99, ms", lambda t, s=s: ms(m[t]["p99"][s])) for s in STEPS])
        peers = [t for t in tools if t not in ("metron", "floor") and m[t]["per_cpu"]]
        if "metron" in m:
            for t in peers:
                print(f"  metron / {NAMES[t]}, visits per CPU-second: "
                      f"{m['metron']['per_cpu'] / m[t]['per_cpu']:.1f}")
        if "floor" in m:
            for t in peers:
                print(f"  floor / {NAMES[t]}, visits per CPU-second: "
                      f"{m['floor']['per_cpu'] / m[t]['per_cpu']:.1f} "
                      "(the floor: only the system calls each request needs)")
            if "metron" in m and m["metron"]["per_cpu"]:
                print(f"  metron's CPU per visit over the floor's: "
                      f"{m['floor']['per_cpu'] / m['metron']['per_cpu']:.2f}x")
        print()
    st = [r for r in rows if r["scenario"] == "stall"]
    if st:
        r0 = st[0]
        print(f"# stall: {r0['rate']:g} visits/s for {r0['dur']:g} s, the server silent for "
              "1 s once; per step: requests, p99 and max (ms), each as the tool reports it")
        print(f"{'tool':<12} {'started':>8} {'completed':>10}  "
              + "  ".join(f"{s + ' n':>8} {'p99':>6} {'max':>6}" for s in STEPS)
              + f"  {'items p99 uncorr.':>17}")
        for r in st:
            print(f"{NAMES[r['tool']]:<12} {r['started']:>8} {r['completed']:>10}  "
                  + "  ".join(f"{r['steps'][s][0]:>8} {ms(r['steps'][s][1]):>6} "
                              f"{ms(r['steps'][s][2]):>6}" for s in STEPS)
                  + f"  {ms(r['items_unc_p99']):>17}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["row"] and len(sys.argv) == 4:
        row(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["table"] and len(sys.argv) == 3:
        table(sys.argv[2])
    else:
        sys.exit(__doc__)
