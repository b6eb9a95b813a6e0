"""``TaskDataModule``: a task's labelled texts -> the pretrained run's tokenizer -> padded batches.

Batches are ``{"input_ids", "attention_mask": [B, L], "labels": [B]}`` padded to the
longest member (:mod:`roformer_lit.finetune.encoding`); labels are class indices in
``[0, num_labels)``, or float targets when ``num_labels`` is 1 (a regression).

``num_labels`` is the task's own for GLUE and ``movie_polarity``; for local files it is
the given ``data.num_labels``, else inferred from the training labels: 1 (regression) if
any is fractional, else ``max + 1``; at most :data:`MAX_LABELS` either way (a head is
``hidden x num_labels``: an absurd label must not allocate it). The CLI links it to
``model.num_labels`` (``finetune validate`` takes it from the fine-tuned checkpoint). A local
task's ``train_files`` are needed to fine-tune, not to validate. The
training order is a permutation seeded by ``(seed, epoch)`` and the training loader is
resumable mid-epoch (:class:`~roformer_lit.data.dataset.ResumableDataLoader`), so a
resumed fine-tune sees exactly the batches of an uninterrupted one.

What the run saw, by content rather than by path (files edited between a run and its resume
are other data under the same settings), is :meth:`TaskDataModule.data_identity` (the
training and validation examples, :mod:`roformer_lit.finetune.task_identity`), and what an
evaluation reads :meth:`TaskDataModule.evaluated_identity` (the validation examples alone).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from pathlib import Path

from tokenizers import Tokenizer
from torch.utils.data import DataLoader, Dataset

from roformer_lit.data.resumable import ResumableDataModule
from roformer_lit.data.tokenizer import SpecialTokens
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.encoding import collate, encode_examples
from roformer_lit.finetune.examples import (
    Example,
    expand_task_files,
    read_glue,
    read_local,
    read_shipped,
)
from roformer_lit.finetune.pretrained import check_tokenizer_covers, load_tokenizer
from roformer_lit.finetune.task_identity import split_digest, task_identity, vocabulary_digest
from roformer_lit.finetune.tasks import TaskSpec, get_task
from roformer_lit.validation import MAX_WORKERS, Rule, check_arguments, int_in, optional, size
from roformer_lit.validation import seed as seed_rule

#: Most classes a head may have (given as ``data.num_labels`` or inferred from the labels).
MAX_LABELS = 1 << 16


class EncodedTask(Dataset[tuple[list[int], int | float]]):
    """Encoded examples; item ``i`` (or ``(epoch, i)`` from EpochSampler) is ``(ids, label)``."""

    def __init__(self, ids: list[list[int]], labels: list[int | float]) -> None:
        self.ids = ids
        self.labels = labels

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, key: int | tuple[int, int]) -> tuple[list[int], int | float]:
        index = key[1] if isinstance(key, tuple) else key
        return self.ids[index], self.labels[index]


#: The arguments of :class:`TaskDataModule` with a range of their own (checked by
#: :func:`~roformer_lit.validation.check_arguments`).
TASK_DATA_RULES: dict[str, Rule] = {
    "max_length": size(3),  # [CLS] x [SEP]
    "batch_size": size(),
    "num_workers": int_in(0, MAX_WORKERS),
    "num_labels": optional(int_in(1, MAX_LABELS)),  # 1: a regression
    "seed": seed_rule,
}


def task_files_problem(
    task: str, train_files: str | list[str] | None, val_files: str | list[str] | None
) -> str | None:
    """Why ``task`` cannot take these files, in one line, or None: a local task needs its
    validation files, a named task brings its own data and takes none."""
    if get_task(task).source == "local":
        if val_files is None:
            return (
                f"data.task={task!r} needs data.val_files (and data.train_files to "
                "fine-tune): CSV, TSV or JSONL files with text and label columns"
            )
    elif train_files is not None or val_files is not None:
        return (
            f"data.train_files/data.val_files are for data.task='local'; task {task!r} "
            "brings its own data"
        )
    return None


class TaskDataModule(ResumableDataModule):
    """Batches of a fine-tuning task (the seeded, resumable loaders and the tokenizer in
    every checkpoint are the base's: :class:`~roformer_lit.data.resumable.ResumableDataModule`).

    Args:
        task: a name of :data:`~roformer_lit.finetune.tasks.TASKS` (``local``:
            ``train_files``/``val_files``; ``movie_polarity``: shipped; GLUE by name).
        train_files, val_files: local files (``.csv``, ``.tsv``, ``.jsonl``, optionally
            compressed): a path, a glob or a list of these (``task: local`` only;
            ``train_files`` may be left out to validate).
        text_field, text_pair_field, label_field: the local files' columns (a pair is
            joined as ``[CLS] a [SEP] b [SEP]``).
        num_labels: classes of a local task (1: regression, at most :data:`MAX_LABELS`);
            None infers it from the training labels.
        max_length: tokens per input, truncated beyond.
        batch_size, num_workers: loader settings.
        seed: seeds the training order.
        pretrained: the pretrained checkpoint whose tokenizer is used (linked from
            ``model.pretrained`` by the CLI).
    """

    def __init__(
        self,
        task: str = "local",
        train_files: str | list[str] | None = None,
        val_files: str | list[str] | None = None,
        text_field: str = "text",
        text_pair_field: str | None = None,
        label_field: str = "label",
        num_labels: int | None = None,
        max_length: int = 128,
        batch_size: int = 32,
        num_workers: int = 0,
        seed: int = 0,
        pretrained: str | None = None,
    ) -> None:
        super().__init__()
        self.spec: TaskSpec = get_task(task)
        self.task = task
        arguments = {
            "max_length": max_length,
            "batch_size": batch_size,
            "num_workers": num_workers,
            "num_labels": num_labels,
            "seed": seed,
        }
        check_arguments(arguments, TASK_DATA_RULES, "data.")
        self.train_paths: list[Path] | None = None
        self.val_paths: list[Path] = []
        problem = task_files_problem(task, train_files, val_files)
        if problem is not None:
            raise ConfigError(problem)
        if self.spec.source == "local":
            if train_files is not None:
                self.train_paths = expand_task_files(train_files, "data.train_files")
            self.val_paths = expand_task_files(val_files, "data.val_files")
            self.fields: tuple[str, str | None, str] = (text_field, text_pair_field, label_field)
        else:
            if num_labels is not None and num_labels != self.spec.num_labels:
                raise ConfigError(
                    f"data.num_labels={num_labels} does not fit task {task!r}, which has "
                    f"{self.spec.num_labels}; leave it unset"
                )
            assert self.spec.text_field is not None and self.spec.label_field is not None
            self.fields = (self.spec.text_field, self.spec.text_pair_field, self.spec.label_field)
        self.num_labels = num_labels if num_labels is not None else self.spec.num_labels
        self.max_length = max_length
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.seed = seed
        self.pretrained = pretrained
        self._tokenizer: Tokenizer | None = None
        self._raw: dict[str, list[Example]] = {}
        self._digests: dict[str, str] = {}  # split -> split_digest of its examples
        self._vocabulary: str | None = None  # vocabulary_digest of the tokenizer
        self.train_dataset: EncodedTask | None = None
        self.val_datasets: list[EncodedTask] | None = None

    # -------------------------------------------------------------- tokenizer, labels
    @property
    def tokenizer(self) -> Tokenizer:
        """The pretrained checkpoint's tokenizer (saved into every fine-tune checkpoint)."""
        if self._tokenizer is None:
            if self.pretrained is None:
                raise ConfigError("data.pretrained is not set (the CLI links model.pretrained)")
            self._tokenizer = load_tokenizer(self.pretrained)
            SpecialTokens.from_tokenizer(self._tokenizer, f"the tokenizer of {self.pretrained}")
        return self._tokenizer

    @property
    def label_count(self) -> int:
        """``num_labels`` (given, the task's, or inferred from local training labels); the
        CLI links it to ``model.num_labels``. Reads local files (and checks the tokenizer)
        so their errors come before the run starts."""
        _ = self.tokenizer
        if self.spec.source != "glue":
            if self._has_train:
                self._examples("train")
            for split in self.spec.val_splits:
                self._examples(split)
        if self.num_labels is None:
            if not self._has_train:
                raise ConfigError(self._no_train_files("infer data.num_labels"))
            labels = [e.label for e in self._examples("train")]
            if _fractional(labels):
                self.num_labels = 1
            else:
                top = max(labels)
                if top >= MAX_LABELS:
                    raise ConfigError(
                        f"{self._where('train')}: label {top} would need a head of "
                        f"{int(top) + 1} classes (at most {MAX_LABELS}); labels are class indices "
                        "0..num_labels-1, or set data.num_labels 1 for a regression"
                    )
                self.num_labels = max(2, int(top) + 1)
        if self.spec.source == "local" and self._has_train:
            self._check_labels_differ()
        return self.num_labels

    def _check_labels_differ(self) -> None:
        """Refuse a local training split whose labels are all one value: a classifier that
        sees one class learns to answer it whatever the text (and a regression of one target
        has no correlation to report), so the fine-tune would measure nothing."""
        labels = {e.label for e in self._examples("train")}
        if len(labels) > 1:
            return
        (only,) = labels
        need = (
            "a regression needs at least two different targets"
            if self.num_labels == 1
            else "a classifier needs examples of at least two classes "
            f"(labels 0..{self.num_labels - 1})"
        )
        raise ConfigError(
            f"{self._where('train')}: every training label is {only!r}: "
            f"{need}; check data.label_field={self.fields[2]!r} and the files"
        )

    @property
    def _has_train(self) -> bool:
        """Whether the training split can be read (a local task may leave it out to validate)."""
        return self.spec.source != "local" or self.train_paths is not None

    def _no_train_files(self, purpose: str) -> str:
        return (
            f"data.train_files is not set: data.task='local' needs training files to {purpose} "
            "(finetune validate takes num_labels from its checkpoint and needs only "
            "data.val_files)"
        )

    def _examples(self, split: str) -> list[Example]:
        """The raw examples of ``split`` (``train`` or one of the validation splits)."""
        if split not in self._raw:
            if self.spec.source == "local":
                paths = self.train_paths if split == "train" else self.val_paths
                if paths is None:
                    raise ConfigError(self._no_train_files("fine-tune"))
                self._raw[split] = read_local(paths, *self.fields)
            elif self.spec.source == "shipped":
                self._raw[split] = read_shipped(self.task, split)
            else:
                self._raw[split] = read_glue(self.task, split, *self.fields)
        return self._raw[split]

    def _labels(self, examples: Sequence[Example], split: str) -> list[int | float]:
        """Labels as floats (regression) or class indices in ``[0, num_labels)``."""
        num_labels = self.label_count
        if num_labels == 1:
            return [float(e.label) for e in examples]
        labels: list[int | float] = []
        for i, e in enumerate(examples):
            y = e.label
            if _fractional([y]):
                raise ConfigError(
                    f"{self._where(split)}: label {y!r} (example {i + 1}) is not a class of "
                    f"the head: its classes are the integers 0..{num_labels - 1} "
                    f"(num_labels={num_labels}); set data.num_labels 1 for a regression"
                )
            if not 0 <= y < num_labels:
                raise ConfigError(
                    f"{self._where(split)}: label {y!r} (example {i + 1}) is outside the "
                    f"head's range 0..{num_labels - 1} (num_labels={num_labels}); set "
                    "data.num_labels, or 1 for a regression"
                )
            labels.append(int(y))
        return labels

    def _where(self, split: str) -> str:
        if self.spec.source == "local":
            paths = self.train_paths if split == "train" else self.val_paths
            return ", ".join(str(p) for p in paths or [])
        return f"task {self.task} {split}"

    def overlap_note(self) -> str | None:
        """A ``note:`` line when texts of a local task's validation split also occur among
        its training examples (the val file a copy of the training file, or a glob catching
        both): the score then counts examples the model trained on. None when they are
        disjoint, for a task that brings its own splits, or without training files."""
        if self.spec.source != "local" or not self._has_train:
            return None
        trained = {(e.text, e.text_pair) for e in self._examples("train")}
        val = self._examples(self.spec.val_splits[0])
        shared = sum((e.text, e.text_pair) in trained for e in val)
        if shared == 0:
            return None
        return (
            f"note: {shared} of the {len(val)} validation examples ({shared / len(val):.0%}) "
            f"have the text of a training example ({self._where(self.spec.val_splits[0])} "
            f"against {self._where('train')}): the validation score counts examples the "
            "model trained on"
        )

    def unseen_label_note(self) -> str | None:
        """A ``note:`` line when a local classification task's validation split holds
        labels no training example has (train labelled 1..2, val 0..1: the classes are
        numbered otherwise in the two files): those examples are scored against classes
        the head never learned. None for a regression, for a task that brings its own
        splits, without training files, or when every validation label was trained."""
        if self.spec.source != "local" or not self._has_train:
            return None
        trained = {e.label for e in self._examples("train")}
        if self.num_labels == 1 or (self.num_labels is None and _fractional(trained)):
            return None  # a regression: any target is a value, not a class
        val = self._examples(self.spec.val_splits[0])
        unseen = sorted({e.label for e in val} - trained)
        if not unseen:
            return None
        count = sum(e.label not in trained for e in val)
        shown = ", ".join(f"{label:g}" for label in unseen[:6])
        more = f" and {len(unseen) - 6} more" if len(unseen) > 6 else ""
        return (
            f"note: {count} of the {len(val)} validation examples ({count / len(val):.0%}) "
            f"have labels no training example has ({shown}{more}; trained: "
            f"{', '.join(f'{label:g}' for label in sorted(trained)[:6])}"
            f"{' ...' if len(trained) > 6 else ''}) in {self._where(self.spec.val_splits[0])}: "
            "the head never learned those classes; check that both files number the classes "
            "alike"
        )

    def notes(self) -> list[str]:
        """The ``note:`` lines a fine-tune prints before training: the validation texts
        seen in training (:meth:`overlap_note`), the validation labels never trained
        (:meth:`unseen_label_note`)."""
        return [note for note in (self.overlap_note(), self.unseen_label_note()) if note]

    # -------------------------------------------------------------- identity
    def describe(self) -> str:
        """The data in a few words (``data_identity.json``)."""
        if self.spec.source == "local":
            files = [*(self.train_paths or []), *self.val_paths]
            return "the task files " + ", ".join(str(p) for p in files)
        return f"task {self.task}"

    def _identity(self, splits: Sequence[str]) -> str:
        """:func:`~roformer_lit.finetune.task_identity.task_identity` of ``splits``."""
        for split in splits:  # each read once, as the examples are
            if split not in self._digests:
                self._digests[split] = split_digest(self._examples(split))
        if self._vocabulary is None:
            self._vocabulary = vocabulary_digest(self.tokenizer.get_vocab(with_added_tokens=True))
        return task_identity(self._vocabulary, {split: self._digests[split] for split in splits})

    def data_identity(self) -> str | None:
        """The content identity of the training and validation examples and the vocabulary
        (:mod:`roformer_lit.finetune.task_identity`), or None where the training split is
        not given (a local task's ``finetune validate``)."""
        if not self._has_train:
            return None
        return self._identity(("train", *self.spec.val_splits))

    def evaluated_identity(self) -> str:
        """The content identity of what an evaluation reads: the validation examples and the
        vocabulary."""
        return self._identity(self.spec.val_splits)

    # -------------------------------------------------------------- Lightning hooks
    def prepare_data(self) -> None:
        """Download a GLUE task once (``datasets`` caches it)."""
        if self.spec.source == "glue":
            for split in ("train", *self.spec.val_splits):
                self._examples(split)

    def _encode(self, split: str) -> EncodedTask:
        examples = self._examples(split)
        texts = [t for e in examples for t in (e.text, e.text_pair) if t]
        check_tokenizer_covers(self.tokenizer, texts, self.pretrained, self._where(split))
        ids = encode_examples(
            self.tokenizer,
            [e.text for e in examples],
            [e.text_pair for e in examples],
            self.max_length,
        )
        return EncodedTask(ids, self._labels(examples, split))

    def setup(self, stage: str | None = None) -> None:
        """Tokenize the validation splits, and the training split unless ``stage`` only
        evaluates (``validate``, ``test``, ``predict``: no training file is read), once."""
        if self.train_dataset is None and stage in (None, "fit"):
            self.train_dataset = self._encode("train")
        if self.val_datasets is None:
            self.val_datasets = [self._encode(split) for split in self.spec.val_splits]

    @property
    def train_batches(self) -> int:
        """Batches of one training epoch: ceil(examples / batch_size)."""
        self.setup("fit")
        assert self.train_dataset is not None
        return -(-len(self.train_dataset) // self.batch_size)

    def _loader(self, dataset: EncodedTask, shuffle: bool) -> DataLoader:
        pad = SpecialTokens.from_tokenizer(self.tokenizer).pad
        return self.seeded_loader(
            dataset,
            shuffle=shuffle,
            batch_size=self.batch_size,
            collate_fn=functools.partial(collate, pad_id=pad, regression=self.label_count == 1),
        )

    def train_dataloader(self) -> DataLoader:
        """Shuffled by ``(seed, epoch)``; resumable mid-epoch."""
        self.setup("fit")
        assert self.train_dataset is not None
        return self._loader(self.train_dataset, shuffle=True)

    def val_dataloader(self) -> DataLoader | list[DataLoader]:
        """The validation split(s) in order (MNLI: matched, then mismatched)."""
        self.setup("validate")
        assert self.val_datasets is not None
        loaders = [self._loader(d, shuffle=False) for d in self.val_datasets]
        return loaders[0] if len(loaders) == 1 else loaders


def _fractional(labels: Iterable[int | float]) -> bool:
    """Whether any of ``labels`` is not a whole number: the labels of a regression."""
    return any(isinstance(y, float) and not y.is_integer() for y in labels)
