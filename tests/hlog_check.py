"""Reads a metron interval log with the Python HdrHistogram package, an
implementation independent of the Rust crate metron writes it with, and
prints what it found as JSON, for tests/python_check.rs to compare.

Usage: python3 tests/hlog_check.py FILE

Prints: total_count, p50, p99 and max of the untagged histograms added up
(values as the log holds them, microseconds), the counts of each tag,
tags_supported and the package's version. Releases of the package before
0.8 skip tagged lines without a word; the script notices that from the
number of lines it got back and then reports tags_supported false and no
tag counts.
"""

import json
import sys
from importlib import metadata

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

# metron's histogram range: 1 us to 24 hours, 3 significant digits.
LOWEST = 1
HIGHEST = 24 * 60 * 60 * 1000 * 1000
DIGITS = 3


def interval_lines(path):
    """How many histogram lines the file has, tagged or not."""
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip() and line[0] not in '#"')


def read(path):
    reader = HistogramLogReader(path, HdrHistogram(LOWEST, HIGHEST, DIGITS))
    untagged = HdrHistogram(LOWEST, HIGHEST, DIGITS)
    tag_counts = {}
    seen = 0
    while True:
        histogram = reader.get_next_interval_histogram()
        if histogram is None:
            break
        seen += 1
        tag = getattr(histogram, "get_tag", lambda: None)()
        if tag is None:
            untagged.add(histogram)
        else:
            tag_counts[tag] = tag_counts.get(tag, 0) + histogram.get_total_count()
    reader.close()
    return untagged, tag_counts, seen


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: hlog_check.py FILE")
    path = sys.argv[1]
    untagged, tag_counts, seen = read(path)
    tags_supported = seen == interval_lines(path)
    print(json.dumps({
        "total_count": untagged.get_total_count(),
        "p50": untagged.get_value_at_percentile(50.0),
        "p99": untagged.get_value_at_percentile(99.0),
        "max": untagged.get_max_value(),
        "uncorrected_count": tag_counts.get("uncorrected") if tags_supported else None,
        "tag_counts": tag_counts if tags_supported else None,
        "tags_supported": tags_supported,
        "package_version": metadata.version("hdrhistogram"),
    }))


if __name__ == "__main__":
    main()
