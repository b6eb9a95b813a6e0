"""``extrapolate``'s baseline rows average over data seeds alone.

Checkpoints whose runs evaluated other data -- another tokenizer, corpus content, masking
rate, validation share, number of blocks or sequences, symbol count -- had their
``baseline:*`` rows averaged into one row, the baseline of neither run (exit 0). Each
case evaluates two checkpoints: one run's, and the same run's (or a second run's) with one
data setting changed; the oracle is each checkpoint's baseline evaluated alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from cli_helpers import fit_args, probe_fit_args

from roformer_lit.commands import main
from roformer_lit.data.corpus import load_default_corpus
from roformer_lit.module import MaskedLM
from roformer_lit.results.extrapolate import (
    RunSettings,
    evaluate_checkpoint,
    open_checkpoint,
    run_settings,
)
from roformer_lit.results.extrapolate_rows import CheckpointRows, baseline_rows

LENGTH = 32  # a corpus block of the tiny runs' training length
PROBE_LENGTH = 8


def _fit(workdir: Path, args: list[str]) -> Path:
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main(args) == 0
    (ckpt,) = workdir.glob("runs/*/*/checkpoints/last.ckpt")
    return ckpt


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Tiny runs: a corpus run, one with another tokenizer, one on other files, two
    position-task runs."""
    made = tmp_path_factory.mktemp
    text = made("text") / "small.txt"
    text.write_text("\n\n".join(load_default_corpus()[:300]) + "\n", encoding="utf-8")
    files = fit_args("rope.yaml", 2, "--data.train_files", str(text), "--data.val_fraction", "0.2")
    return {
        "files": _fit(made("files"), files),
        "corpus": _fit(made("corpus"), fit_args("rope.yaml", 2)),
        "vocab": _fit(made("vocab"), fit_args("rope.yaml", 2, "--data.vocab_size", "1000")),
        "probe": _fit(made("probe"), probe_fit_args("copy", 2, 2, 4)),
        "symbols": _fit(
            made("symbols"), probe_fit_args("copy", 2, 2, 4, "--data.probe_symbols", "24")
        ),
    }


Change = Callable[[RunSettings], RunSettings]


def _data(**changed: Any) -> Change:
    return lambda s: dataclasses.replace(s, data={**s.data, **changed})


def _same(s: RunSettings) -> RunSettings:
    return s


#: (base run, other run, change to the other's settings, whether the rows stay apart)
CASES = {
    "corpus: data seed only": ("corpus", "corpus", _data(seed=1), False),
    "corpus: tokenizer": ("corpus", "vocab", _same, True),
    "corpus: masking rate": ("corpus", "corpus", _data(mlm_probability=0.3), True),
    "corpus: validation share": ("corpus", "corpus", _data(val_fraction=0.1), True),
    "corpus: files": ("corpus", "files", _same, True),
    # the baselines follow the data evaluated: a checkpoint that recorded other data, now
    # evaluated on these, is scored on the same sequences
    "corpus: recorded data identity only": (
        "corpus",
        "corpus",
        lambda s: dataclasses.replace(s, data_identity="f" * 64),
        False,
    ),
    "corpus: validation blocks": (
        "corpus",
        "corpus",
        lambda s: dataclasses.replace(s, max_val_blocks=8),
        True,
    ),
    "corpus: training length (tokens evaluated)": (
        "corpus",
        "corpus",
        lambda s: dataclasses.replace(s, train_length=64),
        True,
    ),
    "probe: data seed only": ("probe", "probe", _data(seed=3), False),
    "probe: trained lengths only": ("probe", "probe", _data(probe_min_length=2), False),
    "probe: symbols": ("probe", "symbols", _same, True),
    "probe: validation sequences": (
        "probe",
        "probe",
        lambda s: dataclasses.replace(s, max_val_blocks=8),
        True,
    ),
}


def _rows(ckpt: Path, settings: RunSettings, length: int) -> CheckpointRows:
    model = MaskedLM.from_checkpoint(ckpt)
    cells = evaluate_checkpoint(model, settings, [length])
    task = settings.data.get("probe")
    return CheckpointRows(str(ckpt), None, [c.scores(task) for c in cells])


def _values(rows: list[tuple[str, int, str, float]]) -> dict[tuple[str, str], float]:
    return {(name, metric): value for name, _, metric, value in rows}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_baselines_of_other_data_are_never_averaged(case: str, runs: dict[str, Path]) -> None:
    base, other, change, apart = CASES[case]
    length = PROBE_LENGTH if base == "probe" else LENGTH
    first = _rows(runs[base], run_settings(runs[base], open_checkpoint(runs[base])), length)
    settings = change(run_settings(runs[other], open_checkpoint(runs[other])))
    second = _rows(runs[other], settings, length)
    alone = [_values(baseline_rows([rows])) for rows in (first, second)]
    together = _values(baseline_rows([first, second]))
    assert len(together) == len(alone[0]) * (2 if apart else 1), together
    if apart:
        # every row is one run's own baseline, and the two runs' rows have two names
        assert sorted(together.values()) == sorted([*alone[0].values(), *alone[1].values()])
        assert set(alone[0]) == set(alone[1])  # alone, a run's rows carry no label
        assert not set(together) & set(alone[0]), together  # together, each is labelled
    else:  # the seeds of one data set: one row, their mean
        assert set(together) == set(alone[0])
        for key, value in together.items():
            assert value == pytest.approx((alone[0][key] + alone[1][key]) / 2, abs=1e-12)


def test_the_command_names_each_data_s_baseline(runs: dict[str, Path], capsys) -> None:
    """Through the command line: two runs of two tokenizers print two labelled
    ``baseline:unigram`` rows, each the value its run prints alone."""
    alone = {}
    for key in ("corpus", "vocab"):
        capsys.readouterr()
        assert main(["extrapolate", str(runs[key]), "--lengths", str(LENGTH)]) == 0
        (row,) = [r for r in capsys.readouterr().out.splitlines() if "baseline:unigram" in r]
        alone[key] = row.split("|")[-2].strip()
    assert main(["extrapolate", str(runs["corpus"]), str(runs["vocab"]), "--lengths", "32"]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines() if "| baseline:unigram" in r]
    assert len(rows) == 2 and all("vocab_size=" in r for r in rows), rows
    assert sorted(r.split("|")[-2].strip() for r in rows) == sorted(alone.values())


def _copy(ckpt: Path, where: Path, seed: int, identity: str | None) -> Path:
    """``ckpt`` as another seed's checkpoint (data ``seed``), recording data ``identity``
    (None: the same as ``ckpt``'s), outside any run."""
    checkpoint = torch.load(ckpt, map_location="cpu", weights_only=True)
    checkpoint["datamodule_hyper_parameters"]["seed"] = seed
    if identity is not None:
        checkpoint["CorpusDataModule"]["data_identity"] = identity
    torch.save(checkpoint, where)
    return where


@pytest.mark.parametrize(
    ("identity", "seeds_of_one_variant"), [(None, True), ("f" * 64, False)], ids=["same", "other"]
)
def test_checkpoints_of_other_data_are_never_seeds_of_one_variant(
    runs: dict[str, Path], tmp_path: Path, capsys, identity: str | None, seeds_of_one_variant: bool
) -> None:
    """Two checkpoints of one setting but trained on other data (their recorded data
    identities differ, as ``compare`` tells runs apart) were averaged in the table over
    seeds; and one evaluated on other data than it trained on said nothing, where
    ``validate`` says so in a ``note:`` line."""
    copy = _copy(runs["corpus"], tmp_path / "copy.ckpt", 1, identity)
    capsys.readouterr()
    assert main(["extrapolate", str(runs["corpus"]), str(copy), "--lengths", str(LENGTH)]) == 0
    out, err = capsys.readouterr()
    assert ("Over seeds" in out) == seeds_of_one_variant, out
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    if seeds_of_one_variant:
        assert notes == [], notes
    else:
        (note,) = notes
        assert str(copy) in note and "ffffffff" in note and "other data" in note, note


#: A plugin's position task that calls itself ``copy`` (``ProbeTask.name``, the author's
#: string): every answer is symbol 0, so its baselines are not copy's.
ZEROS_NAMED_COPY = """
import numpy as np

from roformer_lit.data.probes.tasks import ProbeTask


def _zeros(rng, batch, n, symbols, hint=0.0):
    inputs = rng.integers(0, symbols, size=(batch, n), dtype=np.int64)
    return inputs, np.zeros_like(inputs), np.ones(n, dtype=bool)


COPY = ProbeTask("copy", _zeros)
"""


def test_a_plugin_task_named_like_a_built_in_keeps_its_own_baselines(
    runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """extrapolate keyed its baseline rows by the task's own name field: a run of a plugin
    task named 'copy' (zeros_task:COPY), evaluated with a run of the built-in copy on
    sequences of the same settings, printed copy's baseline rows for both and dropped its
    own (seen: majority 0.194 / 0.000 where the plugin's run alone prints 0.125 / 0.125).
    The rows are keyed by the name each run recorded."""
    (tmp_path / "zeros_task.py").write_text(ZEROS_NAMED_COPY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "run").mkdir()
    plugin = _fit(
        tmp_path / "run", probe_fit_args("copy", 2, 2, 4, "--data.probe", "zeros_task:COPY")
    )

    def majority(*ckpts: Path) -> list[str]:
        capsys.readouterr()
        assert main(["extrapolate", *map(str, ckpts), "--lengths", str(PROBE_LENGTH)]) == 0
        out = capsys.readouterr().out.splitlines()
        return sorted(r.split("|")[-2].strip() for r in out if "| baseline:majority" in r)

    alone = [*majority(runs["probe"]), *majority(plugin)]
    assert len(alone) == 2 and alone[0] != alone[1], alone  # two tasks, two baselines
    assert majority(runs["probe"], plugin) == sorted(alone)
