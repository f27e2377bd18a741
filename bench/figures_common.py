"""What bench/flows/figures.py and bench/ws/figures.py share.

- print_row: one row from a tool's report, tab-separated, or the empty
  row when the report cannot be read;
- fields: the tab-separated rows a script gathered;
- med, ms: a median that leaves NaN out, and milliseconds as the tables
  print them;
- median_table: the medians, one column a tool.

Each figures.py finds it in its own folder's parent (sys.path), so it runs
from any working directory.
"""

import statistics
import sys

NAN = float("nan")


def print_row(tool, path, make, empty):
    """Prints make()'s row; when the report is missing or not the shape
    expected, says so on stderr and prints empty in its place."""
    try:
        r = make()
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{tool}: no figures from {path}: {e}", file=sys.stderr)
        r = empty
    print("\t".join(str(x) for x in r))


def fields(path, least):
    """The fields of each line of path that has at least `least` of them."""
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) >= least:
            yield f


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else NAN


def ms(x):
    if x != x:
        return "n/a"
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def median_table(width, tools, names, lines):
    """A "median" heading over each tool's name, then one line per (label,
    f): the label in `width` characters, then f(tool) for each tool."""
    print(f"{'median':<{width}}" + "".join(f"{names[t]:>12}" for t in tools))
    for label, f in lines:
        print(f"{label:<{width}}" + "".join(f"{f(t):>12}" for t in tools))
