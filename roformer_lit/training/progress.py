"""The progress display of every CLI run: :class:`StepProgress`.

On a terminal (stdout and stderr both TTYs) it draws one bar keyed on optimiser steps,
``step 120/600  20%|███     | loss 5.1234, 48.2k tok/s, 1:10<4:40``, with validation as
its own short bar beneath and one lasting line per validation above it. Without a
terminal (piped, redirected, SLURM) it prints plain lines instead, to stdout::

    step 100/600 | loss 5.1234 | lr 9.0e-04 | 48.2k tok/s | elapsed 0:41 | ETA 3:25
    step 150/600 | val/loss 4.9876 | val/acc 0.2113 | val/ppl 146.6 | 1.9 s

one every ``every_n_steps`` optimiser steps (or sooner, once ``every_n_seconds`` have
passed without one), at the last step, and one per validation. Epoch-based runs
(``max_steps=-1``) show ``epoch 2/3 batch 40/200`` before the step. ``validate`` /
``test`` / ``predict`` get a bar, or one line when they end. Only rank 0 shows anything.

Rates and times:

* tokens/s = tokens trained (:func:`~roformer_lit.training.throughput.tokens_in`, the
  count ``perf/tokens_per_s`` logs) since the last mark / training seconds since it, where
  training seconds exclude time spent validating (the mark is the previous line, or the
  bar's window of recent steps);
* ETA = remaining steps x wall seconds per step so far in this session (validation
  included, so it estimates the wall clock).
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, Literal

from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks.progress.progress_bar import ProgressBar
from tqdm import tqdm

from roformer_lit.errors import ConfigError
from roformer_lit.training.steps import total_steps
from roformer_lit.training.throughput import tokens_in

Mode = Literal["auto", "bar", "lines"]

#: Seconds between two redraws of the bar's numbers (reading them syncs the accelerator).
BAR_REFRESH_S = 0.5
#: Steps over which the bar measures tokens/s.
BAR_RATE_WINDOW = 50
#: Metric order in validation lines and the bar; other ``val/`` keys follow, sorted.
_VAL_ORDER = ("loss", "acc", "ppl", "best_loss")


class _Bar(tqdm):
    """A tqdm bar with a free-text ``info`` field for ``bar_format`` (no ", " glued on)."""

    info = ""

    @property
    def format_dict(self) -> dict[str, Any]:
        return {**super().format_dict, "info": self.info}


def format_duration(seconds: float) -> str:
    """``m:ss`` below an hour, ``h:mm:ss`` from there on; ``?`` if not finite."""
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_rate(per_second: float) -> str:
    """``812``, ``48.2k``, ``1.35M`` (three significant digits above 1000)."""
    if not math.isfinite(per_second):
        return "?"
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if per_second >= scale:
            value = per_second / scale
            return f"{value:.3g}{unit}" if value < 1000 else f"{value:.0f}{unit}"
    return f"{per_second:.0f}"


def format_value(value: float) -> str:
    """A metric: 4 decimals, or 1 from 100 on (perplexities)."""
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.4f}"


def interactive() -> bool:
    """Whether both stdout and stderr are terminals (else: plain lines)."""
    return _isatty(sys.stdout) and _isatty(sys.stderr)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no stream, or a closed one
        return False


def _scalar(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):  # not a one-element number
        return None


class StepProgress(ProgressBar):
    """Progress keyed on optimiser steps: a bar on a terminal, plain lines otherwise.

    Args:
        every_n_steps: without a terminal, print a line every this many optimiser steps.
        every_n_seconds: ... or once this many seconds have passed without a line (0: never).
        mode: ``auto`` (a bar on a terminal, else lines), ``bar`` or ``lines``.
    """

    def __init__(
        self, every_n_steps: int = 50, every_n_seconds: float = 30.0, mode: Mode = "auto"
    ) -> None:
        super().__init__()
        if isinstance(every_n_steps, bool) or not isinstance(every_n_steps, int):
            raise ConfigError(f"every_n_steps must be an integer >= 1, got {every_n_steps!r}")
        if every_n_steps < 1:
            raise ConfigError(f"every_n_steps must be >= 1, got {every_n_steps}")
        if not math.isfinite(every_n_seconds) or every_n_seconds < 0:
            raise ConfigError(f"every_n_seconds must be >= 0, got {every_n_seconds}")
        if mode not in ("auto", "bar", "lines"):
            raise ConfigError(f"mode must be one of auto, bar, lines; got {mode!r}")
        self.every_n_steps = every_n_steps
        self.every_n_seconds = float(every_n_seconds)
        self.mode = mode
        self.clock = time.monotonic  # replaceable in tests
        self._enabled = True
        self._bars: bool | None = None  # decided at setup
        self._train_bar: _Bar | None = None
        self._eval_bar: tqdm | None = None
        self._reset_training_state()

    def _reset_training_state(self) -> None:
        self._t0 = 0.0
        self._step0 = 0
        self._step = 0
        self._total: int | None = None
        self._tokens = 0
        self._step_lr: float | None = None  # the rate the step being trained uses
        self._val_seconds = 0.0  # validation time during training, this session
        self._line_mark = (0.0, 0, 0.0)  # (time, tokens, val seconds) at the last line
        self._line_time = 0.0
        self._window: deque[tuple[float, int]] = deque(maxlen=BAR_RATE_WINDOW)
        self._bar_refreshed = -math.inf
        self._val_postfix = ""
        self._eval_t0 = 0.0
        self._eval_batches = 0

    # -- ProgressBar API ------------------------------------------------------------------
    def disable(self) -> None:
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True

    @property
    def is_enabled(self) -> bool:
        return self._enabled

    @property
    def is_disabled(self) -> bool:
        return not self._enabled

    def print(self, *args: Any, sep: str = " ", **kwargs: Any) -> None:
        """Print without breaking the bar (above it, on a terminal)."""
        if self._train_bar is not None or self._eval_bar is not None:
            tqdm.write(sep.join(map(str, args)), file=sys.stderr)
        else:
            print(*args, sep=sep, flush=True, **kwargs)

    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        super().setup(trainer, pl_module, stage)  # disables it on ranks other than 0
        if self._bars is None:
            self._bars = self.mode == "bar" or (self.mode == "auto" and interactive())

    def teardown(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        self._close_bars()

    def on_exception(
        self, trainer: Trainer, pl_module: LightningModule, exception: BaseException
    ) -> None:
        self._close_bars()

    # -- training -------------------------------------------------------------------------
    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._reset_training_state()
        if not self._enabled:
            return
        now = self.clock()
        self._t0 = self._line_time = now
        self._step0 = self._step = trainer.global_step
        self._total = total_steps(trainer)
        self._line_mark = (now, 0, 0.0)
        self._window.append((now, 0))
        if self._bars:
            self._train_bar = _Bar(
                total=self._total,
                initial=self._step0,
                desc=self._where(trainer, None),
                file=sys.stderr,
                dynamic_ncols=True,
                leave=True,
                smoothing=0,
                bar_format=(
                    "{desc} {percentage:3.0f}%|{bar}| {info}" if self._total else "{desc} | {info}"
                ),
            )

    def on_train_batch_start(
        self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int
    ) -> None:
        """Keep the rate this step trains at: by ``on_train_batch_end`` the scheduler has
        already stepped to the next step's rate, which ``train/lr`` does not log."""
        if self._enabled:
            self._step_lr = _learning_rate(trainer)

    def on_train_batch_end(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        if not self._enabled:
            return
        self._tokens += tokens_in(batch) * max(trainer.world_size, 1)
        step = trainer.global_step
        if step == self._step:  # accumulating gradients: no optimiser step yet
            return
        self._step = step
        now = self.clock()
        last = self._total is not None and step >= self._total
        if self._train_bar is not None:
            self._window.append((now - self._val_seconds, self._tokens))
            if last or now - self._bar_refreshed >= BAR_REFRESH_S:
                self._bar_refreshed = now
                self._train_bar.set_description_str(self._where(trainer, batch_idx), refresh=False)
                self._train_bar.info = self._bar_info(trainer, now)
                self._train_bar.update(step - self._train_bar.n)
            if last:  # leave the finished bar behind; the final validation prints below it
                self._train_bar.refresh()
                self._close_bars()
            return
        due = step % self.every_n_steps == 0 or last
        if self.every_n_seconds and now - self._line_time >= self.every_n_seconds:
            due = True
        if due:
            self._print_line(self._train_line(trainer, batch_idx, now))
            self._line_time = now
            self._line_mark = (now, self._tokens, self._val_seconds)

    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not self._enabled:
            return
        if self._bars:
            if self._train_bar is not None:  # stopped before the last step
                self._train_bar.info = self._bar_info(trainer, self.clock())
                self._train_bar.update(trainer.global_step - self._train_bar.n)
                self._train_bar.refresh()
            self._close_bars()
            return
        elapsed = self.clock() - self._t0
        train_seconds = elapsed - self._val_seconds
        rate = self._tokens / train_seconds if train_seconds > 0 else math.nan
        self._print_line(
            f"done | step {trainer.global_step} | {format_rate(rate)} tok/s | "
            f"elapsed {format_duration(elapsed)}"
        )

    # -- validation, test, predict --------------------------------------------------------
    def on_sanity_check_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._start_eval("sanity check", trainer.num_sanity_val_batches)

    def on_sanity_check_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._close_eval_bar()

    def on_validation_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not trainer.sanity_checking:
            self._start_eval("validating", trainer.num_val_batches)

    def on_validation_batch_end(self, trainer: Trainer, *args: Any, **kwargs: Any) -> None:
        self._advance_eval()

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not self._enabled or trainer.sanity_checking:
            return
        seconds = self.clock() - self._eval_t0
        self._close_eval_bar()
        metrics = _stage_metrics(trainer.callback_metrics, "val")
        if trainer.state.fn == "fit":
            self._val_seconds += seconds
            head = f"step {trainer.global_step}" + (f"/{self._total}" if self._total else "")
            if "val/loss" in metrics:
                self._val_postfix = f"val/loss {format_value(metrics['val/loss'])}"
            if self._train_bar is not None:
                self._train_bar.info = self._bar_info(trainer, self.clock())
                self._train_bar.refresh()
        else:
            head = f"validate | {self._eval_batches} batches"
        self._report(head, metrics, seconds)

    def on_test_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._start_eval("testing", trainer.num_test_batches)

    def on_test_batch_end(self, trainer: Trainer, *args: Any, **kwargs: Any) -> None:
        self._advance_eval()

    def on_test_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not self._enabled:
            return
        seconds = self.clock() - self._eval_t0
        self._close_eval_bar()
        metrics = _stage_metrics(trainer.callback_metrics, "test")
        self._report(f"test | {self._eval_batches} batches", metrics, seconds)

    def on_predict_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._start_eval("predicting", trainer.num_predict_batches)

    def on_predict_batch_end(self, trainer: Trainer, *args: Any, **kwargs: Any) -> None:
        self._advance_eval()

    def on_predict_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not self._enabled:
            return
        seconds = self.clock() - self._eval_t0
        self._close_eval_bar()
        self._report(f"predict | {self._eval_batches} batches", {}, seconds)

    # -- helpers --------------------------------------------------------------------------
    def _start_eval(self, description: str, batches: Any) -> None:
        self._eval_t0 = self.clock()
        self._eval_batches = 0
        if not self._enabled or not self._bars:
            return
        total = sum(batches) if isinstance(batches, list) else batches
        total = int(total) if total is not None and math.isfinite(total) else None
        self._close_eval_bar()
        self._eval_bar = tqdm(
            total=total,
            desc=description,
            file=sys.stderr,
            dynamic_ncols=True,
            leave=False,
            position=1 if self._train_bar is not None else 0,
        )

    def _advance_eval(self) -> None:
        self._eval_batches += 1
        if self._eval_bar is not None:
            self._eval_bar.update(1)

    def _report(self, head: str, metrics: Mapping[str, float], seconds: float) -> None:
        """One lasting line: a plain line, or written above the bar."""
        parts = [head, *(f"{k} {format_value(v)}" for k, v in metrics.items())]
        parts.append(f"{seconds:.1f} s")
        line = " | ".join(parts)
        if self._train_bar is not None:
            tqdm.write(line, file=sys.stderr)
        elif self._bars:
            print(line, file=sys.stderr, flush=True)
        else:
            self._print_line(line)

    def _where(self, trainer: Trainer, batch_idx: int | None) -> str:
        """``step 120/600``, or ``epoch 2/3 batch 40/200 | step 440/600`` by epochs."""
        step = f"step {trainer.global_step}" + (f"/{self._total}" if self._total else "")
        if trainer.max_steps is not None and trainer.max_steps > 0:
            return step
        epochs = f"/{trainer.max_epochs}" if trainer.max_epochs and trainer.max_epochs > 0 else ""
        batches = trainer.num_training_batches
        of = (
            f"/{int(batches)}"
            if isinstance(batches, int | float) and math.isfinite(batches)
            else ""
        )
        done = 0 if batch_idx is None else batch_idx + 1
        return f"epoch {trainer.current_epoch + 1}{epochs} batch {done}{of} | {step}"

    def _eta(self, now: float) -> float:
        done = self._step - self._step0
        if self._total is None or done <= 0:
            return math.nan
        return (self._total - self._step) * (now - self._t0) / done

    def _train_line(self, trainer: Trainer, batch_idx: int, now: float) -> str:
        t, tokens, val = self._line_mark
        seconds = (now - t) - (self._val_seconds - val)
        rate = (self._tokens - tokens) / seconds if seconds > 0 else math.nan
        parts = [self._where(trainer, batch_idx)]
        loss = _train_loss(trainer)
        if loss is not None:
            parts.append(f"loss {format_value(loss)}")
        if self._step_lr is not None:  # the step's own rate, as ``train/lr`` logs it
            parts.append(f"lr {self._step_lr:.1e}")
        parts.append(f"{format_rate(rate)} tok/s")
        parts.append(f"elapsed {format_duration(now - self._t0)}")
        if self._total is not None:
            parts.append(f"ETA {format_duration(self._eta(now))}")
        return " | ".join(parts)

    def _bar_info(self, trainer: Trainer, now: float) -> str:
        parts = []
        loss = _train_loss(trainer)
        if loss is not None:
            parts.append(f"loss {format_value(loss)}")
        if len(self._window) >= 2:
            (t0, k0), (t1, k1) = self._window[0], self._window[-1]
            if t1 > t0:
                parts.append(f"{format_rate((k1 - k0) / (t1 - t0))} tok/s")
        times = format_duration(now - self._t0)
        if self._total is not None:
            times += f"<{format_duration(self._eta(now))}"
        parts.append(times)
        if self._val_postfix:
            parts.append(self._val_postfix)
        return ", ".join(parts)

    def _print_line(self, line: str) -> None:
        print(line, file=sys.stdout, flush=True)

    def _close_eval_bar(self) -> None:
        if self._eval_bar is not None:
            self._eval_bar.close()
            self._eval_bar = None

    def _close_bars(self) -> None:
        self._close_eval_bar()
        if self._train_bar is not None:
            self._train_bar.close()
            self._train_bar = None


def _train_loss(trainer: Trainer) -> float | None:
    for metrics in (trainer.progress_bar_metrics, trainer.callback_metrics):
        for key in ("train/loss", "train_loss", "loss"):
            if key in metrics and (value := _scalar(metrics[key])) is not None:
                return value
    return None


def _learning_rate(trainer: Trainer) -> float | None:
    optimizers = trainer.optimizers
    if not optimizers or not optimizers[0].param_groups:
        return None
    return _scalar(optimizers[0].param_groups[0].get("lr"))


def _stage_metrics(metrics: Mapping[str, Any], stage: str) -> dict[str, float]:
    """The ``<stage>/...`` scalars in a fixed order (loss, acc, ppl, best_loss, the rest)."""
    prefix = f"{stage}/"
    values = {
        k: v for k in metrics if k.startswith(prefix) and (v := _scalar(metrics[k])) is not None
    }
    order = {f"{prefix}{name}": i for i, name in enumerate(_VAL_ORDER)}
    return {k: values[k] for k in sorted(values, key=lambda k: (order.get(k, len(order)), k))}


def default_progress_bar(trainer_config: Mapping[str, Any]) -> dict[str, Any]:
    """Trainer keyword arguments that add :class:`StepProgress` to the configured callbacks,
    unless ``trainer.enable_progress_bar`` is false or a progress bar is configured already
    (an empty dict then)."""
    if trainer_config.get("enable_progress_bar") is False:
        return {}
    callbacks = trainer_config.get("callbacks")
    if callbacks is None:
        callbacks = []
    elif not isinstance(callbacks, list):
        callbacks = [callbacks]
    if any(isinstance(c, ProgressBar) for c in callbacks):
        return {}
    return {"callbacks": [*callbacks, StepProgress()]}
