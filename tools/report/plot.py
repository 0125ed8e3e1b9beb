#!/usr/bin/python3
"""Draws the report's figures from the spec `dpushard report` writes (plots/figures.json).

Usage: /usr/bin/python3 plot.py SPEC.json RESULTS_DIR

The spec decides everything (series, axes, titles, the modeled/measured note); this
script only draws, one PNG per figure, with matplotlib's Agg backend (no display needed).
`dpushard report` embeds this file and runs it with /usr/bin/python3 (Debian's
python3-matplotlib) unless told otherwise with --python.
"""

import json
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import matplotlib.ticker  # noqa: E402

# A series' colour is the spec's "color" (a strategy's, from the strategy table in
# core/src/plan/strategy_table.cpp); without one, by its color_key.
COLORS = {"baseline": "black"}
OTHER_COLORS = ["tab:purple", "tab:brown", "tab:pink", "tab:olive"]
MARKERS = {"1": "o", "2": "o", "3": "s", "4": "^", "5": "D", "6": "v", "7": "P", "8": "X", "12": "*", "16": "h"}


def color_of(key, assigned):
    if key in COLORS:
        return COLORS[key]
    if key not in assigned:
        assigned[key] = OTHER_COLORS[len(assigned) % len(OTHER_COLORS)]
    return assigned[key]


def draw(figure, results_dir):
    fig, ax = plt.subplots(figsize=(8.0, 4.8))
    assigned = {}
    drawn = 0
    for series in figure["series"]:
        if not series["x"]:
            continue
        ax.plot(
            series["x"],
            series["y"],
            label=series["label"],
            color=series.get("color") or color_of(series.get("color_key", ""), assigned),
            marker=MARKERS.get(series.get("marker_key", ""), "o"),
            linestyle="--" if series.get("dashed") else "-",
            linewidth=1.5,
            markersize=5,
        )
        drawn += 1
    if "hline" in figure:
        ax.axhline(figure["hline"], color="black", linewidth=0.8, linestyle=":")
    if figure.get("xlog"):
        ax.set_xscale("log")
        # Ticks at the measured sizes, as plain numbers ("2", "50"), not powers of ten.
        sizes = sorted({x for s in figure["series"] for x in s["x"]})
        if sizes:
            ax.set_xticks(sizes)
            ax.set_xticklabels(["%g" % float("%.3g" % x) for x in sizes])
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    if figure.get("ylog"):
        ax.set_yscale("log")
    # Wrapped so that they fit the 8-inch figure: about 80 characters of an 11-point title
    # and 130 of the 7-point note fit its width (they ran off its right edge before).
    ax.set_title("\n".join(textwrap.wrap(figure["title"], 80)), fontsize=11)
    ax.set_xlabel(figure["xlabel"])
    ax.set_ylabel(figure["ylabel"])
    ax.grid(True, which="both", linewidth=0.3, alpha=0.6)
    if drawn:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    else:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center")
    note = textwrap.wrap(figure.get("note", ""), 130)
    fig.text(0.01, 0.01, "\n".join(note), fontsize=7, style="italic", va="bottom")
    fig.tight_layout(rect=(0, 0.01 + 0.03 * max(len(note), 1), 1, 1))
    path = os.path.join(results_dir, figure["file"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temp = path + ".tmp.png"
    fig.savefig(temp, dpi=110)
    plt.close(fig)
    os.replace(temp, path)  # a reader never sees half a PNG


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: plot.py SPEC.json RESULTS_DIR\n")
        return 2
    with open(argv[1], encoding="utf-8") as spec_file:
        spec = json.load(spec_file)
    for figure in spec["figures"]:
        draw(figure, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
