# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""The report's pictures: line plots of a run's figures drawn with Debian's matplotlib
(python3-matplotlib) into PNG files beside the report. report.py decides what to draw; this
module only draws it, so a machine without matplotlib still gets every table."""
import os


def available():
    """True when matplotlib can be imported (the report then draws its plots)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def line_plot(path, title, xlabel, ylabel, series, log_y=True):
    """Draws `series` (each (label, xs, ys); a None y leaves that point out) against a log x axis
    into the PNG `path`. Returns the file's name, for the report to link."""
    import matplotlib
    matplotlib.use("Agg")  # files only: no display on a build machine
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for label, xs, ys in series:
        points = [(x, y) for x, y in zip(xs, ys) if y is not None]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    # The file's metadata would carry matplotlib's version and the time: keep the image a
    # function of the figures alone, so an unchanged run leaves it unchanged.
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return os.path.basename(path)
