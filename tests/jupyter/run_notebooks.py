"""Runs examples/*.ipynb end to end with the real tools — `nbconvert --execute`
and `papermill` (with a parameter) — and checks the outputs' mime types.
Usage: run_notebooks.py OUT_DIR (JUPYTER_DATA_DIR points at the kernelspec)."""

import base64
import glob
import os
import subprocess
import sys

import nbformat

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def check_common(path, nb):
    errors = [o for o in outputs(nb) if o.output_type == "error"]
    assert not errors, f"{path}: error outputs: {errors}"
    for o in outputs(nb):
        if o.output_type in ("execute_result", "display_data"):
            assert "text/plain" in o.data, f"{path}: output without text/plain: {o}"


def check_tour(path, nb, steps):
    outs = outputs(nb)
    results = [o for o in outs if o.output_type == "execute_result"]
    assert len(results) >= 6, f"{path}: expected results, got {outs}"
    html = [o for o in results if "text/html" in o.data]
    assert html and "<table" in html[0].data["text/html"], f"{path}: no HTML array table"
    assert any("…" in o.data["text/html"] for o in html), f"{path}: big array not summarised"
    plots = [o for o in outs if o.output_type == "display_data" and "image/png" in o.data]
    assert len(plots) == 1, f"{path}: expected one plot, got {plots}"
    assert "image/svg+xml" in plots[0].data, f"{path}: the plot has no SVG"
    png = base64.b64decode(plots[0].data["image/png"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n"), f"{path}: the plot is not a PNG"
    displays = [o for o in outs if o.output_type == "display_data" and "image/png" not in o.data]
    assert len(displays) == 1, f"{path}: expected one display, got {displays}"
    # update_display replaced the first softmax by the reversed one
    assert displays[0].data["text/plain"].split("\n")[1].startswith("[0.66"), displays[0].data
    text = "".join(o.text for o in outs if o.output_type == "stream")
    assert f"loss after {steps} steps:" in text, f"{path}: {text!r}"
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), f"{path}: execution counts {counts}"


def check_sharding(path, nb, steps):
    outs = outputs(nb)
    grids = [o for o in outs if o.output_type == "execute_result"
             and "background:" in o.data.get("text/html", "")]
    # w (64x128 over 'model'), the pmap result and the shard_map result
    assert len(grids) >= 3, f"{path}: expected coloured device grids, got {outs}"
    assert any("f32[64,128@model]" in o.data["text/plain"] for o in grids), grids
    assert any("cpu 0,4" in o.data["text/plain"] for o in grids), "replicated blocks"
    text = "".join(o.text for o in outs if o.output_type == "stream")
    assert f"loss after {steps} steps:" in text, f"{path}: {text!r}"
    assert "equal to one device: True" in text, f"{path}: {text!r}"
    assert "sharded arrays" in text, f"{path}: no mesh report: {text!r}"
    assert "psum over 'model' (4 devices)" in text, f"{path}: no plan: {text!r}"
    assert "sharded jit equal to one device: True" in text, f"{path}: {text!r}"


def check_strategies(path, nb, steps):
    outs = outputs(nb)
    tables = [o for o in outs if o.output_type == "execute_result" and "<table" in o.data.get("text/html", "")]
    assert tables and "tp+dp" in tables[0].data["text/plain"], f"{path}: no table of rules: {outs}"
    text = "".join(o.text for o in outs if o.output_type == "stream")
    assert text.count("sharded jit on Mesh('data': 2, 'model': 4)") == 3, f"{path}: {text!r}"
    assert "auto: " in text and "estimate ms" in text, f"{path}: no candidates: {text!r}"
    assert f"after {steps} steps" in text and "equal to one device: True" in text, f"{path}: {text!r}"


def main():
    out_dir = sys.argv[1]
    notebooks = sorted(glob.glob(os.path.join(ROOT, "examples", "*.ipynb")))
    assert notebooks, "no example notebooks"
    for src in notebooks:
        name = os.path.splitext(os.path.basename(src))[0]
        executed = os.path.join(out_dir, f"{name}.nbconvert.ipynb")
        subprocess.run(
            [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
             "--ExecutePreprocessor.timeout=120", "--output-dir", out_dir,
             "--output", f"{name}.nbconvert", src],
            check=True,
        )
        nb = nbformat.read(executed, as_version=4)
        check_common(executed, nb)
        if name == "tour":
            check_tour(executed, nb, steps=20)
        if name == "sharding":
            check_sharding(executed, nb, steps=3)
        if name == "strategies":
            check_strategies(executed, nb, steps=3)
        # papermill, with a parameter injected (arr parses Python's assignment syntax)
        pm_out = os.path.join(out_dir, f"{name}.papermill.ipynb")
        subprocess.run(
            [sys.executable, "-m", "papermill", "--no-progress-bar", "-k", "arr",
             "--language", "python", "-p", "steps", "5", src, pm_out],
            check=True,
        )
        nb = nbformat.read(pm_out, as_version=4)
        check_common(pm_out, nb)
        if name == "tour":
            check_tour(pm_out, nb, steps=5)
        if name == "sharding":
            check_sharding(pm_out, nb, steps=5)
        if name == "strategies":
            check_strategies(pm_out, nb, steps=5)
        print(f"ok: {name}.ipynb (nbconvert, papermill)")


if __name__ == "__main__":
    main()
