"""``MLMDataModule``: corpus -> WordPiece tokenizer -> packed blocks -> BERT-masked batches.

Batches are ``{"input_ids": LongTensor[B, L], "labels": LongTensor[B, L]}`` with
``labels == -100`` where no prediction is made. Blocks are packed (see
:mod:`roformer_lit.data.packing`), so there is no padding and no attention mask.

The tokenizer is loaded (or trained and cached) on first access of :attr:`tokenizer`,
:attr:`tokenizer_vocab_size`, :attr:`pad_token_id` or :attr:`mask_token_id`, which work
right after ``__init__`` (no ``setup`` needed) so LightningCLI can link
``data.tokenizer_vocab_size`` to the model's vocab size at instantiation.
"""

from __future__ import annotations

from pathlib import Path

import lightning as L
import torch
from tokenizers import Tokenizer
from torch.utils.data import DataLoader

from roformer_lit.data.corpus import load_default_corpus, read_documents, split_train_val
from roformer_lit.data.dataset import EpochSampler, MLMBlockDataset, ResumableDataLoader
from roformer_lit.data.packing import encode_stream, pack_blocks
from roformer_lit.data.tokenizer import SpecialTokens, load_or_train_tokenizer, load_tokenizer_file
from roformer_lit.errors import ConfigError


def _check(ok: bool, name: str, value: object, valid: str) -> None:
    if not ok:
        raise ConfigError(f"data.{name}={value!r} is invalid: must be {valid}")


class MLMDataModule(L.LightningDataModule):
    """Masked-language-model data: packed blocks of ``max_length`` tokens with BERT masking.

    Args:
        train_files: ``.txt``/``.jsonl`` (optionally ``.gz``/``.xz``) files; ``None`` uses the
            bundled English corpus (Python documentation prose).
        val_files: validation files; ``None`` splits off the last ``val_fraction`` of the
            training documents (by position, deterministic).
        val_fraction: fraction of documents held out when ``val_files`` is ``None``.
        text_field: JSON field holding the text in ``.jsonl`` files.
        tokenizer_file: a ``tokenizer.json`` to use instead of training one (must define
            ``[PAD]``, ``[SEP]``, ``[MASK]``).
        vocab_size: requested vocab size of the trained WordPiece tokenizer (the real one,
            :attr:`tokenizer_vocab_size`, may be smaller on a small corpus).
        max_length: tokens per block.
        batch_size: blocks per batch.
        mlm_probability: probability that a non-special token is selected for prediction.
        num_workers: DataLoader worker processes (results do not depend on it).
        seed: seeds shuffling and masking.
        cache_dir: tokenizer cache directory (default ``$ROFORMER_LIT_CACHE/tokenizers`` or
            ``~/.cache/roformer_lit/tokenizers``).
        max_val_blocks: keep only the first N validation blocks.
        max_train_blocks: keep only the first N training blocks.
    """

    def __init__(
        self,
        *,
        train_files: list[str] | None = None,
        val_files: list[str] | None = None,
        val_fraction: float = 0.05,
        text_field: str = "text",
        tokenizer_file: str | None = None,
        vocab_size: int = 8192,
        max_length: int = 128,
        batch_size: int = 32,
        mlm_probability: float = 0.15,
        num_workers: int = 0,
        seed: int = 0,
        cache_dir: str | None = None,
        max_val_blocks: int | None = None,
        max_train_blocks: int | None = None,
    ) -> None:
        super().__init__()
        _check(max_length >= 8, "max_length", max_length, ">= 8")
        _check(batch_size >= 1, "batch_size", batch_size, ">= 1")
        _check(0.0 < mlm_probability < 1.0, "mlm_probability", mlm_probability, "in (0, 1)")
        _check(vocab_size >= 100, "vocab_size", vocab_size, ">= 100")
        _check(num_workers >= 0, "num_workers", num_workers, ">= 0")
        _check(0.0 < val_fraction < 1.0, "val_fraction", val_fraction, "in (0, 1)")
        _check(bool(text_field), "text_field", text_field, "a non-empty string")
        for name, cap in (
            ("max_val_blocks", max_val_blocks),
            ("max_train_blocks", max_train_blocks),
        ):
            _check(cap is None or cap >= 1, name, cap, ">= 1 or null")
        self.save_hyperparameters()
        self.train_files = [train_files] if isinstance(train_files, str) else train_files
        self.val_files = [val_files] if isinstance(val_files, str) else val_files
        self.val_fraction = val_fraction
        self.text_field = text_field
        self.tokenizer_file = tokenizer_file
        self.vocab_size = vocab_size
        self.max_length = max_length
        self.batch_size = batch_size
        self.mlm_probability = mlm_probability
        self.num_workers = num_workers
        self.seed = seed
        self.cache_dir = cache_dir
        self.max_val_blocks = max_val_blocks
        self.max_train_blocks = max_train_blocks

        self._docs: tuple[list[str], list[str]] | None = None
        self._tokenizer: Tokenizer | None = None
        self._special: SpecialTokens | None = None
        self.tokenizer_path: Path | None = None
        self.train_dataset: MLMBlockDataset | None = None
        self.val_dataset: MLMBlockDataset | None = None

    # ----------------------------------------------------------------- corpus / tokenizer
    def documents(self) -> tuple[list[str], list[str]]:
        """(train documents, validation documents), read once."""
        if self._docs is None:
            if self.train_files is None:
                docs = load_default_corpus()
            else:
                docs = read_documents(self.train_files, self.text_field)
            if self.val_files is None:
                self._docs = split_train_val(docs, self.val_fraction)
            else:
                self._docs = (docs, read_documents(self.val_files, self.text_field))
        return self._docs

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer: loaded from ``tokenizer_file`` or trained on the train split (cached)."""
        if self._tokenizer is None:
            if self.tokenizer_file is not None:
                tok = load_tokenizer_file(self.tokenizer_file)
                self.tokenizer_path = Path(self.tokenizer_file).expanduser()
            else:
                tok, self.tokenizer_path = load_or_train_tokenizer(
                    self.documents()[0], self.vocab_size, self.cache_dir
                )
            self._special = SpecialTokens.from_tokenizer(tok)
            self._tokenizer = tok
        return self._tokenizer

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

    # ----------------------------------------------------------------- datasets
    def _make_dataset(self, docs: list[str], split: str, cap: int | None) -> MLMBlockDataset:
        stream = encode_stream(self.tokenizer, docs, self.special_tokens.sep)
        blocks = pack_blocks(stream, self.max_length, split=split)
        if cap is not None:
            blocks = blocks[:cap]
        return MLMBlockDataset(
            blocks,
            mlm_probability=self.mlm_probability,
            mask_token_id=self.mask_token_id,
            special_token_ids=self.special_tokens.all_ids,
            vocab_size=self.tokenizer_vocab_size,
            seed=self.seed,
            fixed_masking=(split != "train"),
        )

    def setup(self, stage: str | None = None) -> None:
        """Tokenize and pack both splits (once; later calls are no-ops)."""
        train_docs, val_docs = self.documents()
        if self.train_dataset is None:
            self.train_dataset = self._make_dataset(train_docs, "train", self.max_train_blocks)
        if self.val_dataset is None:
            self.val_dataset = self._make_dataset(val_docs, "validation", self.max_val_blocks)

    # ----------------------------------------------------------------- loaders
    def _current_epoch(self) -> int:
        trainer = getattr(self, "trainer", None)
        return int(trainer.current_epoch) if trainer is not None else 0

    def _loader(self, dataset: MLMBlockDataset | None, shuffle: bool) -> DataLoader:
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
        return loader_class(
            dataset,
            batch_size=self.batch_size,
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
