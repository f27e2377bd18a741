#!/usr/bin/env python3
"""Figures of bench/ws.sh from each generator's own report.

  figures.py row TOOL FILE ASKED
                              one tab-separated row from a report: messages
                              asked (ASKED, as ws.sh planned them), sent, answered,
                              achieved messages/s, then the latency each tool
                              reports: p99 and max of a message (metron:
                              from when it was due; uncorrected: from when it
                              was sent) and p99 and max of a connection's
                              whole session (Artillery), in ms, "nan" where
                              the tool reports none; last, when its first
                              message went (ms since the epoch)
  figures.py table RESULTS [STARTUP_CPU]
                              the tables, from the rows ws.sh gathered;
                              with STARTUP_CPU (Artillery's CPU-s for a run
                              of one message per connection), also the
                              figures with that start-up left out

What each report gives:
- metron (--json): counters.due (messages due by the schedule),
  never_sent, completed (echoes received), requests_per_sec (completed
  messages over the run's window), latency.corrected and
  latency.uncorrected in microseconds.
- Artillery (--output), its ws engine: the counters
  websocket.messages_sent and websocket.messages_received, and
  vusers.session_length (ms, a connection's life from its arrival to its
  last step's end). It times no message: there is no per-message latency
  in its report. Its achieved rate here is messages answered over the
  mean session length (the connections run side by side, all opened
  within the first second).
- the floor (bench/iomodel sleep): asked, sent, answered, and the seconds
  from its first due time to its last echo; it times no message.
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in bench/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), ".."))
from figures_common import NAN, fields, med, median_table, ms, print_row

TOOLS = ("metron", "artillery", "floor")
NAMES = {"metron": "metron", "artillery": "Artillery", "floor": "floor"}


def pct(lat, q):
    return dict((p, v) for p, v in lat["percentiles"])[q] / 1000


def metron_row(path, asked):
    d = json.load(open(path))
    c = d["counters"]
    lat, unc = d["latency"]["corrected"], d["latency"]["uncorrected"]
    return [asked, c["due"] - c["never_sent"], c["completed"], d["requests_per_sec"],
            pct(lat, 99.0) if lat["count"] else NAN, lat["max"] / 1000 if lat["count"] else NAN,
            pct(unc, 99.0) if unc["count"] else NAN, unc["max"] / 1000 if unc["count"] else NAN,
            NAN, NAN, d["window_start_ms"]]


def artillery_row(path, asked):
    a = json.load(open(path))["aggregate"]
    c = a["counters"]
    sess = a["summaries"].get("vusers.session_length")
    got = c.get("websocket.messages_received", 0)
    rate = got / (sess["mean"] / 1000) if sess and sess["mean"] else 0
    return [asked, c.get("websocket.messages_sent", 0), got, rate, NAN, NAN, NAN, NAN,
            sess["p99"] if sess else NAN, sess["max"] if sess else NAN,
            a.get("firstCounterAt", 0)]


def floor_row(path, asked):
    f = json.load(open(path))
    return [asked, f["sent"], f["answered"], f["answered"] / f["seconds"] if f["seconds"] else 0,
            NAN, NAN, NAN, NAN, NAN, NAN, f["first_ms"]]


def row(tool, path, asked):
    make = {"metron": metron_row, "artillery": artillery_row, "floor": floor_row}[tool]
    print_row(tool, path, lambda: make(path, int(asked)),
              [int(asked), 0, 0, 0] + [NAN] * 6 + [0])


# A row of RESULTS: scenario rate duration connections round tool
# stall_ms (when the server's stall began, ms since the epoch; 0 without
# one) cpu_s (user + system) user_s, then row()'s.
def load(path):
    rows = []
    for f in fields(path, 20):
        rows.append({
            "scenario": f[0], "rate": float(f[1]), "dur": float(f[2]), "conns": int(f[3]),
            "round": f[4], "tool": f[5], "stall_ms": float(f[6]), "cpu": float(f[7]),
            "user": float(f[8]), "asked": int(f[9]), "sent": int(f[10]),
            "answered": int(f[11]), "achieved": float(f[12]), "p99": float(f[13]),
            "max": float(f[14]), "unc_p99": float(f[15]), "unc_max": float(f[16]),
            "sess_p99": float(f[17]), "sess_max": float(f[18]), "first_ms": float(f[19]),
        })
    return rows


def per_cpu(r):
    return r["answered"] / r["cpu"] if r["cpu"] else NAN


def table(path, startup_cpu):
    rows = load(path)
    for rate in sorted({r["rate"] for r in rows if r["scenario"] == "rate"}):
        rs = [r for r in rows if r["scenario"] == "rate" and r["rate"] == rate]
        dur, conns = rs[0]["dur"], rs[0]["conns"]
        n = len({r["round"] for r in rs})
        print(f"# {rate:g} messages/s asked for {dur:g} s over {conns} connections "
              f"({rate / conns:g}/s each); {n} alternating rounds")
        print(f"{'tool':<10} {'round':>5} {'asked':>8} {'sent':>8} {'answered':>9} "
              f"{'msgs/s':>8} {'CPU-s':>7} {'(user)':>7} {'msgs/CPU-s':>11}")
        for r in rs:
            print(f"{NAMES[r['tool']]:<10} {r['round']:>5} {r['asked']:>8} {r['sent']:>8} "
                  f"{r['answered']:>9} {r['achieved']:>8.0f} {r['cpu']:>7.2f} {r['user']:>7.2f} "
                  f"{per_cpu(r):>11.0f}")
        m = {}
        for t in TOOLS:
            tr = [r for r in rs if r["tool"] == t]
            if tr:
                m[t] = {k: med([r[k] for r in tr])
                        for k in ("asked", "sent", "answered", "achieved", "cpu", "user")}
                m[t]["per_cpu"] = med([per_cpu(r) for r in tr])
                m[t]["per_user"] = med([r["answered"] / r["user"] for r in tr if r["user"]])
        tools = [t for t in TOOLS if t in m]
        lines = [
            ("  messages asked", lambda t: f"{m[t]['asked']:.0f}"),
            ("  messages sent", lambda t: f"{m[t]['sent']:.0f}"),
            ("  messages answered", lambda t: f"{m[t]['answered']:.0f}"),
            ("  achieved messages/s", lambda t: f"{m[t]['achieved']:.0f}"),
            ("  achieved / asked rate", lambda t: f"{m[t]['achieved'] / rate:.0%}"),
            ("  generator CPU-s", lambda t: f"{m[t]['cpu']:.2f}"),
            ("  messages per CPU-second", lambda t: f"{m[t]['per_cpu']:.0f}"),
        ]
        if startup_cpu == startup_cpu and "artillery" in m:
            beyond = m["artillery"]["cpu"] - startup_cpu
            lines.append(("  the same, start-up left out",
                          lambda t: f"{m[t]['per_cpu']:.0f}" if t != "artillery" else
                          (f"{m[t]['answered'] / beyond:.0f}" if beyond > 0 else "n/a")))
        lines += [
            ("  generator user CPU-s", lambda t: f"{m[t]['user']:.2f}"),
            ("  messages per user CPU-second", lambda t: f"{m[t]['per_user']:.0f}"),
        ]
        median_table(30, tools, NAMES, lines)
        if "metron" in m and "artillery" in m and m["artillery"]["per_cpu"]:
            print(f"  metron / Artillery, messages per CPU-second: "
                  f"{m['metron']['per_cpu'] / m['artillery']['per_cpu']:.1f}")
            beyond = m["artillery"]["cpu"] - startup_cpu
            if startup_cpu == startup_cpu and beyond > 0:
                print(f"  the same with Artillery's start-up ({startup_cpu:.2f} CPU-s) left out: "
                      f"{m['metron']['per_cpu'] / (m['artillery']['answered'] / beyond):.1f}")
            if m["artillery"]["per_user"]:
                print(f"  metron / Artillery, messages per user CPU-second (system time left out): "
                      f"{m['metron']['per_user'] / m['artillery']['per_user']:.1f}")
        if "floor" in m and "artillery" in m and m["artillery"]["per_cpu"]:
            print(f"  floor / Artillery, messages per CPU-second: "
                  f"{m['floor']['per_cpu'] / m['artillery']['per_cpu']:.1f} "
                  "(the floor: only the system calls each message needs)")
        if "floor" in m and "metron" in m and m["metron"]["per_cpu"]:
            print(f"  metron's CPU per message over the floor's: "
                  f"{m['floor']['per_cpu'] / m['metron']['per_cpu']:.2f}x")
        print()
    st = [r for r in rows if r["scenario"] == "stall"]
    if st:
        r0 = st[0]
        print(f"# stall: {r0['rate']:g} messages/s for {r0['dur']:g} s over {r0['conns']} "
              "connections, the server silent for 1 s once; what each tool reports (ms)")
        print(f"{'tool':<10} {'asked':>7} {'sent':>7} {'answered':>9} {'msgs/s':>7}  "
              f"{'msg p99':>8} {'max':>6}  {'uncorr. p99':>11} {'max':>6}  "
              f"{'session p99':>11} {'max':>6}  {'stall at':>8}")
        for r in st:
            print(f"{NAMES[r['tool']]:<10} {r['asked']:>7} {r['sent']:>7} {r['answered']:>9} "
                  f"{r['achieved']:>7.0f}  {ms(r['p99']):>8} {ms(r['max']):>6}  "
                  f"{ms(r['unc_p99']):>11} {ms(r['unc_max']):>6}  "
                  f"{ms(r['sess_p99']):>11} {ms(r['sess_max']):>6}  "
                  f"{(r['stall_ms'] - r['first_ms']) / 1000:>7.1f}s")
        print("  (stall at: when the stall began, from the start of the tool's traffic: "
              "metron's run, Artillery's first arrival)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["row"] and len(sys.argv) == 5:
        row(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1:2] == ["table"] and len(sys.argv) in (3, 4):
        table(sys.argv[2], float(sys.argv[3]) if len(sys.argv) == 4 else NAN)
    else:
        sys.exit(__doc__)
