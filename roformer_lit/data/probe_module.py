"""``ProbeDataModule``: a synthetic position task (:mod:`roformer_lit.data.probes`) as
masked-token fill-in, built in memory (the base,
:class:`~roformer_lit.data.datamodule.PretrainDataModule`, owns the loaders).

The probe's word-level tokenizer; training batches of one input length each, drawn
uniformly from ``[probe_min_length, probe_max_length]`` and keyed by ``(seed, epoch,
batch)`` (:data:`PROBE_EPOCH_BATCHES` an epoch); ``max_val_blocks`` (default
:data:`PROBE_VAL_SEQUENCES`) fixed validation sequences at ``probe_max_length``. Only the
answer slots are masked and labelled; ``max_length`` must hold the task's longest
sequence. With ``random_positions`` each training batch's positions come from a stream of
their own (:mod:`roformer_lit.data.probes.dataset`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from tokenizers import Tokenizer

from roformer_lit.data.datamodule import BASE_RULES, PretrainDataModule
from roformer_lit.data.probes import (
    PROBE_TASKS,
    ProbeTrainBatches,
    ProbeValidation,
    probe_task,
    probe_tokenizer,
)
from roformer_lit.data.probes.built import check_deterministic
from roformer_lit.data.probes.tasks import FIRST_SYMBOL
from roformer_lit.errors import ConfigError
from roformer_lit.validation import Rule, non_empty_text, size, unit_interval_open_right

#: Training batches per epoch of a probe (each a fresh draw; epochs only renumber them).
PROBE_EPOCH_BATCHES = 10_000
#: Validation sequences of a probe when ``max_val_blocks`` is null.
PROBE_VAL_SEQUENCES = 256
#: A guess on the high side of what one symbol of a probe vocabulary costs (its entry in
#: the Python dict and in the tokenizer's own tables): the vocabulary's bytes.
PROBE_BYTES_PER_SYMBOL = 256

#: The probe module's arguments with a range of their own (beside the base's).
PROBE_RULES: dict[str, Rule] = {
    **BASE_RULES,
    "probe": non_empty_text,
    "probe_min_length": size(),
    "probe_max_length": size(),
    "probe_symbols": size(2),
    "probe_hint": unit_interval_open_right,
}


class ProbeDataModule(PretrainDataModule):
    """A position task's data (see the module).

    Args:
        probe: the task, a name of :data:`~roformer_lit.data.probes.PROBE_TASKS` (``copy``,
            ``reverse``, ``sort``, ``recall``, ``odds_first``).
        probe_min_length, probe_max_length: the range of the task's input length ``n``.
        probe_symbols: the task's number of symbols (ids ``3 .. 3 + probe_symbols - 1``).
        probe_hint: a training hint in ``[0, 1)`` for the tasks that take one (``recall``:
            the share of training pairs whose value is its key's fixed partner; see
            :mod:`roformer_lit.data.probes.tasks`); validation is never hinted. 0 (default):
            none.
        **kwargs: the base's arguments (:class:`~roformer_lit.data.datamodule.PretrainDataModule`:
            ``max_length``, ``batch_size``, ``num_workers``, ``seed``, ``max_val_blocks`` --
            here the number of validation sequences, default :data:`PROBE_VAL_SEQUENCES` --,
            ``random_positions``, ``validation_positions``).
    """

    RULES: ClassVar[dict[str, Rule]] = PROBE_RULES
    TRAIN_ITEMS_ARE_BATCHES: ClassVar[bool] = True  # ProbeTrainBatches yields whole batches
    HELD_OUT_ELSEWHERE: ClassVar[str] = (
        "; its held-out test sequences: extrapolate CKPT --split test"
    )

    def __init__(
        self,
        *,
        probe: str,
        probe_min_length: int = 1,
        probe_max_length: int = 16,
        probe_symbols: int = 16,
        probe_hint: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.probe_task = probe_task(probe)
        self._tokenizer: Tokenizer | None = None

    @classmethod
    def check_combinations(cls, settings: Mapping[str, Any]) -> None:
        """The base's, then the task's: its name, its lengths and symbols, a hint only for
        a task that takes one, and a ``max_length`` that holds its longest sequence (what
        its ``build`` returns: :meth:`check_builds`, once the sizes fit)."""
        super().check_combinations(settings)
        task = probe_task(settings["probe"])
        symbols, low, high = (
            settings[k] for k in ("probe_symbols", "probe_min_length", "probe_max_length")
        )
        if low > high:
            raise ConfigError(
                f"data.probe_min_length must be <= data.probe_max_length={high}, got {low}"
            )
        task.check(high, symbols)
        if settings["probe_hint"] and task.hint is None:
            loaded = PROBE_TASKS.loadable().components
            takers = ", ".join(name for name, t in loaded.items() if t.hint is not None)
            raise ConfigError(
                f"data.probe_hint={settings['probe_hint']} means nothing for probe "
                f"{task.name!r} (the tasks that take a hint: {takers}); leave it 0"
            )
        needed = task.sequence_length(high)
        if settings["max_length"] < needed:
            raise ConfigError(
                f"data.max_length={settings['max_length']} is too short for probe "
                f"{task.name!r} at data.probe_max_length={high}: its sequences have {needed} "
                f"tokens; set data.max_length >= {needed}"
            )

    @classmethod
    def shortest_training_sequence(cls, settings: Mapping[str, Any]) -> tuple[int, str]:
        """The task's sequences at ``probe_min_length``: the shortest it trains on."""
        task, low = probe_task(settings["probe"]), settings["probe_min_length"]
        tokens = task.sequence_length(low)
        return tokens, (
            f"every training sequence of probe {task.name!r} has at least {tokens} tokens "
            f"(data.probe_min_length={low})"
        )

    @classmethod
    def check_builds(cls, settings: Mapping[str, Any]) -> None:
        """What the task's ``build`` returns at the shortest and longest input length (four
        sequences, twice from one seed): a user's task that returns something else, or
        draws from anything but its generator, is refused here, before any run, and only
        once the sizes are known to fit the machine."""
        task = probe_task(settings["probe"])
        for n in sorted({settings["probe_min_length"], settings["probe_max_length"]}):
            check_deterministic(
                task, settings["probe_symbols"], n, settings["probe_hint"], settings["seed"]
            )

    @classmethod
    def data_bytes(cls, settings: Mapping[str, Any]) -> tuple[int, list[str]]:
        """The base's, plus the validation set (``3 * 8 * N * L``, ``N`` sequences), the
        vocabulary (:data:`PROBE_BYTES_PER_SYMBOL` per symbol) and a batch's draw over the
        symbols (``8 * B * S``: ``recall`` orders the keys of each row)."""
        need, names = super().data_bytes(settings)
        batch, length = settings["batch_size"], settings["max_length"]
        symbols = settings["probe_symbols"]
        count = settings["max_val_blocks"] or PROBE_VAL_SEQUENCES
        need += 3 * 8 * count * length + PROBE_BYTES_PER_SYMBOL * symbols + 8 * batch * symbols
        return need, [*names, "max_val_blocks", "probe_symbols"]

    @classmethod
    def planned_vocab_size(cls, settings: Mapping[str, Any]) -> int:
        """The task's vocabulary: the special tokens and the symbols."""
        return FIRST_SYMBOL + int(settings["probe_symbols"])

    def describe(self) -> str:
        return f"data.probe={self.probe!r}"

    @property
    def tokenizer(self) -> Tokenizer:
        """The task's word-level tokenizer."""
        if self._tokenizer is None:
            self._tokenizer = probe_tokenizer(self.probe_symbols)
        return self._tokenizer

    def build_datasets(self) -> None:
        """The task's training batches and validation sequences (built in memory)."""
        assert self.probe_task is not None
        if self.train_dataset is None:
            self.train_dataset = ProbeTrainBatches(
                self.probe_task,
                symbols=self.probe_symbols,
                min_length=self.probe_min_length,
                max_length=self.probe_max_length,
                batch_size=self.batch_size,
                seed=self.seed,
                batches=PROBE_EPOCH_BATCHES,
                random_positions=self.random_positions,
                hint=self.probe_hint,
            )
        if self.val_dataset is None:
            self.val_dataset = ProbeValidation(
                self.probe_task,
                symbols=self.probe_symbols,
                length=self.probe_max_length,
                count=self.max_val_blocks or PROBE_VAL_SEQUENCES,
                seed=self.seed,
                random_positions=self.positions_range("validation"),
            )
