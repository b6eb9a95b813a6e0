"""Task metrics (torchmetrics), fed with predictions and targets of a validation split.

* ``accuracy`` = mean(pred == y), pred = argmax of the logits;
* ``f1`` = 2 TP / (2 TP + FP + FN) of the positive class 1 (binary tasks);
* ``matthews`` = (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) (multiclass form
  for more than two classes);
* ``pearson`` = cov(s, y) / (std(s) std(y)) of the regression scores ``s``;
* ``spearman`` = Pearson correlation of the ranks of ``s`` and ``y`` (ties: mean rank).
"""

from __future__ import annotations

import warnings

from torchmetrics import Metric, MetricCollection
from torchmetrics.classification import BinaryF1Score, MatthewsCorrCoef, MulticlassAccuracy
from torchmetrics.regression import PearsonCorrCoef, SpearmanCorrCoef

#: Every metric name a task can ask for.
METRIC_NAMES: tuple[str, ...] = ("accuracy", "f1", "matthews", "pearson", "spearman")


def make_metric(name: str, num_labels: int) -> Metric:
    """The torchmetrics object of ``name`` for ``num_labels`` classes (1: regression)."""
    if name == "accuracy":
        return MulticlassAccuracy(num_labels, average="micro")
    if name == "f1":
        return BinaryF1Score()
    if name == "matthews":
        return MatthewsCorrCoef(task="multiclass", num_classes=num_labels)
    if name == "pearson":
        return PearsonCorrCoef()
    if name == "spearman":
        with warnings.catch_warnings():  # it keeps every score: fine at GLUE's sizes
            warnings.filterwarnings("ignore", message=".*will save all targets")
            return SpearmanCorrCoef()
    raise ValueError(f"unknown metric {name!r}; valid: {', '.join(METRIC_NAMES)}")


def make_metrics(names: tuple[str, ...], num_labels: int) -> MetricCollection:
    """A collection of the metrics ``names``; ``update(pred, target)`` takes class indices
    ``[N]`` for classification and float scores ``[N]`` for a regression."""
    return MetricCollection({name: make_metric(name, num_labels) for name in names})
