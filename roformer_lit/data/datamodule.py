"""``MLMDataModule``: corpus -> WordPiece tokenizer -> prepared token shards -> BERT-masked batches.

Batches are ``{"input_ids": LongTensor[B, L], "labels": LongTensor[B, L]}`` with
``labels == -100`` where no prediction is made. Blocks are packed (see
:mod:`roformer_lit.data.shards`), so there is no padding and no attention mask. With
``random_positions`` training batches also carry ``position_ids`` (``LongTensor[B, L]``).

Life cycle:

* ``__init__`` checks the arguments and expands the file sources (nothing is read);
* :attr:`tokenizer` (and :attr:`tokenizer_vocab_size`, which LightningCLI links to the
  model's vocab size at instantiation) comes from the prepared corpus when there is one,
  else from ``tokenizer_file``, else it is trained on a bounded sample of the training
  documents (cached, see :mod:`roformer_lit.data.tokenizer`);
* :meth:`prepare_data` (Lightning calls it once per node; ``python -m roformer_lit prepare``
  calls only it) tokenizes the corpus into cached, memory-mapped shards
  (:mod:`roformer_lit.data.prepare`) unless they exist;
* :meth:`setup` maps the shards and cuts the blocks: without ``val_files`` the last
  ``val_fraction`` of the documents is validation, by document count as it always was.

The prepared corpus's cache key holds the corpus fingerprint and how the tokenizer is made
(its file's hash, or vocab size, sample size, settings and the split), not ``max_length``,
``batch_size``, ``seed`` or masking, so every run and seed of a sweep, and ``extrapolate``
at any length, read the same shards.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import lightning as L
import torch
from tokenizers import Tokenizer
from torch.utils.data import DataLoader, Dataset

from roformer_lit.data.corpus import BundledSource, split_train_val, validation_count
from roformer_lit.data.dataset import EpochSampler, MLMBlockDataset, ResumableDataLoader
from roformer_lit.data.hf_source import HFSource
from roformer_lit.data.prepare import (
    PreparedCorpus,
    cache_key,
    entry_lock,
    find_prepared,
    prepare_corpus,
    tokenizer_sha256,
)
from roformer_lit.data.probes import (
    PROBE_TASKS,
    ProbeTask,
    ProbeTrainBatches,
    ProbeValidation,
    probe_task,
    probe_tokenizer,
)
from roformer_lit.data.shards import TokenBlocks, TokenStream
from roformer_lit.data.sources import DocumentSource, FileSource, expand_paths
from roformer_lit.data.tokenizer import (
    TOKENIZER_SETTINGS,
    SpecialTokens,
    default_cache_dir,
    file_sha256,
    load_or_train_tokenizer,
    load_tokenizer_file,
    training_sample,
)
from roformer_lit.errors import ConfigError
from roformer_lit.validation import (
    MAX_WORKERS,
    Rule,
    boolean,
    check_arguments,
    check_fits_in_memory,
    int_in,
    non_empty_text,
    one_of,
    optional,
    seed,
    size,
    unit_interval_open,
    unit_interval_open_right,
)

#: Where validation places its tokens (``validation_positions``): ``0 .. L-1``, or sorted
#: draws from ``[0, random_positions)`` as training draws them.
VALIDATION_POSITIONS = ("ordinary", "random")
#: Training batches per epoch of a probe (each a fresh draw; epochs only renumber them).
PROBE_EPOCH_BATCHES = 10_000
#: Validation sequences of a probe when ``max_val_blocks`` is null.
PROBE_VAL_SEQUENCES = 256
#: Settings that name or shape a corpus: a probe builds its own data and refuses them.
_CORPUS_ONLY = ("train_files", "val_files", "dataset", "tokenizer_file", "max_train_blocks")


def info(message: str) -> None:
    """One information line on stderr, from the first process only (not from every DDP rank)."""
    if os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) == "0":
        print(message, file=sys.stderr, flush=True)


#: Every argument of :class:`MLMDataModule` with a range of its own, and what it accepts
#: (checked by :func:`~roformer_lit.validation.check_arguments`; the settings that must
#: agree with each other are checked after it).
DATA_RULES: dict[str, Rule] = {
    "val_fraction": unit_interval_open,
    "text_field": non_empty_text,
    "dataset": optional(non_empty_text),
    "dataset_streaming": boolean,
    "vocab_size": size(100),
    "tokenizer_sample_mb": size(),
    "max_length": size(8),
    "batch_size": size(),
    "mlm_probability": unit_interval_open,
    "num_workers": int_in(0, MAX_WORKERS),
    "num_proc": optional(int_in(1, MAX_WORKERS)),
    "seed": seed,
    "max_val_blocks": optional(size()),
    "max_train_blocks": optional(size()),
    "document_mask": boolean,
    "random_positions": optional(size(8)),
    "validation_positions": one_of(*VALIDATION_POSITIONS),
    "probe": optional(non_empty_text),
    "probe_min_length": size(),
    "probe_max_length": size(),
    "probe_symbols": size(2),
    "probe_hint": unit_interval_open_right,
}


def _check_probe(settings: dict[str, Any]) -> ProbeTask | None:
    """The probe task ``settings["probe"]`` names (None: the corpus), its settings checked:
    one ConfigError line for a bad value, a corpus setting beside a probe, or a
    ``max_length`` shorter than the task's sequences at ``probe_max_length``."""
    if settings["probe"] is None:
        if settings["probe_hint"]:
            raise ConfigError(
                f"data.probe_hint={settings['probe_hint']} needs data.probe (a task that takes "
                "a hint); leave it 0 for a corpus"
            )
        return None
    task = probe_task(settings["probe"])
    for name in _CORPUS_ONLY:
        if settings[name] is not None:
            raise ConfigError(
                f"data.{name}={settings[name]!r} cannot go with data.probe={task.name!r} "
                "(a probe builds its own data): leave it null"
            )
    if settings["document_mask"]:
        raise ConfigError(
            f"data.document_mask=true cannot go with data.probe={task.name!r} (a probe "
            "sequence is one document): leave it false"
        )
    symbols, low, high = (
        settings[k] for k in ("probe_symbols", "probe_min_length", "probe_max_length")
    )
    if low > high:
        raise ConfigError(
            f"data.probe_min_length must be <= data.probe_max_length={high}, got {low}"
        )
    task.check(high, symbols)
    if settings["probe_hint"] and task.hint is None:
        takers = ", ".join(name for name, t in PROBE_TASKS.items() if t.hint is not None)
        raise ConfigError(
            f"data.probe_hint={settings['probe_hint']} means nothing for probe {task.name!r} "
            f"(the tasks that take a hint: {takers}); leave it 0"
        )
    needed = task.sequence_length(high)
    if settings["max_length"] < needed:
        raise ConfigError(
            f"data.max_length={settings['max_length']} is too short for probe {task.name!r} "
            f"at data.probe_max_length={high}: its sequences have {needed} tokens; set "
            f"data.max_length >= {needed}"
        )
    return task


#: A guess on the high side of what one symbol of a probe vocabulary costs (its entry in
#: the Python dict and in the tokenizer's own tables): the vocabulary's bytes.
PROBE_BYTES_PER_SYMBOL = 256


def data_bytes(settings: dict[str, Any], task: ProbeTask | None) -> tuple[int, str]:
    """A lower bound on the bytes the data settings allocate at once, and what in words:
    a batch's ``input_ids``, ``labels`` and ``position_ids`` (``3 * 8 * B * L``); with
    ``random_positions`` ``R`` one draw of positions (a permutation of ``[0, R)``, ``8 R``);
    for a probe its validation set (``3 * 8 * N * L``, ``N`` sequences), its vocabulary
    (:data:`PROBE_BYTES_PER_SYMBOL` per symbol) and a batch's draw over the symbols
    (``8 * B * S``: ``recall`` orders the keys of each row)."""
    batch, length = settings["batch_size"], settings["max_length"]
    need = 3 * 8 * batch * length
    names = ["data.batch_size", "data.max_length"]
    if settings["random_positions"] is not None:
        need += 8 * settings["random_positions"]
        names.append("data.random_positions")
    if task is not None:
        symbols = settings["probe_symbols"]
        count = settings["max_val_blocks"] or PROBE_VAL_SEQUENCES
        need += 3 * 8 * count * length + PROBE_BYTES_PER_SYMBOL * symbols + 8 * batch * symbols
        names += ["data.max_val_blocks", "data.probe_symbols"]
    values = ", ".join(f"{name}={settings[name.split('.')[1]]}" for name in names)
    return need, f"the data settings ({values})"


def check_data_arguments(settings: dict[str, Any]) -> ProbeTask | None:
    """Every check of :class:`MLMDataModule`'s arguments that reads nothing and builds
    nothing (``settings``: every argument by name): the :data:`DATA_RULES`, the settings
    that must agree with each other, the probe's (:func:`_check_probe`), and the bytes the
    sizes would allocate against this machine's memory (:func:`data_bytes`). The first
    failure is one ConfigError line. ``fit`` and ``sweep`` call it before anything is
    created (:mod:`roformer_lit.commands.prelaunch`), the data module again when it is
    built. Returns the probe task (None: the corpus)."""
    check_arguments(settings, DATA_RULES, "data.")
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
    if span is not None and settings["document_mask"]:
        raise ConfigError(
            f"data.random_positions={span} cannot go with data.document_mask="
            "true (positions restart in every document): set one of them off"
        )
    dataset = settings["dataset"]
    if dataset is not None and settings["train_files"] is not None:
        raise ConfigError(
            "data.train_files and data.dataset both name the training corpus: give one"
        )
    if settings["dataset_val_split"] is not None and settings["val_files"] is not None:
        raise ConfigError(
            "data.val_files and data.dataset_val_split both name the validation corpus: give one"
        )
    if dataset is None:  # settings that only mean something for a datasets source
        for name, default in (
            ("dataset_val_split", None),
            ("dataset_config", None),
            ("dataset_split", "train"),
            ("dataset_streaming", False),
        ):
            value = settings[name]
            if value != default:
                raise ConfigError(
                    f"data.{name}={value!r} needs data.dataset (a name or a directory)"
                )
    task = _check_probe(settings)
    check_fits_in_memory(*data_bytes(settings, task))
    return task


class MLMDataModule(L.LightningDataModule):
    """Masked-language-model data: packed blocks of ``max_length`` tokens with BERT masking.

    Args:
        train_files: corpus files (``.txt``/``.jsonl``, optionally ``.gz``/``.xz``/``.zst``,
            or ``.parquet``): one path, a list, a glob or a directory; ``None`` (and no
            ``dataset``) uses the bundled English corpus (Python documentation prose).
        val_files: validation files, in the same forms; ``None`` holds out the last
            ``val_fraction`` of the training documents (by position, deterministic).
        val_fraction: fraction of documents held out when there is no validation source.
        text_field: field holding the text in ``.jsonl``/``.parquet`` files and datasets.
        dataset: a Hugging Face dataset instead of files: a Hub name (``wikitext``) or a
            ``save_to_disk`` directory (needs ``datasets``: ``pip install 'roformer-lit[corpora]'``).
        dataset_config: the Hub dataset's configuration (``wikitext-103-raw-v1``).
        dataset_split: the split trained on.
        dataset_val_split: a split used for validation (``validation``); ``None`` holds out
            ``val_fraction`` of the training split unless ``val_files`` is given.
        dataset_streaming: stream a Hub dataset instead of downloading it first.
        tokenizer_file: a ``tokenizer.json`` to use instead of training one (must define
            ``[PAD]``, ``[SEP]``, ``[MASK]``).
        vocab_size: requested vocab size of the trained WordPiece tokenizer (the real one,
            :attr:`tokenizer_vocab_size`, may be smaller on a small corpus; saved in the
            hyperparameters as ``requested_vocab_size``).
        tokenizer_sample_mb: the tokenizer is trained on the first this many million
            characters of the training documents (a smaller corpus: all of it).
        max_length: tokens per block.
        batch_size: blocks per batch.
        mlm_probability: probability that a non-special token is selected for prediction.
        num_workers: DataLoader worker processes (results do not depend on it).
        num_proc: tokenizer processes when preparing (default: the cores).
        seed: seeds shuffling and masking.
        cache_dir: cache directory: trained tokenizers directly in it, prepared corpora in
            ``<cache_dir>/prepared`` (default ``$ROFORMER_LIT_CACHE`` or
            ``~/.cache/roformer_lit``, with ``tokenizers/`` and ``prepared/``).
        max_val_blocks: keep only the first N validation blocks.
        max_train_blocks: keep only the first N training blocks.
        document_mask: batches carry ``segment_ids`` (``[B, L]``, which document of the
            block each token belongs to, from the document ends the shards keep), so a token
            attends only to its own document and positions restart at each (ModernBERT's
            choice); off (default), documents of a block see each other (BERT, cramming).
        random_positions: randomized positions (Ruoss et al. 2023) drawn from ``[0, R)``,
            ``R`` this value (``>= max_length``): every training block carries
            ``position_ids``, ``max_length`` distinct positions drawn without replacement
            and sorted, fresh per (seed, epoch, block) like the masking, which the model
            uses in place of ``0 .. L-1`` (relative schemes see the implied distances).
            Validation uses the ordinary positions unless ``validation_positions`` is
            ``random``. ``None`` (default): off. Cannot go with ``document_mask`` (positions restart in every
            document). With ``probe``, each training batch's positions come from a stream
            of their own (:mod:`roformer_lit.data.probes.dataset`).
        probe: a synthetic position probe of :data:`~roformer_lit.data.probes.PROBE_TASKS`
            (``copy``, ``reverse``, ``sort``, ``recall``, ``odds_first``) instead of a corpus;
            ``None`` (default): the corpus. The data are then built in memory
            (:mod:`roformer_lit.data.probes`): the probe's word-level tokenizer, training
            batches of one input length each, drawn uniformly from ``[probe_min_length,
            probe_max_length]`` and keyed by ``(seed, epoch, batch)`` (``PROBE_EPOCH_BATCHES``
            a epoch), and ``max_val_blocks`` (default ``PROBE_VAL_SEQUENCES``) fixed
            validation sequences at ``probe_max_length``. Only the answer slots are masked
            and labelled (``mlm_probability`` and ``vocab_size`` are unused); ``max_length``
            must hold the task's longest sequence; corpus settings are refused.
        probe_min_length, probe_max_length: the range of the probe's input length ``n``.
        probe_symbols: the probe's number of symbols (ids ``3 .. 3 + probe_symbols - 1``).
        probe_hint: a training hint in ``[0, 1)`` for the tasks that take one (``recall``:
            the share of training pairs whose value is its key's fixed partner; see
            :mod:`roformer_lit.data.probes.tasks`); validation is never hinted. 0 (default):
            none.
        validation_positions: where validation places its tokens: ``ordinary`` (default,
            ``0 .. L-1``) or ``random`` (needs ``random_positions``): every validation
            sequence carries sorted distinct positions of ``[0, R)`` drawn as training
            draws them, fixed per (seed, sequence) -- the protocol of Ruoss et al. 2023,
            whose evaluation draws positions as their training does.
    """

    def __init__(
        self,
        *,
        train_files: list[str] | str | None = None,
        val_files: list[str] | str | None = None,
        val_fraction: float = 0.05,
        text_field: str = "text",
        dataset: str | None = None,
        dataset_config: str | None = None,
        dataset_split: str = "train",
        dataset_val_split: str | None = None,
        dataset_streaming: bool = False,
        tokenizer_file: str | None = None,
        vocab_size: int = 8192,
        tokenizer_sample_mb: int = 64,
        max_length: int = 128,
        batch_size: int = 32,
        mlm_probability: float = 0.15,
        num_workers: int = 0,
        num_proc: int | None = None,
        seed: int = 0,
        cache_dir: str | None = None,
        max_val_blocks: int | None = None,
        max_train_blocks: int | None = None,
        document_mask: bool = False,
        random_positions: int | None = None,
        probe: str | None = None,
        probe_min_length: int = 1,
        probe_max_length: int = 16,
        probe_symbols: int = 16,
        probe_hint: float = 0.0,
        validation_positions: str = "ordinary",
    ) -> None:
        hparams = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        super().__init__()
        self.probe_task = check_data_arguments(hparams)
        # The requested vocab size is saved as ``requested_vocab_size``: the model's
        # ``vocab_size`` is the tokenizer's real size (linked by the CLI), and Lightning
        # refuses a data-module hyperparameter that contradicts a model one.
        hparams["requested_vocab_size"] = hparams.pop("vocab_size")
        self.save_hyperparameters(hparams)
        self.train_files = (
            None if train_files is None else expand_paths(train_files, "data.train_files")
        )
        self.val_files = None if val_files is None else expand_paths(val_files, "data.val_files")
        self.val_fraction = val_fraction
        self.text_field = text_field
        self.tokenizer_file = tokenizer_file
        self.vocab_size = vocab_size
        self.tokenizer_sample_mb = tokenizer_sample_mb
        self.max_length = max_length
        self.batch_size = batch_size
        self.mlm_probability = mlm_probability
        self.num_workers = num_workers
        self.num_proc = num_proc
        self.seed = seed
        self.cache_dir = cache_dir
        self.max_val_blocks = max_val_blocks
        self.max_train_blocks = max_train_blocks
        self.document_mask = document_mask
        self.random_positions = random_positions
        self.validation_positions = validation_positions
        self.probe_min_length, self.probe_max_length = probe_min_length, probe_max_length
        self.probe_symbols = probe_symbols
        self.probe_hint = probe_hint

        self.train_source: DocumentSource
        if dataset is not None:
            hf = dict(config=dataset_config, text_field=text_field, streaming=dataset_streaming)
            self.train_source = HFSource(dataset, split=dataset_split, **hf)  # type: ignore[arg-type]
        elif self.train_files is not None:
            self.train_source = FileSource(tuple(self.train_files), text_field)
        else:
            self.train_source = BundledSource()
        self.val_source: DocumentSource | None = None
        if self.val_files is not None:
            self.val_source = FileSource(tuple(self.val_files), text_field)
        elif dataset_val_split is not None:
            self.val_source = HFSource(dataset, split=dataset_val_split, **hf)  # type: ignore[arg-type]

        self._tokenizer: Tokenizer | None = None
        self._special: SpecialTokens | None = None
        self._train_key: str | None = None
        self._prepared: tuple[PreparedCorpus, PreparedCorpus | None] | None = None
        self.tokenizer_path: Path | None = None
        self.train_dataset: MLMBlockDataset | ProbeTrainBatches | None = None
        self.val_dataset: MLMBlockDataset | ProbeValidation | None = None

    # ----------------------------------------------------------------- cache locations
    @property
    def prepared_root(self) -> Path:
        """Where prepared corpora live."""
        if self.cache_dir is not None:
            return Path(self.cache_dir).expanduser() / "prepared"
        return default_cache_dir().parent / "prepared"

    def _tokenizer_spec(self) -> dict[str, Any]:
        """Everything that decides the tokenizer (part of the prepared corpus's key)."""
        if self.tokenizer_file is not None:
            path = Path(self.tokenizer_file).expanduser()
            if not path.is_file():  # stat only: a FIFO is refused, not opened
                load_tokenizer_file(path)  # raises the one-line error
            try:
                return {"file_sha256": file_sha256(path)}
            except OSError as e:
                raise ConfigError(f"cannot read tokenizer file {path}: {e.strerror}") from None
        return {
            "vocab_size": self.vocab_size,
            "sample_mb": self.tokenizer_sample_mb,
            "settings": TOKENIZER_SETTINGS,
            "val_fraction": self.val_fraction if self.val_source is None else None,
        }

    @property
    def train_key(self) -> str:
        """Cache key of the prepared training corpus."""
        if self._train_key is None:
            self._train_key = cache_key(
                {"source": self.train_source.fingerprint(), "tokenizer": self._tokenizer_spec()}
            )
        return self._train_key

    # ----------------------------------------------------------------- tokenizer
    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer: the prepared corpus's, ``tokenizer_file``, or trained on a sample."""
        if self._tokenizer is None and self.probe_task is not None:
            self._tokenizer = probe_tokenizer(self.probe_symbols)
            self._special = SpecialTokens.from_tokenizer(self._tokenizer)
        if self._tokenizer is None:
            prepared = find_prepared(self.prepared_root, self.train_key)
            if prepared is not None:
                tok = prepared.tokenizer()
                self.tokenizer_path = prepared.tokenizer_path
            elif self.tokenizer_file is not None:
                tok = load_tokenizer_file(self.tokenizer_file)
                self.tokenizer_path = Path(self.tokenizer_file).expanduser()
            else:
                tok = self._trained_tokenizer()
            self._special = SpecialTokens.from_tokenizer(tok)
            self._tokenizer = tok
            real = tok.get_vocab_size(with_added_tokens=True)
            if self.tokenizer_file is None and real < self.vocab_size:
                info(
                    f"the corpus supports {real} tokens, fewer than data.vocab_size="
                    f"{self.vocab_size}; training uses a vocabulary of {real}"
                )
        return self._tokenizer

    def _trained_tokenizer(self) -> Tokenizer:
        """The tokenizer of a first preparation, trained (or found cached) under the entry's
        lock: a run preparing the same corpus meanwhile waits, then finds the prepared
        corpus or this tokenizer in the cache instead of training a different one."""
        with entry_lock(self.prepared_root, self.train_key):
            prepared = find_prepared(self.prepared_root, self.train_key)
            if prepared is not None:
                self.tokenizer_path = prepared.tokenizer_path
                return prepared.tokenizer()
            sample = training_sample(
                self.train_source.documents(),
                self.tokenizer_sample_mb * 1_000_000,
                self.val_fraction if self.val_source is None else None,
            )
            tok, self.tokenizer_path = load_or_train_tokenizer(
                sample, self.vocab_size, self.cache_dir
            )
            return tok

    @property
    def special_tokens(self) -> SpecialTokens:
        """Ids of [PAD], [UNK], [CLS], [SEP], [MASK]."""
        self.tokenizer  # noqa: B018 - loads the tokenizer and special ids
        assert self._special is not None
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

    # ----------------------------------------------------------------- preparation
    def prepare(self) -> tuple[PreparedCorpus, PreparedCorpus | None]:
        """The prepared training (and validation) corpus, tokenizing what is not cached yet."""
        if self.probe_task is not None:
            raise ConfigError(
                f"data.probe={self.probe_task.name!r} builds its data in memory: there is no "
                "corpus to prepare or read"
            )
        if self._prepared is None:
            tok = self.tokenizer
            kw: dict[str, Any] = dict(num_proc=self.num_proc, log=info)
            train = prepare_corpus(self.train_source, tok, self.prepared_root, self.train_key, **kw)
            val = None
            if self.val_source is not None:
                key = cache_key(
                    {"source": self.val_source.fingerprint(), "tokenizer": tokenizer_sha256(tok)}
                )
                val = prepare_corpus(self.val_source, tok, self.prepared_root, key, **kw)
            self._prepared = (train, val)
        return self._prepared

    def prepare_data(self) -> None:
        """Lightning's once-per-node hook: prepare the corpus (a no-op when cached or a probe)."""
        if self.probe_task is None:
            self.prepare()

    def split_ranges(self) -> tuple[tuple[TokenStream, int, int], tuple[TokenStream, int, int]]:
        """((stream, start, stop) of training tokens, (stream, start, stop) of validation)."""
        train, val = self.prepare()
        stream = train.stream()
        if val is not None:
            val_stream = val.stream()
            return (stream, 0, stream.tokens), (val_stream, 0, val_stream.tokens)
        n = stream.documents
        cut = n - validation_count(n, self.val_fraction)
        boundary = int(stream.doc_ends[cut - 1])
        return (stream, 0, boundary), (stream, boundary, stream.tokens)

    def documents(self) -> tuple[list[str], list[str]]:
        """(train documents, validation documents) as lists (reads them all: small corpora)."""
        if self.probe_task is not None:
            self.prepare()  # refused: a probe has no documents
        docs = list(self.train_source.documents())
        if self.val_source is None:
            return split_train_val(docs, self.val_fraction)
        return docs, list(self.val_source.documents())

    # ----------------------------------------------------------------- datasets
    def _make_dataset(
        self, where: tuple[TokenStream, int, int], split: str, cap: int | None
    ) -> MLMBlockDataset:
        blocks = TokenBlocks(*where, self.max_length, limit=cap, split=split)
        return MLMBlockDataset(
            blocks,
            mlm_probability=self.mlm_probability,
            mask_token_id=self.mask_token_id,
            special_token_ids=self.special_tokens.all_ids,
            vocab_size=self.tokenizer_vocab_size,
            seed=self.seed,
            fixed_masking=(split != "train"),
            document_mask=self.document_mask,
            random_positions=self._positions_range(split),
        )

    def setup(self, stage: str | None = None) -> None:
        """Map the prepared shards and cut both splits into blocks (once)."""
        if self.train_dataset is not None and self.val_dataset is not None:
            return
        if self.probe_task is not None:
            self._setup_probe()
            return
        train, val = self.split_ranges()
        if self.train_dataset is None:
            self.train_dataset = self._make_dataset(train, "train", self.max_train_blocks)
        if self.val_dataset is None:
            self.val_dataset = self._make_dataset(val, "validation", self.max_val_blocks)

    def _setup_probe(self) -> None:
        """The probe's training batches and validation sequences (built in memory)."""
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
                random_positions=self._positions_range("validation"),
            )

    def _positions_range(self, split: str) -> int | None:
        """The range randomized positions of ``split`` are drawn from (None: ordinary)."""
        if split != "train" and self.validation_positions != "random":
            return None
        return self.random_positions

    # ----------------------------------------------------------------- loaders
    def _current_epoch(self) -> int:
        trainer = getattr(self, "trainer", None)
        return int(trainer.current_epoch) if trainer is not None else 0

    def _loader(self, dataset: Dataset | None, shuffle: bool) -> DataLoader:
        if dataset is None:
            self.setup()
            dataset = self.train_dataset if shuffle else self.val_dataset
        assert dataset is not None
        sampler = EpochSampler(
            len(dataset), shuffle=shuffle, seed=self.seed, epoch=self._current_epoch()
        )
        # The training loader is resumable mid-epoch (its position goes into checkpoints).
        # Every loader has its own generator: otherwise each new DataLoader iterator draws
        # its worker base seed from torch's global RNG, which dropout uses, so the dropout
        # masks of a resumed run would depend on how many iterators were created before.
        loader_class = ResumableDataLoader if shuffle else DataLoader
        whole_batches = isinstance(dataset, ProbeTrainBatches)  # an item is a batch
        return loader_class(
            dataset,
            batch_size=None if whole_batches else self.batch_size,
            sampler=sampler,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
            pin_memory=torch.cuda.is_available(),
            generator=torch.Generator().manual_seed(self.seed),
        )

    def train_dataloader(self) -> DataLoader:
        """Shuffled (order seeded by (seed, epoch)); masking fresh per epoch; resumable
        mid-epoch (:class:`~roformer_lit.data.dataset.ResumableDataLoader`)."""
        return self._loader(self.train_dataset, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        """Validation blocks in order, with masking fixed by ``seed``."""
        return self._loader(self.val_dataset, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        """Same as :meth:`val_dataloader`."""
        return self.val_dataloader()

    def predict_dataloader(self) -> DataLoader:
        """Same as :meth:`val_dataloader`."""
        return self.val_dataloader()
