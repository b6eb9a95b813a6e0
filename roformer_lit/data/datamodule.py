"""``PretrainDataModule``: what every pretraining data source shares -- loaders, resume
state, seeds, randomized positions -- on which each source is one subclass.

* :class:`~roformer_lit.data.corpus_module.CorpusDataModule`: a corpus -> WordPiece
  tokenizer -> prepared token shards -> BERT-masked blocks;
* :class:`~roformer_lit.data.probe_module.ProbeDataModule`: a synthetic position task
  (:mod:`roformer_lit.data.probes`), built in memory.

Batches are ``{"input_ids": LongTensor[B, L], "labels": LongTensor[B, L]}`` with
``labels == -100`` where no prediction is made. With ``random_positions`` training batches
also carry ``position_ids`` (``LongTensor[B, L]``).

Each argument is stored once, in the hyperparameters (``self.hparams``, saved in
checkpoints as ``datamodule_hyper_parameters``); reading one as an attribute
(``dm.max_length``) reads it there. A class's arguments are its own signature plus the
base's (a subclass passes ``**kwargs`` on), so the key lists of a data section come from
the signatures (:meth:`PretrainDataModule.arguments`). Which class a ``data`` section
builds -- ``class_path`` in YAML, or a flat section from an earlier version -- is decided
in :mod:`roformer_lit.data.modules`.

Life cycle: ``__init__`` checks the arguments (:meth:`~PretrainDataModule.check_settings`:
the class's rule table, the settings that must agree, the bytes the sizes allocate) and
reads nothing; :attr:`~PretrainDataModule.tokenizer` (and ``tokenizer_vocab_size``, which
LightningCLI links to the model's vocab size) comes from the source; :meth:`setup` builds
the datasets (:meth:`~PretrainDataModule.build_datasets`); the loaders are the base's.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from tokenizers import Tokenizer
from torch.utils.data import DataLoader, Dataset

from roformer_lit.data.resumable import ResumableDataModule
from roformer_lit.data.tokenizer import SpecialTokens
from roformer_lit.errors import ConfigError
from roformer_lit.validation import (
    MAX_WORKERS,
    Rule,
    check_arguments,
    check_fits_in_memory,
    int_in,
    one_of,
    optional,
    seed,
    size,
)

if TYPE_CHECKING:
    from roformer_lit.data.probes import ProbeTask

#: Where validation places its tokens (``validation_positions``): ``0 .. L-1``, or sorted
#: draws from ``[0, random_positions)`` as training draws them.
VALIDATION_POSITIONS = ("ordinary", "random")


def info(message: str) -> None:
    """One information line on stderr, from the first process only (not from every DDP rank)."""
    if os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) == "0":
        print(message, file=sys.stderr, flush=True)


#: The base's arguments with a range of their own, and what they accept (checked by
#: :func:`~roformer_lit.validation.check_arguments`); each subclass's ``RULES`` adds its own.
BASE_RULES: dict[str, Rule] = {
    "max_length": size(8),
    "batch_size": size(),
    "num_workers": int_in(0, MAX_WORKERS),
    "seed": seed,
    "max_val_blocks": optional(size()),
    "random_positions": optional(size(8)),
    "validation_positions": one_of(*VALIDATION_POSITIONS),
}


class PretrainDataModule(ResumableDataModule):
    """The base of every pretraining data source: its arguments, stored once in the
    hyperparameters, and its datasets; the seeded, resumable loaders and the tokenizer in
    every checkpoint are the base's (:class:`~roformer_lit.data.resumable.ResumableDataModule`).

    Args:
        max_length: tokens per block (a corpus) or per sequence (a position task).
        batch_size: blocks (sequences) per batch.
        num_workers: DataLoader worker processes (results do not depend on it).
        seed: seeds shuffling, masking and a position task's generators.
        max_val_blocks: keep only the first N validation blocks (a position task: its
            number of validation sequences).
        random_positions: randomized positions (Ruoss et al. 2023) drawn from ``[0, R)``,
            ``R`` this value (``>= max_length``): every training batch carries
            ``position_ids``, ``max_length`` distinct positions drawn without replacement
            and sorted, fresh per (seed, epoch, block) like the masking, which the model
            uses in place of ``0 .. L-1`` (relative schemes see the implied distances).
            Validation uses the ordinary positions unless ``validation_positions`` is
            ``random``. ``None`` (default): off.
        validation_positions: where validation places its tokens: ``ordinary`` (default,
            ``0 .. L-1``) or ``random`` (needs ``random_positions``): every validation
            sequence carries sorted distinct positions of ``[0, R)`` drawn as training
            draws them, fixed per (seed, sequence) -- the protocol of Ruoss et al. 2023,
            whose evaluation draws positions as their training does.

    A subclass defines :meth:`build_datasets` and :attr:`tokenizer`, its ``RULES`` and
    :meth:`check_combinations`, and says whether a training item is a whole batch
    (:attr:`TRAIN_ITEMS_ARE_BATCHES`).
    """

    #: The rule table of the class's arguments.
    RULES: ClassVar[dict[str, Rule]] = BASE_RULES
    #: Whether an item of the training dataset is a whole batch (the training loader then
    #: adds no batch dimension).
    TRAIN_ITEMS_ARE_BATCHES: ClassVar[bool] = False
    #: The position task the data is drawn from (None: none); ``MaskedLM`` logs exact match
    #: only where the masked tokens are one answer.
    probe_task: ProbeTask | None = None
    #: Arguments saved in the hyperparameters under another name (argument -> saved as).
    SAVED_AS: ClassVar[dict[str, str]] = {}
    #: The arguments that decide the tokenizer the data module makes (none: a fixed one). An
    #: evaluation of a checkpoint tokenizes with the run's own unless one of them is typed
    #: with another value than the run's (:mod:`roformer_lit.commands.evaluation_tokenizer`).
    DECIDES_TOKENIZER: ClassVar[tuple[str, ...]] = ()
    #: Where the data's held-out sequences other than validation are evaluated, if anywhere
    #: (the end of :meth:`check_subcommand`'s lines).
    HELD_OUT_ELSEWHERE: ClassVar[str] = ""

    def __init__(
        self,
        *,
        max_length: int = 128,
        batch_size: int = 32,
        num_workers: int = 0,
        seed: int = 0,
        max_val_blocks: int | None = None,
        random_positions: int | None = None,
        validation_positions: str = "ordinary",
    ) -> None:
        super().__init__()
        settings = self._given_arguments()
        self.check_settings(settings)
        for name, saved_as in self.SAVED_AS.items():
            settings[saved_as] = settings.pop(name)
        self.save_hyperparameters(settings)
        self.train_dataset: Dataset | None = None
        self.val_dataset: Dataset | None = None
        self._special: SpecialTokens | None = None

    def __getattr__(self, name: str) -> Any:
        """An argument, read from the hyperparameters, where each is stored (once)."""
        hparams = self.__dict__.get("_hparams")
        if hparams is not None and name in hparams:
            return hparams[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ----------------------------------------------------------------- arguments
    def _given_arguments(self) -> dict[str, Any]:
        """The arguments this object was built with: those of every ``__init__`` of the
        chain now running (this one's, then each subclass's own; a subclass passes the
        base's on through ``**kwargs``), read from their frames."""
        given: dict[str, Any] = {}
        frame = inspect.currentframe()
        frame = frame.f_back if frame is not None else None  # PretrainDataModule.__init__
        while frame is not None and frame.f_code.co_name == "__init__":
            if frame.f_locals.get("self") is not self:
                break
            code = frame.f_code
            for name in code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount]:
                given.setdefault(name, frame.f_locals[name])
            frame = frame.f_back
        return given

    @classmethod
    def arguments(cls) -> dict[str, Any]:
        """Every argument of the class (its own and the base's), with its default: what a
        ``data`` section building it may set."""
        found: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            if issubclass(klass, PretrainDataModule) and "__init__" in vars(klass):
                for name, p in inspect.signature(klass.__init__).parameters.items():
                    if p.kind is inspect.Parameter.KEYWORD_ONLY:
                        found[name] = p.default
        return found

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        """Every check of the class's arguments that reads nothing and builds nothing
        (``settings``: every argument by name, defaults included): the rule table
        (:attr:`RULES`), the settings that must agree (:meth:`check_combinations`), and
        the bytes the sizes would allocate against this machine's memory
        (:meth:`data_bytes`), and last what building a sample says (:meth:`check_builds`),
        which allocates, so only after the sizes are known to fit. The first failure is one
        ConfigError line. The pre-launch check (:mod:`roformer_lit.commands.prelaunch`)
        calls it before anything is created, the data module again when it is built."""
        check_arguments(settings, cls.RULES, "data.")
        cls.check_combinations(settings)
        need, names = cls.data_bytes(settings)
        values = ", ".join(f"data.{name}={settings[name]}" for name in names)
        check_fits_in_memory(need, f"the data settings ({values})")
        cls.check_builds(settings)

    @classmethod
    def check_builds(cls, settings: Mapping[str, Any]) -> None:
        """Checks that build a few samples (none here): called after :meth:`data_bytes`
        has been checked against the machine, so that a size too large for it is refused
        by its bytes rather than by the allocation it would make."""

    @classmethod
    def check_combinations(cls, settings: Mapping[str, Any]) -> None:
        """The base's settings that must agree: the range of randomized positions holds a
        block, and random validation positions need it."""
        span, length = settings["random_positions"], settings["max_length"]
        if span is not None and span < length:
            raise ConfigError(
                f"data.random_positions must be >= data.max_length={length} (the range "
                f"positions are drawn from) or null, got {span}"
            )
        if settings["validation_positions"] == "random" and span is None:
            raise ConfigError(
                "data.validation_positions='random' needs data.random_positions (the range "
                "[0, R) positions are drawn from): set it, or validation_positions: ordinary"
            )

    @classmethod
    def shortest_training_sequence(cls, settings: Mapping[str, Any]) -> tuple[int, str]:
        """The fewest tokens a training sequence has, and where that comes from in words:
        every block of a corpus has ``max_length`` tokens (the remainder is dropped)."""
        length = settings["max_length"]
        return length, f"every training block has data.max_length={length} tokens"

    @classmethod
    def check_training_settings(cls, settings: Mapping[str, Any]) -> None:
        """The rules of the settings a run *trains* with (the pre-launch check of ``fit``
        and ``sweep``; an evaluation at another length may differ): randomized positions
        ``R`` that every training sequence fills (``R`` = its length) are the ordinary
        ``0 .. R-1`` in every draw, a run labelled randomized that trains on the ordinary
        positions, so ``R`` must exceed the shortest training sequence. One ConfigError line."""
        span = settings["random_positions"]
        if span is None:
            return
        shortest, why = cls.shortest_training_sequence(settings)
        if span <= shortest:
            raise ConfigError(
                f"data.random_positions={span} randomizes nothing: {why}, and {shortest} "
                f"distinct positions drawn from [0, {span}) are always the ordinary 0 .. "
                f"{span - 1}; valid: data.random_positions > {shortest}, or null"
            )

    @classmethod
    def data_bytes(cls, settings: Mapping[str, Any]) -> tuple[int, list[str]]:
        """A lower bound on the bytes the settings allocate at once, and the settings it
        reads: a batch's ``input_ids``, ``labels`` and ``position_ids`` (``3 * 8 * B *
        L``); with ``random_positions`` ``R`` one draw of positions (a permutation of
        ``[0, R)``, ``8 R``)."""
        need = 3 * 8 * settings["batch_size"] * settings["max_length"]
        names = ["batch_size", "max_length"]
        if settings["random_positions"] is not None:
            need += 8 * settings["random_positions"]
            names.append("random_positions")
        return need, names

    @classmethod
    def planned_vocab_size(cls, settings: Mapping[str, Any]) -> int:
        """The vocabulary size the settings plan for (before any tokenizer exists): what
        the pre-launch check builds the model with."""
        raise NotImplementedError

    @classmethod
    def check_subcommand(cls, subcommand: str) -> None:
        """The Lightning subcommands no pretraining data can serve, each one ConfigError
        line naming ``validate``: the one rule, for every data module, which the CLI applies
        before anything is built (and the loaders, for the Python API).

        * ``test`` evaluates a held-out test split, which no pretraining data has: a corpus
          holds out its validation split only, and a position task's held-out sequences are
          ``extrapolate --split test``'s (:attr:`HELD_OUT_ELSEWHERE`); reporting the
          validation split as ``test/*`` would label it wrongly.
        * ``predict`` would compute the MLM logits of the validation split and write them
          nowhere, exit 0: a run that looks like a result and leaves none.
        """
        if subcommand == "test":
            raise ConfigError(
                f"test needs a held-out test split, and {cls.__name__} gives none: test would "
                "report its validation split as test/* metrics; evaluate that with validate "
                "--ckpt_path CKPT" + cls.HELD_OUT_ELSEWHERE
            )
        if subcommand == "predict":
            raise ConfigError(
                f"predict writes no output for {cls.__name__}: it would compute the MLM "
                "logits of the validation split and drop them; evaluate a run with validate "
                "--ckpt_path CKPT, or load its checkpoint in Python "
                "(MaskedLM.load_from_checkpoint) to predict with it" + cls.HELD_OUT_ELSEWHERE
            )

    # ----------------------------------------------------------------- the source
    def describe(self) -> str:
        """The data in a few words (for messages)."""
        raise NotImplementedError

    @property
    def tokenizer(self) -> Tokenizer:
        """The source's tokenizer."""
        raise NotImplementedError

    def build_datasets(self) -> None:
        """Set :attr:`train_dataset` and :attr:`val_dataset` where they are None."""
        raise NotImplementedError

    def prepare(self) -> Any:
        """A source that is prepared ahead (a corpus) prepares here; the base has nothing
        to prepare and says so in one line."""
        raise ConfigError(
            f"{self.describe()} builds its data in memory: there is no corpus to prepare or read"
        )

    @property
    def needs_preparation(self) -> bool:
        """Whether :meth:`prepare` has work to do (a corpus) or the data are built in memory."""
        return type(self).prepare is not PretrainDataModule.prepare

    @property
    def special_tokens(self) -> SpecialTokens:
        """Ids of [PAD], [UNK], [CLS], [SEP], [MASK]."""
        if self._special is None:
            self._special = SpecialTokens.from_tokenizer(self.tokenizer)
        return self._special

    @property
    def tokenizer_vocab_size(self) -> int:
        """Actual vocab size of the tokenizer (use this for the model's embedding size)."""
        return self.tokenizer.get_vocab_size(with_added_tokens=True)

    @property
    def pad_token_id(self) -> int:
        """Id of ``[PAD]`` (0 for a trained tokenizer)."""
        return self.special_tokens.pad

    @property
    def mask_token_id(self) -> int:
        """Id of ``[MASK]``."""
        return self.special_tokens.mask

    # ----------------------------------------------------------------- datasets
    def setup(self, stage: str | None = None) -> None:
        """Build both datasets (once)."""
        if self.train_dataset is not None and self.val_dataset is not None:
            return
        self.build_datasets()

    def positions_range(self, split: str) -> int | None:
        """The range randomized positions of ``split`` are drawn from (None: ordinary)."""
        if split != "train" and self.validation_positions != "random":
            return None
        return self.random_positions

    # ----------------------------------------------------------------- loaders
    def _loader(self, dataset: Dataset | None, shuffle: bool) -> DataLoader:
        if dataset is None:
            self.setup()
            dataset = self.train_dataset if shuffle else self.val_dataset
        assert dataset is not None
        return self.seeded_loader(
            dataset,
            shuffle=shuffle,
            batch_size=None if shuffle and self.TRAIN_ITEMS_ARE_BATCHES else self.batch_size,
            pin_memory=torch.cuda.is_available(),
        )

    def train_dataloader(self) -> DataLoader:
        """Shuffled (order seeded by (seed, epoch)); masking fresh per epoch; resumable
        mid-epoch (:class:`~roformer_lit.data.dataset.ResumableDataLoader`)."""
        return self._loader(self.train_dataset, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        """Validation blocks in order, with masking fixed by ``seed``."""
        return self._loader(self.val_dataset, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        """Refused (:meth:`check_subcommand`): no pretraining data has a test split."""
        self.check_subcommand("test")
        raise AssertionError("unreachable")  # pragma: no cover

    def predict_dataloader(self) -> DataLoader:
        """Refused (:meth:`check_subcommand`): predictions would be written nowhere."""
        self.check_subcommand("predict")
        raise AssertionError("unreachable")  # pragma: no cover
