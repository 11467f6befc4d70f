#!/usr/bin/python3
"""Draws the chart of an `edgellm eval` report: eval-chart.py REPORT.json [OUT.png]

Left: every metric of the report, base and model side by side (one model: its bars alone).
Right (with a base): the change of each changed case's score (ROUGE-L F, sentence BLEU, F1 or
correct), sorted, so a quantization that breaks a few cases shows as a tail of red bars.
OUT.png defaults to the report's name with .png. Uses Debian's python3-matplotlib, installed
through scripts/install-deps.sh --eval-tools when missing (needs root or sudo).
"""
import json
import os
import subprocess
import sys


def import_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        deps = os.path.join(os.path.dirname(os.path.abspath(__file__)), "install-deps.sh")
        print("eval-chart: installing python3-matplotlib (%s --eval-tools)" % deps, file=sys.stderr)
        subprocess.run(["bash", deps, "--eval-tools"], check=True)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) == 3 else os.path.splitext(path)[0] + ".png"
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    plt = import_matplotlib()
    models = report["models"]
    names = [os.path.basename(m["path"]) for m in models]
    metrics = list(models[-1]["metrics"].keys())
    has_base = "comparison" in report
    fig, axes = plt.subplots(1, 2 if has_base else 1, figsize=(12 if has_base else 7, 4.5), squeeze=False)
    ax = axes[0][0]
    width = 0.8 / len(models)
    colors = ["#7f8c8d", "#2e86de"]
    for k, m in enumerate(models):
        xs = [i + (k - (len(models) - 1) / 2) * width for i in range(len(metrics))]
        vals = [m["metrics"][name]["value"] for name in metrics]
        bars = ax.bar(xs, vals, width, label="%s (%s)" % (names[k], m["role"]), color=colors[k % 2])
        for b, v in zip(bars, vals):
            ax.text(b.get_x() + b.get_width() / 2, v, "%.3f" % v, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels(["%s\n(%d)" % (n, models[-1]["metrics"][n]["cases"]) for n in metrics], fontsize=8)
    top = max([m["metrics"][n]["value"] for m in models for n in metrics] + [0.0])
    ax.set_ylim(0, 1.08 if top > 0.4 else max(0.05, 1.3 * top))  # small scores stay readable
    ax.set_ylabel("score (0-1)")
    ax.set_title("task scores, %d cases (%s)" % (report["task_file"]["cases"], os.path.basename(report["task_file"]["path"])),
                 fontsize=9)
    ax.legend(fontsize=8, loc="upper right")
    if has_base:
        ax2 = axes[0][1]
        changed = report["comparison"]["changed_cases"]
        deltas = [c["delta"] for c in changed]
        ax2.bar(range(len(deltas)), deltas, color=["#c0392b" if d < 0 else "#27ae60" if d > 0 else "#95a5a6" for d in deltas])
        ax2.axhline(0, color="black", linewidth=0.6)
        ax2.set_xlabel("changed cases, sorted by score change (%d of %d outputs differ)"
                       % (len(changed), report["task_file"]["cases"]), fontsize=8)
        ax2.set_ylabel("model - base (primary score)")
        span = max([abs(d) for d in deltas] + [0.0])
        ax2.set_ylim(*((-1.05, 1.05) if span > 0.4 else (-max(0.05, 1.3 * span), max(0.05, 1.3 * span))))
        worse = sum(1 for d in deltas if d < 0)
        better = sum(1 for d in deltas if d > 0)
        ax2.set_title("per-case change: %d lower, %d higher, %d equal" % (worse, better, len(deltas) - worse - better),
                      fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("eval-chart: wrote %s" % out, file=sys.stderr)


if __name__ == "__main__":
    main()
