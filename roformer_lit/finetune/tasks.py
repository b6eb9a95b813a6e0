"""The fine-tuning tasks by name: where their examples come from, their fields, labels and metrics.

* ``movie_polarity``: the offline sentence-polarity task shipped in
  ``roformer_lit/data/tasks/movie_polarity`` (source and license in its README);
* ``local``: the user's CSV / TSV / JSONL files (``data.train_files``, ``data.val_files``)
  with the fields ``data.text_field``, ``data.text_pair_field``, ``data.label_field``;
* the GLUE tasks of ``nyu-mll/glue`` on the Hugging Face hub, with their official metrics:
  Matthews correlation for CoLA, F1 and accuracy for MRPC and QQP, Pearson and Spearman
  for STS-B (a regression, ``num_labels`` 1), accuracy otherwise; MNLI is validated on
  ``validation_matched`` (``val/accuracy``) and ``validation_mismatched``
  (``val/accuracy_mismatched``).
"""

from __future__ import annotations

from dataclasses import dataclass

from roformer_lit.errors import ConfigError


@dataclass(frozen=True)
class TaskSpec:
    """One task: its source, fields, label count (1: regression; None: from the data), its
    validation splits (the first is the main one) and metrics (the first is monitored)."""

    name: str
    source: str  # "glue", "shipped" or "local"
    text_field: str | None = "text"
    text_pair_field: str | None = None
    label_field: str | None = "label"
    num_labels: int | None = None
    val_splits: tuple[str, ...] = ("validation",)
    metrics: tuple[str, ...] = ("accuracy",)

    @property
    def main_metric(self) -> str:
        """The metric the best checkpoint is chosen by (``val/<main_metric>``, higher is better)."""
        return self.metrics[0]


def _glue(
    name: str,
    text: str,
    pair: str | None,
    num_labels: int,
    metrics: tuple[str, ...] = ("accuracy",),
    val_splits: tuple[str, ...] = ("validation",),
) -> TaskSpec:
    return TaskSpec(name, "glue", text, pair, "label", num_labels, val_splits, metrics)


#: Every task by name.
TASKS: dict[str, TaskSpec] = {
    "movie_polarity": TaskSpec("movie_polarity", "shipped", "text", None, "label", 2),
    "local": TaskSpec("local", "local", None, None, None, None),
    "cola": _glue("cola", "sentence", None, 2, ("matthews",)),
    "sst2": _glue("sst2", "sentence", None, 2),
    "mrpc": _glue("mrpc", "sentence1", "sentence2", 2, ("f1", "accuracy")),
    "stsb": _glue("stsb", "sentence1", "sentence2", 1, ("pearson", "spearman")),
    "qqp": _glue("qqp", "question1", "question2", 2, ("f1", "accuracy")),
    "mnli": _glue(
        "mnli",
        "premise",
        "hypothesis",
        3,
        val_splits=("validation_matched", "validation_mismatched"),
    ),
    "qnli": _glue("qnli", "question", "sentence", 2),
    "rte": _glue("rte", "sentence1", "sentence2", 2),
}

#: The GLUE dataset on the Hugging Face hub.
GLUE_DATASET = "nyu-mll/glue"


def get_task(name: str) -> TaskSpec:
    """The task called ``name``, or a ConfigError naming the valid ones."""
    try:
        return TASKS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"data.task={name!r} is not a known task; valid: {', '.join(TASKS)}"
        ) from None


def metrics_for(task: TaskSpec, num_labels: int) -> tuple[str, ...]:
    """The metrics of ``task`` with ``num_labels`` outputs: the task's own for GLUE and the
    shipped task; for local files accuracy (classification) or Pearson and Spearman
    (regression, ``num_labels`` 1)."""
    if task.source != "local":
        return task.metrics
    return ("pearson", "spearman") if num_labels == 1 else ("accuracy",)


def val_suffixes(task: TaskSpec) -> tuple[str, ...]:
    """The suffix of each validation split's metric names: ``""`` for the main split,
    ``"_mismatched"`` for MNLI's ``validation_mismatched``."""
    return tuple(
        "" if i == 0 else "_" + split.removeprefix("validation_")
        for i, split in enumerate(task.val_splits)
    )
