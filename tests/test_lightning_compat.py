"""One test per reach into Lightning's private API (roformer_lit.training.lightning_compat).

Each test runs a tiny real fit and checks the reach answers what Lightning then does, so a
Lightning release that moves an internal fails here, by name, instead of silently turning a
feature off."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
import torch
from lightning.pytorch import Callback, Trainer
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.demos.boring_classes import BoringModel
from lightning.pytorch.utilities.exceptions import SIGTERMException

from roformer_lit.data.dataset import ResumableDataLoader
from roformer_lit.training import lightning_compat as compat


class Record(Callback):
    """Calls ``probe(trainer)`` after every training batch; notes the steps validated at."""

    def __init__(self, probe) -> None:
        self.probe, self.answers, self.validated = probe, {}, []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.answers[(trainer.current_epoch, batch_idx, trainer.global_step)] = self.probe(trainer)

    def on_validation_start(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            self.validated.append(trainer.global_step)


def fit(
    callback: Callback, callbacks_extra: Sequence[Callback] = (), **trainer_args: Any
) -> Trainer:
    args = dict(
        max_steps=6,
        val_check_interval=2,
        limit_val_batches=1,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=bool(callbacks_extra),
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
    )
    trainer = Trainer(**{**args, **trainer_args}, callbacks=[callback, *callbacks_extra])
    trainer.fit(BoringModel())
    return trainer


def test_validation_follows_batch_answers_what_the_loop_does() -> None:
    record = Record(compat.validation_follows_batch)
    fit(record)
    assert record.validated == [2, 4, 6]
    assert sorted(step for (_, _, step), follows in record.answers.items() if follows) == [2, 4, 6]


def test_accumulating_is_true_on_the_batches_before_each_optimiser_step() -> None:
    record = Record(compat.accumulating)
    fit(record, accumulate_grad_batches=3, max_steps=-1, max_epochs=1, limit_train_batches=7)
    # batches 0-2 make step 1, 3-5 step 2, and the epoch's last batch (6) steps alone
    assert {batch: yes for (_, batch, _), yes in record.answers.items()} == {
        0: True,
        1: True,
        2: False,
        3: True,
        4: True,
        5: False,
        6: False,
    }


def test_validates_after_batch_answers_what_the_loop_does() -> None:
    record = Record(compat.validates_after_batch)
    fit(record)
    assert None not in record.answers.values()
    assert sorted(step for (_, _, step), yes in record.answers.items() if yes) == record.validated


def test_validates_after_batch_is_true_in_an_epoch_without_validation() -> None:
    record = Record(compat.validates_after_batch)
    fit(
        record,
        max_steps=4,
        limit_train_batches=2,
        val_check_interval=None,
        check_val_every_n_epoch=2,
    )
    # epoch 0 never validates (True: nothing for ValidateAtEnd to add); epoch 1 at its end
    assert record.answers[(0, 0, 1)] is True and record.answers[(0, 1, 2)] is True
    assert record.validated == [4]


def test_can_stop_early_follows_min_steps() -> None:
    record = Record(compat.can_stop_early)
    fit(record, min_steps=4, max_steps=6, min_epochs=0)
    assert {step: yes for (_, _, step), yes in record.answers.items()} == {
        1: False,
        2: False,
        3: False,
        4: True,
        5: True,
        6: True,
    }


def test_ready_batches_reached_at_the_last_batch_of_each_epoch() -> None:
    record = Record(compat.ready_batches_reached)
    fit(record, max_steps=-1, max_epochs=2, limit_train_batches=3, val_check_interval=None)
    last = sorted((epoch, batch) for (epoch, batch, _), yes in record.answers.items() if yes)
    assert last == [(0, 2), (1, 2)]


def test_stop_as_if_sigterm_ends_the_loop_after_the_step() -> None:
    class StopAtThree(Callback):
        seen: list[BaseException] = []

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            if trainer.global_step == 3:
                compat.stop_as_if_sigterm(trainer)

        def on_exception(self, trainer, pl_module, exception) -> None:
            self.seen.append(exception)
            self.step = trainer.global_step

    callback = StopAtThree()
    trainer = None
    with pytest.raises(SIGTERMException):
        trainer = fit(callback, val_check_interval=None, limit_val_batches=0)
    assert len(callback.seen) == 1 and isinstance(callback.seen[0], SIGTERMException)
    assert callback.step == 3  # after the step it was asked in, not later
    assert trainer is None


class Abort(Exception):
    pass


@pytest.mark.parametrize("name", compat.CLI_OVERRIDES)
def test_lightning_cli_still_calls_each_overridden_method(name: str) -> None:
    called = []

    def spy(self) -> None:
        called.append(name)
        getattr(LightningCLI, name)(self)

    class Spying(LightningCLI):
        def before_instantiate_classes(self) -> None:
            raise Abort

    setattr(Spying, name, spy)
    with pytest.raises(Abort):
        Spying(BoringModel, args=["fit", "--trainer.max_steps", "1"], save_config_callback=None)
    assert called == [name]


def test_subcommand_options_resolve_what_was_typed() -> None:
    seen = {}

    class Capture(LightningCLI):
        def before_instantiate_classes(self) -> None:
            seen["options"] = compat.subcommand_options(self, "fit")
            raise Abort

    with pytest.raises(Abort):
        Capture(BoringModel, args=["fit", "--trainer.max_steps", "7"], save_config_callback=None)
    options = seen["options"]
    assert options["--trainer.max_steps"].dest == "trainer.max_steps"
    assert "--ckpt_path" in options and "--config" in options


BORING_DATA = "lightning.pytorch.demos.boring_classes.BoringDataModule"


@pytest.mark.parametrize(
    "typed",
    [
        ["--data", BORING_DATA, "--data.bogus", "3"],
        [f"--data.class_path={BORING_DATA}", "--data.init_args.bogus=3"],
    ],
)
def test_refused_data_key_reads_what_the_parser_refused(typed: list[str]) -> None:
    """jsonargparse gives no structured error: the key, its value and the class named are
    read from its text; a parser release that words it otherwise fails here."""
    from lightning.pytorch.demos.boring_classes import BoringDataModule

    with pytest.raises(Exception) as raised:  # noqa: PT011 (whatever the parser raises)
        LightningCLI(
            BoringModel,
            BoringDataModule,
            subclass_mode_data=True,
            args=["fit", *typed],
            save_config_callback=None,
            parser_kwargs={"exit_on_error": False},
        )
    assert compat.refused_data_key(raised.value) == ("bogus", 3, BORING_DATA)
    assert compat.refused_data_key(ValueError('key "model" is wrong')) is None


def test_the_resumable_loader_index_sampler_skips_what_was_handed_out() -> None:
    """torch's ``DataLoader._index_sampler`` (overridden by ResumableDataLoader)."""
    data = torch.arange(12)
    first = ResumableDataLoader(data, batch_size=2)
    iterator = iter(first)
    seen = [next(iterator), next(iterator)]
    resumed = ResumableDataLoader(data, batch_size=2)
    resumed.load_state_dict(first.state_dict())
    rest = list(resumed)
    assert torch.equal(torch.cat([*seen, *rest]), data)


def test_compat_cli_calls_the_public_steps_in_lightnings_order() -> None:
    """``CompatCLI`` routes Lightning's ``_parse_ckpt_path`` and ``_set_seed`` to the public
    names the CLI overrides, in the order Lightning calls them."""
    called = []

    class Routed(compat.CompatCLI):
        def check_ckpt_path(self) -> None:
            called.append("check_ckpt_path")

        def set_seed(self) -> None:
            called.append("set_seed")

        def before_instantiate_classes(self) -> None:
            raise Abort

    with pytest.raises(Abort):
        Routed(BoringModel, args=["fit", "--trainer.max_steps", "1"], save_config_callback=None)
    assert called == ["check_ckpt_path", "set_seed"]


def test_compat_cli_defaults_to_lightnings_own_steps() -> None:
    """Not overridden, ``set_seed`` seeds torch with ``seed_everything`` as Lightning does."""

    class Stop(compat.CompatCLI):
        def before_instantiate_classes(self) -> None:
            raise Abort

    for seed in (7, 11):
        with pytest.raises(Abort):
            Stop(
                BoringModel, args=["fit", "--seed_everything", str(seed)], save_config_callback=None
            )
        assert torch.initial_seed() == seed


RANK_VARIABLES = ("RANK", "LOCAL_RANK", "SLURM_PROCID", "JSM_NAMESPACE_RANK")


@pytest.mark.parametrize(
    ("environment", "rank"),
    [
        ({}, None),
        ({"LOCAL_RANK": "3"}, 3),
        ({"SLURM_PROCID": "2"}, 2),
        ({"RANK": "1", "LOCAL_RANK": "3"}, 1),
    ],
)
def test_launch_rank_reads_the_launchers_environment(monkeypatch, environment, rank) -> None:
    """The global rank where the launcher sets one, else the local one, else SLURM's."""
    for name in RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert compat.launch_rank() == rank


@pytest.mark.parametrize("save_last", [True, False])
def test_refresh_last_checkpoint_writes_last_at_the_current_step(tmp_path, save_last) -> None:
    from lightning.pytorch.callbacks import ModelCheckpoint

    checkpoint = ModelCheckpoint(dirpath=tmp_path, save_last=save_last, save_top_k=0)
    last = tmp_path / "last.ckpt"
    seen = {}

    class RefreshAtThree(Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            if trainer.global_step == 3:
                compat.refresh_last_checkpoint(checkpoint, trainer)
                seen["written"] = last.is_file()
                if last.is_file():
                    seen["step"] = torch.load(last, weights_only=False)["global_step"]

    fit(
        RefreshAtThree(), limit_val_batches=0, val_check_interval=None, callbacks_extra=[checkpoint]
    )
    assert seen == ({"written": True, "step": 3} if save_last else {"written": False})


@pytest.mark.parametrize(
    ("trainer_args", "own_setting", "at_epoch_end"),
    [
        ({"limit_val_batches": 0, "val_check_interval": None}, None, True),  # no validation
        ({"val_check_interval": 2}, None, False),  # validation inside the epoch
        ({"val_check_interval": None, "check_val_every_n_epoch": 2}, None, False),
        ({"val_check_interval": 2}, True, True),  # the callback's own setting wins
    ],
)
def test_saves_on_train_epoch_end_follows_the_validation_schedule(
    tmp_path, trainer_args, own_setting, at_epoch_end
) -> None:
    from lightning.pytorch.callbacks import ModelCheckpoint

    checkpoint = ModelCheckpoint(dirpath=tmp_path, save_on_train_epoch_end=own_setting)
    record = Record(lambda trainer: compat.saves_on_train_epoch_end(checkpoint, trainer))
    fit(record, callbacks_extra=[checkpoint], **trainer_args)
    assert set(record.answers.values()) == {at_epoch_end}


@pytest.mark.parametrize("save_on_train_epoch_end", [False, True])
def test_epochs_trained_reads_the_loops_state_a_checkpoint_records(
    tmp_path, save_on_train_epoch_end
) -> None:
    """A ModelCheckpoint saving at every validation (after each of 2 batches of each of 2
    epochs) or at each epoch's end: every checkpoint counts the epochs whose batches were
    all trained (its step // 2), where its ``epoch`` counts those the loop had closed; and
    resuming one (with the run's own settings) at its count of ``max_epochs`` trains
    nothing, as Lightning decides."""
    from lightning.pytorch.callbacks import ModelCheckpoint

    checkpoint = ModelCheckpoint(
        dirpath=tmp_path,
        filename="{step}",
        save_top_k=-1,
        save_on_train_epoch_end=save_on_train_epoch_end,
    )
    args = {"max_steps": -1, "max_epochs": 2, "limit_train_batches": 2, "val_check_interval": 1}
    fit(Callback(), callbacks_extra=[checkpoint], **args)
    saved = {
        path: torch.load(path, map_location="cpu", weights_only=True)
        for path in sorted(tmp_path.glob("*.ckpt"))
    }
    assert len(saved) == (2 if save_on_train_epoch_end else 4), sorted(saved)
    counted = {path.name: compat.epochs_trained(ckpt) for path, ckpt in saved.items()}
    assert counted == {p.name: ckpt["global_step"] // 2 for p, ckpt in saved.items()}
    closed = {path.name: ckpt["epoch"] for path, ckpt in saved.items()}
    assert closed != counted  # the saves after an epoch's last batch record the epoch before
    for path, ckpt in saved.items():
        trainer = Trainer(
            **{**args, "max_epochs": counted[path.name]},
            limit_val_batches=1,
            num_sanity_val_steps=0,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        if counted[path.name] > 0:
            trainer.fit(BoringModel(), ckpt_path=path)
            assert trainer.global_step == ckpt["global_step"], path.name


@pytest.mark.parametrize(
    ("interval", "by_time"), [(timedelta(seconds=5), True), (2, False), (1.0, False)]
)
def test_validates_by_time_when_the_interval_is_a_duration(interval, by_time) -> None:
    trainer = Trainer(val_check_interval=interval, logger=False, enable_checkpointing=False)
    assert compat.validates_by_time(trainer) is by_time


def test_hyperparameters_as_the_tensorboard_logger_writes_them(tmp_path) -> None:
    from argparse import Namespace

    from lightning.pytorch.loggers import TensorBoardLogger

    assert compat.hyperparameters_as_dict(Namespace(lr=0.1, name="x")) == {"lr": 0.1, "name": "x"}
    assert compat.hyperparameters_as_dict({"lr": 0.1}) == {"lr": 0.1}
    logger = TensorBoardLogger(tmp_path)
    nested = {"model": {"hidden": 8, "plan": [1, 2]}, "table": torch.zeros(2, 2), "lr": 0.1}
    flat = compat.flat_hyperparameters(logger, nested)
    assert set(flat) == {"model/hidden", "model/plan", "table", "lr"}
    assert flat["model/hidden"] == 8 and flat["lr"] == 0.1
    assert flat["model/plan"] == str([1, 2]) and flat["table"] == str(torch.zeros(2, 2))


def test_event_file_writer_writes_into_the_loggers_event_file(tmp_path) -> None:
    from lightning.pytorch.loggers import TensorBoardLogger
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard.summary import scalar

    logger = TensorBoardLogger(tmp_path, name="run", version=0)
    writer = compat.event_file_writer(logger)
    writer.add_summary(scalar("probe/value", 2.5), 4)
    writer.flush()
    events = EventAccumulator(logger.log_dir)
    events.Reload()
    [point] = events.Scalars("probe/value")
    assert (point.step, point.value) == (4, 2.5)


@pytest.mark.parametrize("batch_size", [3, None])
def test_index_sampler_hook_wraps_what_torch_iterates(batch_size) -> None:
    """torch's ``DataLoader._index_sampler``: the batch sampler when batching, else the
    sampler; what ``wrap_index_sampler`` returns is what the loader iterates."""
    given = []

    class Reversed(compat.IndexSamplerHook):
        def wrap_index_sampler(self, sampler):
            given.append(sampler)
            return list(reversed(list(sampler)))

    data = torch.arange(7)
    plain = torch.utils.data.DataLoader(data, batch_size=batch_size)
    loader = Reversed(data, batch_size=batch_size)
    expected = list(reversed([batch.tolist() for batch in plain]))
    assert [batch.tolist() for batch in loader] == expected
    assert given == [loader.batch_sampler if batch_size else loader.sampler]
