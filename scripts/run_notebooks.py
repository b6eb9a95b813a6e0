"""Execute the notebooks top to bottom, headless, and save them with their outputs.

    python scripts/run_notebooks.py                      # every notebook -> runs/notebooks/
    python scripts/run_notebooks.py compare --out DIR    # one of them

Uses ``nbclient`` and ``ipykernel`` (the ``dev`` extra): no Jupyter server, no browser. The
kernel is this very interpreter, so the notebooks see the installed ``roformer_lit``. The
tests run the notebooks through :func:`execute` (``tests/test_notebooks.py``). To open them
interactively instead: ``pip install jupyterlab && jupyter lab notebooks/``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.tool_arguments import OUTPUT_DIRECTORY, ToolParser, run_script, script_parser

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def names() -> list[str]:
    """The shipped notebooks, by name."""
    return sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))


def execute(name: str, workdir: Path, timeout: int = 240):
    """Run ``notebooks/<name>.ipynb`` in ``workdir`` with a kernel of this interpreter; the
    executed notebook (raises nbclient's CellExecutionError at the first failing cell)."""
    import nbclient
    import nbformat

    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    with tempfile.TemporaryDirectory(prefix="roformer-kernel-") as jupyter:
        spec_dir = Path(jupyter) / "kernels" / "python3"
        spec_dir.mkdir(parents=True)
        spec = {
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (roformer-lit)",
            "language": "python",
        }
        (spec_dir / "kernel.json").write_text(json.dumps(spec))
        saved = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "MPLBACKEND")}
        os.environ["JUPYTER_PATH"] = jupyter
        os.environ["MPLBACKEND"] = "Agg"
        try:
            client = nbclient.NotebookClient(
                notebook,
                kernel_name="python3",
                timeout=timeout,
                resources={"metadata": {"path": str(workdir)}},
            )
            client.execute()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    return notebook


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"notebooks to run (default: all of {names()})")
    parser.add_argument(
        "--out",
        type=OUTPUT_DIRECTORY,
        default="runs/notebooks",
        help="where the executed notebooks go",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    unknown = [n for n in args.names if n not in names()]
    if unknown:
        raise ConfigError(f"no notebook {unknown[0]!r}; notebooks: {', '.join(names())}")
    import nbformat

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.names or names():
        with tempfile.TemporaryDirectory(prefix=f"roformer-{name}-") as work:
            notebook = execute(name, Path(work))
        nbformat.write(notebook, out / f"{name}.ipynb")
        print(f"{name}: executed -> {out / f'{name}.ipynb'}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
