"""A new run that took the name ``<stem>-k`` because runs named ``<stem>`` exist: the
note naming those that stopped before their end (a Ctrl-C, a preemption), so a user who
reran ``fit`` to continue one learns it is a new run and how to continue the old one."""

from __future__ import annotations

from pathlib import Path

from roformer_lit.training.checkpoint_io import at_its_end


def unfinished_namesakes(experiment_dir: str | Path, stem: str, version: str) -> list[Path]:
    """The runs ``stem``, ``stem-2``, ... in ``experiment_dir`` other than ``version`` whose
    ``checkpoints/last.ckpt`` is not at its run's end (:func:`at_its_end`)."""
    parent = Path(experiment_dir)
    if version == stem:
        return []
    suffixed = [p.name for p in parent.glob(f"{stem}-*") if p.name[len(stem) + 1 :].isdigit()]
    names = [stem, *sorted(suffixed, key=lambda n: int(n[len(stem) + 1 :]))]
    found = []
    for name in names:
        last = parent / name / "checkpoints" / "last.ckpt"
        if name != version and last.is_file() and not at_its_end(last):
            found.append(parent / name)
    return found


def namesakes_note(experiment_dir: str | Path, stem: str, version: str) -> str | None:
    """One ``note:`` line's text for :func:`unfinished_namesakes`, or None when there are none."""
    runs = unfinished_namesakes(experiment_dir, stem, version)
    if not runs:
        return None
    last = runs[-1] / "checkpoints" / "last.ckpt"
    names = ", ".join(str(r) for r in runs)
    which = "it" if len(runs) == 1 else "the last of them"
    return (
        f"this is a new run, {version}: {names} stopped before {'its' if len(runs) == 1 else 'their'} "
        f"end; to continue {which} instead, run fit with --ckpt_path {last}"
    )
