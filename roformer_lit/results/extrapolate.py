"""``python -m roformer_lit extrapolate CKPT [CKPT ...] --lengths 128 512 1024``.

Evaluates trained checkpoints at sequence lengths they may never have seen and prints a
markdown table of masked-token ``val/loss`` per evaluation length, one row per checkpoint.

What is evaluated, per checkpoint: the validation split of the data it was trained on (the
data settings saved in the checkpoint; its run's ``config.yaml`` for older checkpoints; the
bundled corpus otherwise), re-packed into blocks of each length ``L`` with the run's fixed
validation masking (seeded per block by the data ``seed``), and the same text at every
length: the first ``T`` tokens of the split, i.e. its first ``T // L`` blocks, where ``T``
is what the run's own validation evaluates, ``max_val_blocks * max_length`` (the whole
split if the run did not cap it), unless ``--tokens`` says otherwise. The loss is computed
by the model's own validation step under a Lightning ``Trainer`` in the run's precision, so

    at L = the training length:  extrapolate == validate  (same blocks, masking, reduction)

and the table's cell equals ``validate --ckpt_path CKPT``'s ``val/loss`` with the run's
settings. A line on stderr per checkpoint says which blocks were evaluated at each length.
A scheme that cannot encode a length (``learned`` past its table) gets "refused" in its
cell; a validation split shorter than one block of ``L`` tokens gets "n/a". When two or
more checkpoints differ only in their seeds, a second table gives each such variant's
mean ± sample std per length (:mod:`roformer_lit.results.extrapolate_seeds`).

A probe run (``data.probe``, :mod:`roformer_lit.data.probes`) is evaluated at input lengths:
for it each ``--lengths`` value is the task's input length ``n`` (``--lengths 16 32 64``
after training to ``probe_max_length`` 16 is 1x, 2x, 4x), on its validation sequences of
that length (the run's number of them, fixed by its seed; ``--tokens`` caps them), and its
cells are answer-token accuracy / exact match (``val/acc`` / ``val/exact``) where the
corpus rows have ``val/loss``. At ``n = probe_max_length`` the cell is ``validate``'s.

Randomized positions: a run trained with ``data.random_positions`` ``R`` is evaluated at
the ordinary positions ``0 .. L-1`` unless ``--positions random`` (or the run's own
``data.validation_positions: random``): then every validation sequence carries sorted
distinct positions drawn from ``[0, R)``, fixed per (seed, length, sequence), as training
drew them -- the protocol of Ruoss et al. 2023, whose evaluation draws positions the way
their training does. A length whose sequences are longer than ``R`` is "n/a" there.

``--position_kwargs '{scaling: {type: yarn, factor: 4}}'`` evaluates each checkpoint with
its position scheme's options overridden (merged into the checkpoint's own
``position_kwargs``): the model is rebuilt with them and given the checkpoint's weights,
e.g. RoPE's frequency scaling at evaluation time, without retraining. Options that would
change the weights' shapes are refused (the weights do not fit). With a layer plan an
option acts on the layers it reaches (of the model's scheme, not setting it themselves),
``{global: {base: 500}}`` on a type's own, and one that reaches no layer is refused
(:mod:`roformer_lit.results.extrapolate_overrides`).

Beside the runs (:mod:`roformer_lit.results.extrapolate_rows`): each row names its
checkpoint's step; rows ``baseline:<rule>`` give the position task's trivial baselines
(:mod:`roformer_lit.data.probes.baselines`) or a corpus run's unigram loss, scored on the
same sequences; a probe cell says ``solved`` (exact match >= ``--solved``, default 0.9) or
``> baseline``; the table over seeds gives ``mean [95 % t-interval]``. ``--csv FILE``
writes every cell as long rows ``name,length,metric,value,split`` (``split``: the
``--split`` evaluated); ``--budget FILE`` the same with each checkpoint's ``step``
(``name,step,length,metric,value,split``). An existing file either names is replaced,
said in one ``note:`` line before anything is evaluated. ``--split test`` evaluates a
position task on held-out sequences of another generator stream (what one reports after
choosing on validation). A problem that makes several lengths "n/a" is one
``warning:`` line naming them.

Checkpoints are loaded with ``weights_only=True``: a file holding pickled objects other
than tensors and plain data is refused, never unpickled. A checkpoint that cannot be used
(missing, truncated, not a checkpoint, refused, its data unreadable) is skipped with one
``warning:`` line while others remain, and is one ``error:`` line (exit 2) otherwise.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lightning.pytorch import Trainer
from tokenizers import Tokenizer

from roformer_lit.commands.checkpoint_data import current_data_identity, other_data
from roformer_lit.data.corpus_module import CorpusDataModule
from roformer_lit.data.datamodule import VALIDATION_POSITIONS, PretrainDataModule
from roformer_lit.data.modules import data_module, resolve
from roformer_lit.data.probe_module import PROBE_VAL_SEQUENCES
from roformer_lit.data.probes import ProbeTask, ProbeValidation, baseline_scores, probe_task
from roformer_lit.data.stored_tokenizer import checkpoint_tokenizer, run_tokenizer_given
from roformer_lit.errors import ConfigError
from roformer_lit.module import MaskedLM
from roformer_lit.results.compare.variants import DATA_KEY
from roformer_lit.results.extrapolate_overrides import apply_overrides
from roformer_lit.results.extrapolate_rows import (
    SOLVED_AT,
    CellScores,
    CheckpointRows,
    baseline_table_rows,
    to_csv,
    verdict,
)
from roformer_lit.results.extrapolate_seeds import CheckpointLosses, seed_table
from roformer_lit.run_files import (
    RunFileError,
    expand_arguments,
    has_glob,
    note_replaced,
    output_target,
    read_yaml_mapping,
    warn,
)
from roformer_lit.safe_input import YAMLBombError, missing_path_hint, safe_yaml_load
from roformer_lit.tool_arguments import (
    LENGTH,
    MAX_LENGTH,
    OUTPUT_FILE,
    ToolParser,
    integer,
    real,
)
from roformer_lit.training.checkpoint_io import PRETRAINING, read_checkpoint
from roformer_lit.training.data_identity import checkpoint_data_identity

#: Data-module arguments extrapolate sets itself (per length; the positions per ``--positions``),
#: or that change no result.
OVERRIDDEN = (
    "max_length",
    "batch_size",
    "max_val_blocks",
    "max_train_blocks",
    "num_workers",
    "random_positions",
    "validation_positions",
)


@dataclass
class RunSettings:
    """How a checkpoint's run validated: its data, block length, batch size, cap, precision."""

    data: dict[str, Any] = field(default_factory=dict)
    #: Every data setting the run saved, the ones evaluation overrides included: what
    #: tells the run apart from others (the seed table groups checkpoints by it).
    saved: dict[str, Any] = field(default_factory=dict)
    train_length: int | None = None
    batch_size: int | None = None
    max_val_blocks: int | None = None
    precision: str = "32-true"
    source: str = "at their defaults (the bundled corpus)"
    #: Where evaluation places the tokens: ``ordinary`` or ``random`` (from ``[0, R)``).
    positions: str = "ordinary"
    #: The checkpoint's optimiser steps (its ``global_step``; None if it has none).
    step: int | None = None
    #: Which sequences a position task is evaluated on: ``val`` (its validation
    #: sequences) or ``test`` (held-out ones from another generator stream).
    split: str = "val"
    #: Which replicate of its variant the checkpoint is (the seed table counts each once):
    #: its run's ``seed_everything`` and data ``seed``, else the file itself (a hard link
    #: is one file); None if unknown.
    replicate: tuple[Any, ...] | None = None
    #: The content identity of the data the run trained on, as its checkpoint records it
    #: (:mod:`roformer_lit.training.data_identity`; None: a position task, or not recorded).
    data_identity: str | None = None
    #: The run's own tokenizer, stored in its checkpoint (None: a checkpoint from before
    #: tokenizers were stored): what its data module tokenizes with (:meth:`data_module`),
    #: never one trained anew from the settings where the run's cache entry is gone.
    tokenizer: Tokenizer | None = field(default=None, compare=False, repr=False)

    def data_module(self, values: dict[str, Any]) -> PretrainDataModule:
        """The data module of the run's data settings ``values``, tokenizing with the run's
        own tokenizer where its checkpoint stores one."""
        with run_tokenizer_given(self.tokenizer):
            return data_module(values)

    @property
    def random_range(self) -> int | None:
        """The run's ``data.random_positions`` ``R`` (None: trained at ordinary positions)."""
        return _positive_int(self.saved.get("random_positions"))

    @property
    def validated_positions(self) -> str:
        """Where the run's own validation placed its tokens (``ordinary`` or ``random``)."""
        return str(self.saved.get("validation_positions") or "ordinary")

    def with_positions(self, positions: str | None) -> RunSettings:
        """These settings evaluated at ``positions`` (None: as the run validated); a
        ConfigError if ``random`` is asked of a run trained without randomized positions."""
        chosen = positions or self.validated_positions
        if chosen == "random" and self.random_range is None:
            raise ConfigError(
                "--positions random needs a run trained with data.random_positions; this one "
                "was trained at the ordinary positions (use --positions ordinary)"
            )
        return dataclasses.replace(self, positions=chosen)


@dataclass
class Evaluation:
    """One cell: the loss (None if not evaluated), why not, and which blocks were used."""

    length: int
    loss: float | None = None
    why_not: str | None = None
    blocks: int = 0
    blocks_available: int = 0
    warning: str | None = None  # the line :func:`main` prints for an "n/a" cell
    acc: float | None = None  # a probe's answer-token accuracy (val/acc)
    exact: float | None = None  # a probe's exact match (val/exact)
    tokens: int = 0  # a probe's sequence length at input length ``length``
    #: A probe's baselines on the same sequences, ``rule -> (acc, exact)``.
    baselines: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: A corpus run's unigram baseline loss on the same masked tokens: fitted to them
    #: (in-sample), and estimated on the training split.
    unigram_loss: float | None = None
    train_unigram_loss: float | None = None
    #: The data settings that fix the evaluated sequences, seed included
    #: (:attr:`roformer_lit.results.extrapolate_rows.CellScores.sequences`).
    sequences: dict[str, Any] | None = None

    def scores(self, task: str | None) -> CellScores:
        """This cell as :mod:`roformer_lit.results.extrapolate_rows` takes it."""
        return CellScores(
            length=self.length,
            acc=self.acc if self.loss is not None else None,
            exact=self.exact if self.loss is not None else None,
            loss=self.loss,
            baselines=self.baselines,
            unigram_loss=self.unigram_loss,
            train_unigram_loss=self.train_unigram_loss,
            sequences=self.sequences,
            task=task,
        )


def run_settings(ckpt: Path, checkpoint: dict[str, Any]) -> RunSettings:
    """The validation settings of the run ``checkpoint`` (read from ``ckpt``) came from.

    Data settings come from the checkpoint (``datamodule_hyper_parameters``), else from the
    ``config.yaml`` of the run directory ``<run>/checkpoints/<ckpt>`` belongs to, else are
    the defaults; the precision comes from that ``config.yaml`` (``32-true`` without one).
    An unreadable ``config.yaml`` is a warning, not an error.
    """
    config: dict[str, Any] = {}
    config_path = ckpt.parent.parent / "config.yaml"
    if ckpt.parent.name == "checkpoints" and os.path.lexists(config_path):
        try:
            config = read_yaml_mapping(config_path)
        except RunFileError as exc:
            warn(f"{config_path}: {exc}; using the settings saved in {ckpt}")
    settings = RunSettings()
    saved = checkpoint.get("datamodule_hyper_parameters")
    from_config = config.get("data")
    if isinstance(saved, dict) and saved:
        data, settings.source = saved, "saved in the checkpoint"
    elif isinstance(from_config, dict):
        data, settings.source = from_config, f"from {config_path}"
    else:
        data = {}
    # the settings of the class the run's data module was (a flat section of an earlier
    # version: the class ``probe`` picks, the other class's keys dropped)
    data = resolve(data, lenient=True)[1]
    settings.data = {k: v for k, v in data.items() if k not in OVERRIDDEN}
    settings.saved = dict(data)
    settings.train_length = _positive_int(data.get("max_length"))
    settings.batch_size = _positive_int(data.get("batch_size"))
    settings.max_val_blocks = _positive_int(data.get("max_val_blocks"))
    trainer = config.get("trainer")
    if isinstance(trainer, dict) and trainer.get("precision") is not None:
        settings.precision = str(trainer["precision"])
    settings.replicate = _replicate(config, data, ckpt)
    settings.data_identity = checkpoint_data_identity(checkpoint)
    settings.tokenizer = checkpoint_tokenizer(checkpoint, ckpt)
    return settings


def _replicate(config: dict[str, Any], data: dict[str, Any], ckpt: Path) -> tuple | None:
    """:attr:`RunSettings.replicate`: ``("seeds", seed_everything, data seed)`` from the
    run's ``config.yaml``, else ``("file", device, inode)`` of the checkpoint."""
    seed = config.get("seed_everything")
    if isinstance(seed, int) and not isinstance(seed, bool):
        return ("seeds", seed, data.get("seed"))
    try:
        stat = os.stat(ckpt)
    except OSError:
        return None
    return ("file", stat.st_dev, stat.st_ino)


def _positive_int(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return value if ok else None


def token_budget(settings: RunSettings, tokens: int | None) -> int | None:
    """Validation tokens per length: ``--tokens``, else what the run's validation evaluates
    (``max_val_blocks * max_length``), else None (the whole split)."""
    if tokens is not None:
        return tokens
    if settings.max_val_blocks is not None and settings.train_length is not None:
        return settings.max_val_blocks * settings.train_length
    return None


def batch_size_at(settings: RunSettings, length: int, batch_size: int | None) -> int:
    """``--batch-size``, else the run's tokens per batch at ``length`` (the run's own batch
    size at its training length)."""
    if batch_size is not None:
        return batch_size
    if settings.batch_size is None:
        return 4
    train_length = settings.train_length or length
    return max(1, settings.batch_size * train_length // length)


def open_checkpoint(path: Path) -> dict[str, Any]:
    """The checkpoint at ``path`` (:func:`roformer_lit.training.checkpoint_io.read_checkpoint`,
    which names the checkpoints inside a run directory given instead)."""
    return read_checkpoint(path, kind=PRETRAINING)


def parse_position_kwargs(text: str | None) -> dict[str, Any] | None:
    """``--position_kwargs`` (a YAML/JSON mapping) as a dict, or a one-line ConfigError."""
    if text is None:
        return None
    try:
        value = safe_yaml_load(text)
    except (YAMLBombError, Exception) as exc:  # yaml.YAMLError and the size guard
        detail = " ".join(str(exc).split())[:120]
        raise ConfigError(f"--position_kwargs is not valid YAML ({detail}): {text!r}") from None
    if not isinstance(value, dict):
        raise ConfigError(
            f"--position_kwargs must be a mapping such as '{{scaling: {{type: yarn, factor: 4}}}}', "
            f"got {text!r}"
        )
    return value


def with_position_kwargs(model: MaskedLM, overrides: dict[str, Any], label: str) -> MaskedLM:
    """``model`` rebuilt with ``overrides`` merged into its ``position_kwargs`` (with a layer
    plan: into the options of the layers they reach, or of the types they name,
    :mod:`roformer_lit.results.extrapolate_overrides`), holding the same weights (eval
    mode); a ConfigError if an option reaches no layer, is invalid for its scheme or
    changes the weights' shapes."""
    hparams, notes = apply_overrides(dict(model.hparams), overrides, label)
    for note in notes:
        print(note, file=sys.stderr)
    rebuilt = MaskedLM(**hparams)
    try:
        rebuilt.load_state_dict(model.state_dict())
    except RuntimeError as exc:
        detail = " ".join(str(exc).split())[:200]
        raise ConfigError(
            f"{label}: --position_kwargs {overrides!r} changes the model's weights: {detail}"
        ) from None
    return rebuilt.eval()


@contextlib.contextmanager
def _quiet_lightning() -> Iterator[None]:
    """Lightning's banner lines and data-loader hints, which say nothing here."""
    logger = logging.getLogger("lightning.pytorch")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have many workers.*")
            warnings.filterwarnings("ignore", message=".*litlogger.*")
            warnings.filterwarnings("ignore", message=".*LeafSpec.*")
            yield
    finally:
        logger.setLevel(level)


def validation_results(
    model: MaskedLM, data: PretrainDataModule, precision: str
) -> dict[str, float]:
    """Every ``val/*`` metric of ``model`` on ``data``'s validation set (empty if none),
    through the model's own validation step under a one-device Lightning Trainer (what
    ``validate`` runs); ``val/loss`` is the masked-token cross-entropy averaged over all
    masked tokens."""
    with _quiet_lightning():
        trainer = Trainer(
            accelerator="auto",
            devices=1,
            precision=precision,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        results = trainer.validate(model, datamodule=data, verbose=False)
    return {key: float(value) for key, value in results[0].items()} if results else {}


def corpus_module(settings: RunSettings) -> CorpusDataModule:
    """The data module of a corpus run (its caller has checked it is no position task)."""
    data = settings.data_module(settings.data)
    assert isinstance(data, CorpusDataModule)
    return data


def run_probe(settings: RunSettings) -> ProbeTask | None:
    """The probe task of the run (None: a corpus run)."""
    name = settings.data.get("probe")
    return None if name is None else probe_task(name)


def probe_cap(settings: RunSettings, tokens_per_sequence: int, tokens: int | None) -> int:
    """A probe's validation sequences per length: the run's count, capped by ``--tokens``."""
    count = settings.max_val_blocks or PROBE_VAL_SEQUENCES
    return count if tokens is None else max(1, min(count, tokens // tokens_per_sequence))


def _data(
    settings: RunSettings, length: int, batch_size: int, cap: int | None
) -> PretrainDataModule:
    """The run's data module at ``length``, its validation set set up (cut into blocks); a
    probe's at input length ``length`` (its validation sequences have that length)."""
    task = run_probe(settings)
    lengths: dict[str, Any] = {}
    if task is not None:
        low = min(settings.data.get("probe_min_length", 1), length)
        lengths = {"probe_min_length": low, "probe_max_length": length}
        length = task.sequence_length(length)
    if settings.positions == "random":
        lengths.update(random_positions=settings.random_range, validation_positions="random")
    data = settings.data_module(
        {
            **settings.data,
            **lengths,
            "max_length": length,
            "batch_size": batch_size,
            "max_val_blocks": cap,
        }
    )
    data.setup("validate")
    if task is not None and settings.split == "test":
        assert data.val_dataset is not None
        data.val_dataset = ProbeValidation(
            task,
            symbols=data.probe_symbols,
            length=lengths["probe_max_length"],
            count=len(data.val_dataset),
            seed=data.seed,
            random_positions=settings.random_range if settings.positions == "random" else None,
            stream="test",
        )
    return data


def unigram_loss(data: PretrainDataModule) -> float | None:
    """The loss of predicting every masked token by the unigram distribution of the masked
    tokens themselves: their entropy ``-Σ p log p`` (nats, as ``val/loss``), under the run's
    tokenizer. None without masked tokens."""
    counts: dict[int, int] = {}
    for batch in data.val_dataloader():
        labels = batch["labels"]
        tokens, frequencies = torch.unique(labels[labels != -100], return_counts=True)
        for token, count in zip(tokens.tolist(), frequencies.tolist(), strict=True):
            counts[token] = counts.get(token, 0) + count
    total = sum(counts.values())
    if not total:
        return None
    return -math.fsum(c / total * math.log(c / total) for c in counts.values())


def train_unigram_log_probs(data: PretrainDataModule) -> np.ndarray:
    """``log p(w)`` of every token id ``w`` under the unigram distribution of the run's
    *training* split, add-one smoothed over the tokenizer's ``V`` ids (a token the split
    never holds keeps a finite loss):

        p(w) = (c_train(w) + 1) / (N_train + V)
    """
    (stream, start, stop), _ = data.split_ranges()  # type: ignore[attr-defined]
    vocab = data.tokenizer_vocab_size
    counts = np.bincount(np.asarray(stream.read(start, stop), dtype=np.int64), minlength=vocab)
    counts = counts[:vocab].astype(np.float64)
    return np.log(counts + 1.0) - math.log(counts.sum() + vocab)


def train_unigram_loss(data: PretrainDataModule, log_probs: np.ndarray) -> float | None:
    """The loss (nats, as ``val/loss``) of predicting every masked validation token by the
    training split's unigram distribution (:func:`train_unigram_log_probs`):
    ``-(1/M) sum_masked log p(w)``. Unlike :func:`unigram_loss` it is not fitted to the
    tokens it scores: a model that learns only token frequencies from its training data
    reaches it. None without masked tokens."""
    total, count = 0.0, 0
    for batch in data.val_dataloader():
        labels = batch["labels"]
        masked = labels[labels != -100].numpy()
        total -= math.fsum(log_probs[masked].tolist())
        count += masked.size
    return total / count if count else None


def shortest_split(settings: RunSettings) -> int | None:
    """Tokens in the shorter of a corpus run's two splits (the data module cuts both into
    blocks, so no block can be longer); None for a probe or when the data cannot be read
    (building the data module then says why)."""
    if run_probe(settings) is not None:
        return None
    try:
        train, val = corpus_module(settings).split_ranges()
    except (ConfigError, OSError):
        return None
    return min(stop - start for _, start, stop in (train, val))


#: Sequences longer than this get a line on stderr before they are evaluated.
LONG_SEQUENCE_TOKENS = 4096


def shortest_probe_length(task: ProbeTask) -> int:
    """The smallest input length ``n`` whose sequences hold :data:`LENGTH`'s minimum of
    tokens (``task.sequence_length(n) >= 8``): a shorter sequence has no block to mask."""
    n = 1
    while task.sequence_length(n) < LENGTH.low:
        n += 1
    return n


def length_problem(
    settings: RunSettings, length: int, tokens: int, shortest: int | None = None
) -> str | None:
    """Why ``length`` cannot be evaluated for this run before anything is built, or None: a
    corpus block under :data:`LENGTH`'s minimum or longer than the shorter corpus split
    (``shortest`` tokens), an input length the task cannot build, sequences longer than
    the random-position range. The reason names ``--lengths``, the setting to change, and
    not the length itself, so that :func:`warn_once` says it once for every length."""
    task = run_probe(settings)
    if task is None and length < LENGTH.low:
        return f"a corpus block needs at least {LENGTH.low:g} tokens"
    if task is None and shortest is not None and length > shortest:
        return (
            f"the run's shorter corpus split holds {shortest} tokens, less than one block "
            f"(both splits are cut into blocks): use --lengths up to {shortest}"
        )
    if task is not None:
        low = shortest_probe_length(task)
        if length < low:
            return (
                f"an input length under {low} gives {task.name!r} sequences of fewer than "
                f"{LENGTH.low:g} tokens (input length {low}: {task.sequence_length(low)} tokens)"
            )
        try:
            task.check(length, int(settings.data.get("probe_symbols", 16)), name="input length")
        except ConfigError as exc:
            return str(exc)
    if settings.positions == "random" and tokens > (settings.random_range or 0):
        return (
            "the sequences are longer than the run's data.random_positions="
            f"{settings.random_range} (shorter --lengths, or --positions ordinary)"
        )
    return None


def evaluate_checkpoint(
    model: MaskedLM,
    settings: RunSettings,
    lengths: Sequence[int],
    tokens: int | None = None,
    batch_size: int | None = None,
    label: str = "checkpoint",
) -> list[Evaluation]:
    """One :class:`Evaluation` per length (see the module docstring for what is evaluated).

    Raises ConfigError if the run's data cannot be read or does not fit the model; a length
    the data cannot be cut into (a validation split shorter than one block) is an "n/a"
    cell whose ``warning`` says why (printed by :func:`main`, not here).
    """
    budget = token_budget(settings, tokens)
    task = run_probe(settings)
    if task is None and settings.split == "test":
        raise ConfigError(
            "--split test needs a position-task run: a corpus run has one held-out split, "
            "its validation (use --split val)"
        )
    module = settings.data_module(settings.data)
    vocab = module.tokenizer_vocab_size
    if vocab != model.hparams.vocab_size:
        raise ConfigError(
            f"its data's tokenizer has {vocab} tokens, the model {model.hparams.vocab_size}: "
            "the data settings do not match its run"
        )
    # the data evaluated, by content: validate's note where they are not what the run
    # trained on; the baselines are told apart by them (extrapolate_rows)
    evaluated = current_data_identity(module)
    other = other_data(label, settings.data_identity, evaluated, resume=False)
    if other is not None:
        print(f"note: {label}: {other}", file=sys.stderr)
    cells: list[Evaluation] = []
    shortest = shortest_split(settings)
    train_log_probs: np.ndarray | None = None
    for length in lengths:
        cell = Evaluation(length)
        cells.append(cell)
        cell.tokens = length if task is None else task.sequence_length(length)
        if model.max_length is not None and cell.tokens > model.max_length:
            cell.why_not = f"refused (max_positions={model.max_length})"
            continue
        problem = length_problem(settings, length, cell.tokens, shortest)
        if problem is not None:
            cell.warning, cell.why_not = problem, "n/a (see the warning)"
            continue
        if task is None:
            cap = None if budget is None else max(budget // length, 1)
        else:
            cap = probe_cap(settings, cell.tokens, tokens)
        batch = batch_size_at(settings, cell.tokens, batch_size)
        try:
            data = _data(settings, length, batch, cap)
            whole = cap is None or task is not None
            available = data if whole else _data(settings, length, batch, None)
        except ConfigError as exc:
            cell.warning, cell.why_not = str(exc), "n/a (see the warning)"
            continue
        assert data.val_dataset is not None and available.val_dataset is not None
        cell.blocks, cell.blocks_available = len(data.val_dataset), len(available.val_dataset)
        if cell.tokens > LONG_SEQUENCE_TOKENS:  # minutes to hours: say what is running
            print(
                f"{label}: evaluating {cell.blocks} sequences of {cell.tokens} tokens at "
                f"--lengths {length} (attention's cost grows with the square of the length; "
                "Ctrl-C stops without writing anything)",
                file=sys.stderr,
                flush=True,
            )
        try:
            results = validation_results(model, data, settings.precision)
        except torch.OutOfMemoryError:
            cell.why_not = "n/a (out of memory)"
            continue
        loss = results.get("val/loss", math.nan)
        if task is not None:
            cell.acc, cell.exact = results.get("val/acc"), results.get("val/exact")
            symbols = data.probe_symbols
            sequences = data.val_dataset
            assert isinstance(sequences, ProbeValidation)
            scores = baseline_scores(
                task, sequences.input_ids.numpy(), sequences.labels.numpy(), symbols
            )
            cell.baselines = {b.rule: (b.acc, b.exact) for b in scores}
            cell.sequences = {
                "probe": task.name,
                "probe_symbols": symbols,
                "seed": data.seed,
                "sequences": len(sequences),
                "split": settings.split,
            }
        else:
            cell.unigram_loss = unigram_loss(data)
            if train_log_probs is None:  # the split is the same at every length: read once
                train_log_probs = train_unigram_log_probs(data)
            cell.train_unigram_loss = train_unigram_loss(data, train_log_probs)
            cell.sequences = {**settings.data, "blocks": cell.blocks}
            if evaluated is not None:
                cell.sequences[DATA_KEY] = evaluated
        if "val/loss" not in results:  # no batch had a masked token
            cell.why_not = "n/a (no masked tokens)"
        elif not math.isfinite(loss):  # a NaN batch makes the mean NaN (evaluation_mean)
            cell.why_not = f"n/a (the model's loss is {loss}: its output is not finite)"
        else:
            cell.loss = loss
    return cells


def describe(
    ckpt: Path, settings: RunSettings, cells: Sequence[Evaluation], budget: int | None
) -> str:
    """The stderr line saying what was evaluated for ``ckpt`` and whether the training
    length's cell is what ``validate`` evaluates."""
    task = run_probe(settings)
    as_validated = settings.positions == settings.validated_positions
    if task is not None:
        trained = settings.data.get("probe_max_length")
        which = "held-out test" if settings.split == "test" else "validation"
        done = [
            f"n={c.length}: {c.blocks} sequences of {c.tokens} tokens"
            + (
                " (= validate's)"
                if c.length == trained and as_validated and settings.split == "val"
                else ""
            )
            for c in cells
            if c.blocks
        ]
        return (
            f"{ckpt}: probe {_task_name(settings)!r} (trained at n <= {trained}), {which} "
            f"sequences of each input length n seeded by {settings.data.get('seed', 0)}, "
            f"{_positions_text(settings)}, data settings "
            f"{settings.source}, precision {settings.precision}; "
            + ("; ".join(done) if done else "nothing evaluated")
        )
    parts = []
    for cell in cells:
        if not cell.blocks:
            continue
        part = f"L={cell.length}: blocks 0-{cell.blocks - 1} of {cell.blocks_available}"
        if cell.length == settings.train_length and as_validated:
            validated = min(settings.max_val_blocks or cell.blocks_available, cell.blocks_available)
            same = validated == cell.blocks
            part += " (= validate's)" if same else f" (validate: blocks 0-{validated - 1})"
        if budget is not None and cell.blocks * cell.length > budget:  # one block: > budget
            part += f" ({cell.blocks * cell.length} tokens: a block is longer than {budget})"
        parts.append(part)
    amount = f"its first {budget} tokens" if budget is not None else "all of it"
    return (
        f"{ckpt}: validation split, {amount} at each length, {_positions_text(settings)}; "
        "data settings "
        f"{settings.source}, masking seed {settings.data.get('seed', 0)}, precision "
        f"{settings.precision}; " + ("; ".join(parts) if parts else "nothing evaluated")
    )


def _positions_text(settings: RunSettings) -> str:
    if settings.positions == "random":
        return f"at random positions of [0, {settings.random_range})"
    return "at the ordinary positions"


def _format(cell: Evaluation) -> str:
    if cell.loss is None:
        return str(cell.why_not)
    if cell.acc is not None and cell.exact is not None:  # a probe: accuracy / exact match
        return f"{cell.acc:.3f} / {cell.exact:.3f}"
    return f"{cell.loss:.3f}"


def readable_checkpoints(arguments: Sequence[str]) -> list[tuple[Path, RunSettings]]:
    """Each checkpoint the arguments (files, quoted globs) name, with its run's settings.
    One that is missing or unreadable is skipped with a ``warning:`` line while others
    remain; if none remains, one ConfigError naming every problem."""
    paths, unmatched = expand_arguments(arguments)
    problems = [
        f"no file matches {a}"
        if has_glob(a)
        else f"checkpoint not found: {a}{missing_path_hint(a)}"
        for a in unmatched
    ]
    ready: list[tuple[Path, RunSettings]] = []
    for path in paths:
        try:
            checkpoint = open_checkpoint(path)
            settings = run_settings(path, checkpoint)
            settings.step = _positive_int(checkpoint.get("global_step")) or (
                0 if checkpoint.get("global_step") == 0 else None
            )
            ready.append((path, settings))
        except ConfigError as exc:
            problems.append(str(exc))
    if not ready:
        raise ConfigError("; ".join(problems))
    for problem in problems:
        warn(f"{problem}; skipped")
    return ready


def build_parser() -> ToolParser:
    parser = ToolParser("extrapolate", description=__doc__)
    parser.add_argument("checkpoints", nargs="+", help="checkpoint files (quoted globs too)")
    parser.add_argument(
        "--lengths",
        nargs="+",
        type=integer(1, MAX_LENGTH),
        default=[128, 256, 512, 1024, 2048],
        help="sequence lengths L of a corpus run (>= 8 tokens), input lengths n of a "
        "position task (as its task allows)",
    )
    parser.add_argument(
        "--tokens",
        type=integer(1, 2**40),
        default=None,
        help="validation tokens per length (default: what the run's validation evaluates)",
    )
    parser.add_argument(
        "--batch-size",
        type=integer(1, 1 << 20),
        default=None,
        help="blocks per batch (default: the run's tokens per batch)",
    )
    parser.add_argument(
        "--positions",
        choices=VALIDATION_POSITIONS,
        default=None,
        help="where the tokens sit: ordinary (0..L-1) or random (sorted draws from [0, R) "
        "as a data.random_positions run trained; Ruoss et al. 2023's evaluation); default: "
        "as the run validated",
    )
    parser.add_argument(
        "--position_kwargs",
        default=None,
        help="position-scheme options merged into each checkpoint's, as YAML, e.g. "
        "'{scaling: {type: yarn, factor: 4}}' (same weights, no retraining)",
    )
    parser.add_argument(
        "--csv",
        type=OUTPUT_FILE,
        default=None,
        help="also write every cell as long rows name,length,metric,value,split, "
        "baselines as rows named baseline:<rule>",
    )
    parser.add_argument(
        "--budget",
        type=OUTPUT_FILE,
        default=None,
        help="also write the rows with each checkpoint's step, "
        "name,step,length,metric,value,split "
        "(accuracy against training steps over step=N.ckpt checkpoints)",
    )
    parser.add_argument(
        "--solved",
        type=real(0.0, 1.0),
        default=SOLVED_AT,
        help="exact match at or above which a position-task cell reads 'solved' "
        f"(default {SOLVED_AT})",
    )
    parser.add_argument(
        "--split",
        choices=("val", "test"),
        default="val",
        help="position tasks: their validation sequences (val), or held-out ones from "
        "another generator stream (test), for reporting what was selected on val",
    )
    return parser


def longest_length(model: MaskedLM, settings: RunSettings) -> int:
    """The longest ``--lengths`` value ``model`` can be evaluated at on its run's data: its
    position table's limit, and one block of the shorter of the run's two splits (the data
    module cuts both); for a probe, the longest input length its symbols and the position
    table allow."""
    task = run_probe(settings)
    if task is not None:
        longest = task.longest(int(settings.data.get("probe_symbols", 16))) or LENGTH.high
        if model.max_length is not None:
            longest = min(longest, (model.max_length - 1) // (2 * task.width))
        return longest
    train, val = corpus_module(settings).split_ranges()
    longest = min(stop - start for _, start, stop in (train, val))
    return longest if model.max_length is None else min(longest, model.max_length)


def nothing_evaluated(
    results: Sequence[tuple[Path, MaskedLM, RunSettings, list[Evaluation]]],
    lengths: Sequence[int],
    skipped: Sequence[str] = (),
) -> str:
    """The one line for a command that could evaluate no (checkpoint, length) cell: per
    checkpoint why not and which lengths it can be evaluated at."""
    parts = []
    for path, model, settings, cells in results:
        reasons = dict.fromkeys(
            cell.warning if cell.warning is not None else str(cell.why_not) for cell in cells
        )
        try:
            longest = longest_length(model, settings)
        except ConfigError:  # its data is unreadable: the reasons say so
            longest = 0
        task = run_probe(settings)
        low = int(LENGTH.low) if task is None else shortest_probe_length(task)
        valid = (
            f"valid --lengths: {low} to {longest}"
            if longest >= low
            else "no length is valid for its data"
        )
        parts.append(f"{path}: {', '.join(reasons)}; {valid}")
    given = " ".join(str(n) for n in lengths)
    return f"extrapolate evaluated nothing at --lengths {given}: " + "; ".join(
        [*parts, *(f"{problem} (skipped)" for problem in skipped)]
    )


def main(args: Sequence[str]) -> int:
    """Evaluate, then print: the table on stdout, per checkpoint its warnings and what was
    evaluated on stderr. Where no (checkpoint, length) cell could be evaluated, nothing but
    one ConfigError line naming the valid lengths (exit 2)."""
    ns = build_parser().parse_args(list(args))
    overrides = parse_position_kwargs(ns.position_kwargs)
    ready = readable_checkpoints(ns.checkpoints)
    reads = [*(path for path, _ in ready), *ns.checkpoints]
    outputs = {"--csv": ns.csv, "--budget": ns.budget}
    for option, where in outputs.items():
        if where is not None:  # before any evaluation: refused outputs cost nothing
            output_target(where, option, reads)
            note_replaced(option, [where])
    if ns.csv is not None and ns.budget is not None:
        if Path(ns.csv).resolve() == Path(ns.budget).resolve():
            raise ConfigError(f"--csv and --budget name the same file {ns.csv}; give two files")
    results: list[tuple[Path, MaskedLM, RunSettings, list[Evaluation]]] = []
    skipped: list[str] = []
    for path, run in ready:
        try:
            settings = dataclasses.replace(run.with_positions(ns.positions), split=ns.split)
            model = MaskedLM.from_checkpoint(path)
            if overrides is not None:
                model = with_position_kwargs(model, overrides, str(path))
            cells = evaluate_checkpoint(
                model, settings, ns.lengths, ns.tokens, ns.batch_size, label=str(path)
            )
        except ConfigError as exc:
            message = str(exc) if str(path) in str(exc) else f"{path}: {exc}"
            if len(ready) == 1:
                raise ConfigError(message) from exc
            skipped.append(message)
            continue
        results.append((path, model, settings, cells))
    if not results:
        raise ConfigError(f"no checkpoint could be evaluated: {'; '.join(skipped)}")
    if all(cell.loss is None for *_, cells in results for cell in cells):
        raise ConfigError(nothing_evaluated(results, ns.lengths, skipped))
    for message in skipped:
        warn(f"{message}; skipped")
    print_tables(results, ns.lengths, overrides, ns.tokens, ns.solved)
    if ns.csv is not None or ns.budget is not None:
        tables = [
            CheckpointRows(
                str(path),
                settings.step,
                [cell.scores(_task_name(settings)) for cell in cells],
            )
            for path, _, settings, cells in results
        ]
        for option, where, with_step in (("--csv", ns.csv, False), ("--budget", ns.budget, True)):
            if where is None:
                continue
            target = Path(where)  # checked by output_target before any evaluation
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(to_csv(tables, ns.split, with_step), encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"cannot write {option} {target}: {exc.strerror or exc}") from exc
            print(f"wrote {target}", file=sys.stderr)
    return 0


def _task_name(settings: RunSettings) -> str | None:
    """The run's position task by the name it recorded (``copy``, ``my_pkg.tasks:SHIFT``,
    an entry point's name), which keys its baseline rows: never the task's own ``name``
    field, which a plugin may share with a built-in or with another plugin (their
    baselines, on other sequences, would be read as one)."""
    name = settings.data.get("probe")
    return None if name is None else str(name)


def warn_once(label: str, cells: Sequence[Evaluation], unit: str) -> None:
    """One ``warning:`` line per distinct problem of a checkpoint, naming every length it
    applies to (not one line per length)."""
    by_problem: dict[str, list[int]] = {}
    for cell in cells:
        if cell.warning is not None:
            by_problem.setdefault(cell.warning, []).append(cell.length)
    for problem, lengths in by_problem.items():
        warn(f"{label} at --lengths {' '.join(str(n) for n in lengths)} ({unit}): {problem}")


def print_tables(
    results: Sequence[tuple[Path, MaskedLM, RunSettings, list[Evaluation]]],
    lengths: Sequence[int],
    overrides: dict[str, Any] | None,
    tokens: int | None,
    threshold: float,
) -> None:
    """The per-checkpoint table (with each checkpoint's step, each probe cell's verdict and
    the baselines' rows), then the table over seeds (mean [95 % t-interval])."""
    rows: list[str] = []
    evaluated: list[CheckpointLosses] = []
    probes = [run_probe(settings) is not None for _, _, settings, _ in results]
    for path, model, settings, cells in results:
        probe = run_probe(settings) is not None
        warn_once(str(path), cells, "n" if probe else "L")
        print(describe(path, settings, cells, token_budget(settings, tokens)), file=sys.stderr)
        hp = model.hparams
        texts = []
        for cell in cells:
            mark = verdict(cell.scores(None), threshold) if probe else ""
            texts.append(_format(cell) + (f" {mark}" if mark else ""))
        scheme = hp.position if overrides is None else f"{hp.position} {overrides}"
        # the data it trained on, by content, as compare tells runs apart: checkpoints of
        # one setting on other data are never seeds of one variant
        identity = settings.data_identity
        trained = {} if identity is None else {DATA_KEY: identity}
        step = "step ?" if settings.step is None else f"step {settings.step}"
        rows.append(f"| {path} ({step}) | {scheme} | {hp.attention} | {' | '.join(texts)} |")
        evaluated.append(
            CheckpointLosses(
                # the step a checkpoint holds tells variants apart: a run's checkpoints at
                # several steps are one run at several budgets, never seeds of one variant
                hparams={**settings.saved, **dict(hp), "step": settings.step, **trained},
                path=str(path),
                replicate=settings.replicate,
                losses=[c.acc if probe else c.loss for c in cells],
                why_not=[c.why_not for c in cells],
                scores=[c.scores(None) for c in cells] if probe else None,
            )
        )
    tables = [
        CheckpointRows(str(p), s.step, [c.scores(_task_name(s)) for c in cells])
        for p, _, s, cells in results
    ]
    rows = baseline_table_rows(tables, lengths, any(probes)) + rows
    if any(probes):
        rows_are = "every row" if all(probes) else "probe rows"
        print(
            f"{rows_are}: answer-token accuracy / exact match at input length n "
            "(val/acc / val/exact)"
            + ("" if all(probes) else "; other rows: val/loss at sequence length L")
            + f"; 'solved': exact match >= {threshold:g}; '> baseline': accuracy above the "
            "best baseline row on the same sequences"
        )
    unit = "n" if all(probes) else "L"
    print("| checkpoint | scheme | kernel | " + " | ".join(f"{unit}={n}" for n in lengths) + " |")
    print("|---|---|---|" + "---|" * len(lengths))
    for row in rows:
        print(row)
    over_seeds = seed_table(evaluated, lengths, unit, threshold)
    if over_seeds is not None:
        what = " (probe rows: answer-token accuracy)" if any(probes) else ""
        print(
            f"\nOver seeds{what} (mean [95 % t-interval]; variants grouped as `compare` "
            "groups runs):\n"
        )
        print(over_seeds)
