"""``CorpusDataModule``: a corpus -> WordPiece tokenizer -> prepared token shards ->
BERT-masked blocks (the base, :class:`~roformer_lit.data.datamodule.PretrainDataModule`,
owns the loaders).

Blocks are packed (see :mod:`roformer_lit.data.shards`), so there is no padding and no
attention mask. With ``document_mask`` batches also carry ``segment_ids``.

Life cycle:

* ``__init__`` checks the arguments and expands the file sources (nothing is read);
* :attr:`tokenizer` comes from the prepared corpus when there is one, else from
  ``tokenizer_file``, else it is trained on a bounded sample of the training documents
  (cached, see :mod:`roformer_lit.data.tokenizer`); built for the evaluation of a
  checkpoint, it is the run's own, stored in the checkpoint
  (:func:`~roformer_lit.data.stored_tokenizer.given_run_tokenizer`), whatever files are
  read: another ``val_files`` changes what the settings would train, not the model's ids;
* :meth:`prepare_data` (Lightning calls it once per node; ``python -m roformer_lit prepare``
  calls only it) tokenizes the corpus into cached, memory-mapped shards
  (:mod:`roformer_lit.data.prepare`) unless they exist;
* :meth:`setup` maps the shards and cuts the blocks: without ``val_files`` the last
  ``val_fraction`` of the documents is validation, by document count as it always was.

The prepared corpus's cache key holds the corpus fingerprint and how the tokenizer is made
(its file's hash, or vocab size, sample size, settings and the split), not ``max_length``,
``batch_size``, ``seed`` or masking, so every run and seed of a sweep, and ``extrapolate``
at any length, read the same shards.

What the run saw, by content rather than by path, is :meth:`CorpusDataModule.data_identity`
(:mod:`roformer_lit.training.data_identity`): read from the prepared corpora's ``meta.json``,
it costs no read of the corpus.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from tokenizers import Tokenizer

from roformer_lit.data.corpus import BundledSource, split_train_val, validation_count
from roformer_lit.data.datamodule import BASE_RULES, PretrainDataModule, info
from roformer_lit.data.dataset import MLMBlockDataset
from roformer_lit.data.hf_source import HFSource
from roformer_lit.data.overlap import validation_overlap
from roformer_lit.data.prepare import (
    PreparedCorpus,
    cache_key,
    entry_lock,
    find_prepared,
    prepare_corpus,
    tokenizer_sha256,
)
from roformer_lit.data.shards import TokenBlocks, TokenStream
from roformer_lit.data.sources import DocumentSource, FileSource, expand_paths
from roformer_lit.data.stored_tokenizer import given_run_tokenizer
from roformer_lit.data.tokenizer import (
    TOKENIZER_SETTINGS,
    default_cache_dir,
    file_sha256,
    load_or_train_tokenizer,
    load_tokenizer_file,
    training_sample,
)
from roformer_lit.errors import ConfigError
from roformer_lit.training.data_identity import data_identity
from roformer_lit.validation import (
    MAX_WORKERS,
    Rule,
    boolean,
    int_in,
    non_empty_text,
    optional,
    size,
    unit_interval_open,
)

#: The corpus module's arguments with a range of their own (beside the base's).
CORPUS_RULES: dict[str, Rule] = {
    **BASE_RULES,
    "val_fraction": unit_interval_open,
    "text_field": non_empty_text,
    "dataset": optional(non_empty_text),
    "dataset_streaming": boolean,
    "vocab_size": size(100),
    "tokenizer_sample_mb": size(),
    "mlm_probability": unit_interval_open,
    "num_proc": optional(int_in(1, MAX_WORKERS)),
    "max_train_blocks": optional(size()),
    "document_mask": boolean,
}


class CorpusDataModule(PretrainDataModule):
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
        mlm_probability: probability that a non-special token is selected for prediction.
        num_proc: tokenizer processes when preparing (default: the cores).
        cache_dir: cache directory: trained tokenizers directly in it, prepared corpora in
            ``<cache_dir>/prepared`` (default ``$ROFORMER_LIT_CACHE`` or
            ``~/.cache/roformer_lit``, with ``tokenizers/`` and ``prepared/``).
        max_train_blocks: keep only the first N training blocks.
        document_mask: batches carry ``segment_ids`` (``[B, L]``, which document of the
            block each token belongs to, from the document ends kept beside the shards), so a token
            attends only to its own document and positions restart at each (ModernBERT's
            choice); off (default), documents of a block see each other (BERT, cramming).
            Cannot go with ``random_positions`` (positions restart in every document).
        **kwargs: the base's arguments (:class:`~roformer_lit.data.datamodule.PretrainDataModule`:
            ``max_length``, ``batch_size``, ``num_workers``, ``seed``, ``max_val_blocks``,
            ``random_positions``, ``validation_positions``).
    """

    RULES: ClassVar[dict[str, Rule]] = CORPUS_RULES
    # The requested vocab size is saved as ``requested_vocab_size``: the model's
    # ``vocab_size`` is the tokenizer's real size (linked by the CLI), and Lightning
    # refuses a data-module hyperparameter that contradicts a model one.
    SAVED_AS: ClassVar[dict[str, str]] = {"vocab_size": "requested_vocab_size"}
    DECIDES_TOKENIZER: ClassVar[tuple[str, ...]] = (
        "tokenizer_file",
        "vocab_size",
        "tokenizer_sample_mb",
    )

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
        mlm_probability: float = 0.15,
        num_proc: int | None = None,
        cache_dir: str | None = None,
        max_train_blocks: int | None = None,
        document_mask: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.train_source: DocumentSource
        if dataset is not None:
            hf = dict(config=dataset_config, text_field=text_field, streaming=dataset_streaming)
            self.train_source = HFSource(dataset, split=dataset_split, **hf)  # type: ignore[arg-type]
        elif train_files is not None:
            files = expand_paths(train_files, "data.train_files")
            self.train_source = FileSource(tuple(files), text_field)
        else:
            self.train_source = BundledSource()
        self.val_source: DocumentSource | None = None
        if val_files is not None:
            files = expand_paths(val_files, "data.val_files")
            self.val_source = FileSource(tuple(files), text_field)
        elif dataset_val_split is not None:
            self.val_source = HFSource(dataset, split=dataset_val_split, **hf)  # type: ignore[arg-type]

        self._tokenizer: Tokenizer | None = None
        self._run_tokenizer = given_run_tokenizer()
        self._train_key: str | None = None
        self._prepared: tuple[PreparedCorpus, PreparedCorpus | None] | None = None
        self.tokenizer_path: Path | None = None

    # ----------------------------------------------------------------- arguments
    @classmethod
    def check_combinations(cls, settings: Mapping[str, Any]) -> None:
        """The base's, then: randomized positions against the document mask, and the
        corpus sources (files or a dataset, not both; a dataset's own settings need one)."""
        super().check_combinations(settings)
        span = settings["random_positions"]
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
                "data.val_files and data.dataset_val_split both name the validation corpus: "
                "give one"
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

    @classmethod
    def planned_vocab_size(cls, settings: Mapping[str, Any]) -> int:
        """The requested vocabulary size (the tokenizer's may come out smaller)."""
        return int(settings["vocab_size"])

    def describe(self) -> str:
        """The training data in a few words (``data_identity.json``'s ``data``): the
        source's own phrase, which names what it is (``the bundled corpus``, a file's path,
        ``dataset 'wikitext', split 'train'``)."""
        return self.train_source.describe()

    # ----------------------------------------------------------------- cache locations
    @property
    def prepared_root(self) -> Path:
        """Where prepared corpora live."""
        if self.cache_dir is not None:
            return Path(self.cache_dir).expanduser() / "prepared"
        return default_cache_dir().parent / "prepared"

    def _tokenizer_spec(self, held_out: bool | None = None) -> dict[str, Any]:
        """Everything that decides the tokenizer (part of the prepared corpus's key).
        ``held_out``: whether validation is a held-out share of the training files (the
        tokenizer trains on the rest), by default whether this module has no validation
        files."""
        if self.tokenizer_file is not None:
            path = Path(self.tokenizer_file).expanduser()
            if not path.is_file():  # stat only: a FIFO is refused, not opened
                load_tokenizer_file(path)  # raises the one-line error
            try:
                return {"file_sha256": file_sha256(path)}
            except OSError as e:
                raise ConfigError(f"cannot read tokenizer file {path}: {e.strerror}") from None
        if held_out is None:
            held_out = self.val_source is None
        return {
            "vocab_size": self.requested_vocab_size,
            "sample_mb": self.tokenizer_sample_mb,
            "settings": TOKENIZER_SETTINGS,
            "val_fraction": self.val_fraction if held_out else None,
        }

    @property
    def train_key(self) -> str:
        """Cache key of the prepared training corpus: of the source and how the settings
        make the tokenizer, or, given the evaluated run's tokenizer, :meth:`_run_key`."""
        if self._train_key is None:
            if self._run_tokenizer is not None:
                self._train_key = self._run_key(self._run_tokenizer)
            else:
                self._train_key = cache_key(
                    {"source": self.train_source.fingerprint(), "tokenizer": self._tokenizer_spec()}
                )
        return self._train_key

    def _run_key(self, tokenizer: Tokenizer) -> str:
        """The cache key of the training corpus tokenized with the evaluated run's
        ``tokenizer``: the settings' own entry where it holds that tokenizer's tokens (the
        run's own corpus, prepared when it trained), else one keyed by the tokenizer itself
        (as a validation corpus is), never the settings' key with other tokens in it. The
        run's entry is looked for as it trained with validation held out of its training
        files and with validation files: an evaluation on ``--data.val_files`` of a run that
        held out its validation share reads the run's own entry, not a second tokenization.
        """
        sha = tokenizer_sha256(tokenizer)
        source = self.train_source.fingerprint()
        for held_out in (self.val_source is None, self.val_source is not None):
            try:
                own = cache_key({"source": source, "tokenizer": self._tokenizer_spec(held_out)})
            except ConfigError:  # the run's tokenizer file is gone: its tokenizer needs it not
                break
            prepared = find_prepared(self.prepared_root, own)
            if prepared is not None and prepared.meta.get("tokenizer_sha256") == sha:
                return own
        return cache_key({"source": source, "tokenizer": sha})

    # ----------------------------------------------------------------- tokenizer
    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer: the evaluated run's (see the module), else the prepared corpus's,
        ``tokenizer_file``, or trained on a sample."""
        if self._tokenizer is None and self._run_tokenizer is not None:
            self._tokenizer = self._run_tokenizer
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
            self._tokenizer = tok
            real = tok.get_vocab_size(with_added_tokens=True)
            if self.tokenizer_file is None and real < self.requested_vocab_size:
                info(
                    f"the corpus supports {real} tokens, fewer than data.vocab_size="
                    f"{self.requested_vocab_size}; training uses a vocabulary of {real}"
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
                sample, self.requested_vocab_size, self.cache_dir
            )
            return tok

    # ----------------------------------------------------------------- preparation
    def prepare(self) -> tuple[PreparedCorpus, PreparedCorpus | None]:
        """The prepared training (and validation) corpus, tokenizing what is not cached yet;
        one ``note:`` line where the validation source is training data
        (:func:`~roformer_lit.data.overlap.validation_overlap`)."""
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
                note = validation_overlap(self.train_source, self.val_source, train.meta, val.meta)
                if note is not None:
                    info(note)
            self._prepared = (train, val)
        return self._prepared

    def data_identity(self) -> str:
        """The content identity of the training and validation tokens and the tokenizer
        (:func:`~roformer_lit.training.data_identity.data_identity` of the prepared
        corpora's ``meta.json``), preparing them if that has not been done."""
        train, val = self.prepare()
        return data_identity(train.meta, None if val is None else val.meta)

    def prepare_data(self) -> None:
        """Lightning's once-per-node hook: prepare the corpus (a no-op when cached)."""
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
            random_positions=self.positions_range(split),
        )

    def build_datasets(self) -> None:
        """Map the prepared shards and cut both splits into blocks."""
        train, val = self.split_ranges()
        if self.train_dataset is None:
            self.train_dataset = self._make_dataset(train, "train", self.max_train_blocks)
        if self.val_dataset is None:
            self.val_dataset = self._make_dataset(val, "validation", self.max_val_blocks)
