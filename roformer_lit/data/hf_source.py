"""Hugging Face ``datasets`` as a corpus source (optional: ``pip install 'roformer-lit[corpora]'``).

``data.dataset`` names either a dataset on the Hub (``wikitext``, with ``data.dataset_config``
``wikitext-103-raw-v1``) or a local directory written by ``Dataset.save_to_disk`` /
``DatasetDict.save_to_disk``. ``data.dataset_split`` picks the split (``train``), and
``data.text_field`` the column holding the text. ``data.dataset_streaming`` reads a Hub dataset
as it downloads (``load_dataset(..., streaming=True)``), for datasets larger than the disk;
only the token shards are written.

Documents are read in batches from the memory-mapped Arrow table (or the stream), never all
at once. Problems (``datasets`` missing, an unknown dataset or split, a missing field, a
field that is not plain text: a list, a struct, a number) are one-line
:class:`~roformer_lit.errors.ConfigError`\\s, and so is any failure while the documents are
read (a corrupt Arrow file, a dropped stream): they go through the corpus readers' guarded
layer (:func:`roformer_lit.data.sources.guarded`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from roformer_lit.data.sources import guarded
from roformer_lit.errors import ConfigError

_BATCH = 1000


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise ConfigError(
            "data.dataset needs the datasets package: pip install 'roformer-lit[corpora]'"
        ) from None
    return datasets


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


class HFSource:
    """Documents of one split of a Hugging Face dataset (Hub name or ``save_to_disk`` directory)."""

    def __init__(
        self,
        name: str,
        config: str | None = None,
        split: str = "train",
        text_field: str = "text",
        streaming: bool = False,
    ) -> None:
        self.name = name
        self.config = config
        self.split = split
        self.text_field = text_field
        self.streaming = streaming
        path = Path(name).expanduser()
        self.local = path if path.is_dir() else None
        self._dataset: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_dataset": None}

    def _where(self) -> str:
        if self.local is not None:
            return f"dataset directory {self.local} (split {self.split!r})"
        config = f", config {self.config!r}" if self.config else ""
        return f"dataset {self.name!r}{config}, split {self.split!r}"

    def dataset(self) -> Any:
        """The ``datasets.Dataset`` (or ``IterableDataset`` when streaming), loaded once."""
        if self._dataset is None:
            self._dataset = self._load()
        return self._dataset

    def _load(self) -> Any:
        datasets = _datasets()
        try:
            if self.local is not None:
                ds = datasets.load_from_disk(str(self.local))
            else:
                ds = datasets.load_dataset(
                    self.name, self.config, split=self.split, streaming=self.streaming
                )
        except Exception as exc:  # DatasetNotFoundError, FileNotFoundError, ValueError, ...
            raise ConfigError(f"cannot load {self._where()}: {_one_line(exc)}") from None
        if isinstance(ds, (datasets.DatasetDict, datasets.IterableDatasetDict)):
            if self.split not in ds:
                raise ConfigError(
                    f"{self._where()}: no split {self.split!r} (splits: {', '.join(ds)}); "
                    "set data.dataset_split"
                )
            ds = ds[self.split]
        columns = getattr(ds, "column_names", None)
        if columns is not None and self.text_field not in columns:
            raise ConfigError(
                f"{self._where()}: no text field {self.text_field!r} (fields: "
                f"{', '.join(columns) or 'none'}); set data.text_field"
            )
        features = getattr(ds, "features", None)
        if features is not None and self.text_field in features:
            feature = features[self.text_field]
            dtype = getattr(feature, "dtype", None)
            if not isinstance(feature, datasets.Value) or dtype not in ("string", "large_string"):
                held = dtype if isinstance(feature, datasets.Value) else type(feature).__name__
                raise ConfigError(
                    f"{self._where()}: field {self.text_field!r} holds {held}, not text; set "
                    "data.text_field to a string field"
                )
        return ds

    def _values(self) -> Iterator[Any]:
        ds = self.dataset()
        if hasattr(ds, "iter") and not self.streaming:
            for batch in ds.iter(batch_size=_BATCH):
                yield from batch[self.text_field]
            return
        for row in ds:
            if self.text_field not in row:
                raise ConfigError(
                    f"{self._where()}: no text field {self.text_field!r} (fields: "
                    f"{', '.join(row)}); set data.text_field"
                )
            yield row[self.text_field]

    def documents(self) -> Iterator[str]:
        """Non-empty texts, stripped, inner line breaks turned into spaces."""
        count = 0
        for value in guarded(self._where(), self._values()):
            if value is None:
                continue
            if not isinstance(value, str):
                raise ConfigError(
                    f"{self._where()}: field {self.text_field!r} must hold strings, got "
                    f"{type(value).__name__}"
                )
            if doc := " ".join(value.strip().splitlines()):
                count += 1
                yield doc
        if count == 0:
            raise ConfigError(f"{self._where()} contains no documents")

    def fingerprint(self) -> Any:
        """The dataset's own fingerprint (Arrow files); for a stream, its name, config, split."""
        base = {"kind": "hf", "config": self.config, "split": self.split, "field": self.text_field}
        if self.streaming and self.local is None:
            return {**base, "name": self.name, "streaming": True}
        ds = self.dataset()
        name = str(self.local.resolve()) if self.local is not None else self.name
        return {**base, "name": name, "fingerprint": getattr(ds, "_fingerprint", None)}

    def describe(self) -> str:
        return self._where()

    def size_hint(self) -> int | None:
        return None
