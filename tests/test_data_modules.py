"""The data modules: one base, one subclass per source, each taking only its own keys; the
class a ``data`` section builds (``class_path``, or a flat section of an earlier version:
``probe`` picks it); checkpoints of the earlier single class; and the rules that pair the
data with the model, each refused once, before anything is built, in one line."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
import torch
from cli_helpers import CONFIGS, fit_preempted, probe_fit_args

from roformer_lit.commands import EXIT_PREEMPTED, EXIT_USER_ERROR, main
from roformer_lit.commands.checkpoint_settings import checkpoint_settings
from roformer_lit.commands.prelaunch import CROSS_SECTION_RULES, check_fit_config
from roformer_lit.commands.pretrain import validate_config
from roformer_lit.data import CorpusDataModule, PretrainDataModule, ProbeDataModule
from roformer_lit.data.modules import DATA_MODULES, class_path, data_module, resolve
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.results.extrapolate import run_settings
from roformer_lit.safe_input import safe_yaml_load

PACKAGE = Path(__file__).resolve().parents[1] / "roformer_lit"

#: The arguments of the single data module of earlier versions, with their defaults: what
#: its checkpoints saved (``vocab_size`` as ``requested_vocab_size``) and its flat
#: sections could hold. Written out here, independent of the classes under test.
OLD_ARGUMENTS: dict[str, Any] = {
    "train_files": None,
    "val_files": None,
    "val_fraction": 0.05,
    "text_field": "text",
    "dataset": None,
    "dataset_config": None,
    "dataset_split": "train",
    "dataset_val_split": None,
    "dataset_streaming": False,
    "tokenizer_file": None,
    "vocab_size": 8192,
    "tokenizer_sample_mb": 64,
    "max_length": 128,
    "batch_size": 32,
    "mlm_probability": 0.15,
    "num_workers": 0,
    "num_proc": None,
    "seed": 0,
    "cache_dir": None,
    "max_val_blocks": None,
    "max_train_blocks": None,
    "document_mask": False,
    "random_positions": None,
    "probe": None,
    "probe_min_length": 1,
    "probe_max_length": 16,
    "probe_symbols": 16,
    "probe_hint": 0.0,
    "validation_positions": "ordinary",
}
#: The old keys that only mean something for a position task.
TASK_KEYS = {"probe", "probe_min_length", "probe_max_length", "probe_symbols", "probe_hint"}
#: ... and those that only mean something for a corpus.
CORPUS_KEYS = {
    "train_files",
    "val_files",
    "val_fraction",
    "text_field",
    "dataset",
    "dataset_config",
    "dataset_split",
    "dataset_val_split",
    "dataset_streaming",
    "tokenizer_file",
    "vocab_size",
    "tokenizer_sample_mb",
    "mlm_probability",
    "num_proc",
    "cache_dir",
    "max_train_blocks",
    "document_mask",
}


def old_saved(**values: Any) -> dict[str, Any]:
    """``datamodule_hyper_parameters`` as the single class of earlier versions saved them."""
    saved = {**OLD_ARGUMENTS, **values}
    saved["requested_vocab_size"] = saved.pop("vocab_size")
    return saved


# -- each module takes only its own keys -------------------------------------------------


def test_the_sources_split_the_old_arguments_between_them():
    shared = set(OLD_ARGUMENTS) - TASK_KEYS - CORPUS_KEYS
    assert set(PretrainDataModule.arguments()) == shared
    assert set(CorpusDataModule.arguments()) == shared | CORPUS_KEYS
    assert set(ProbeDataModule.arguments()) == shared | TASK_KEYS


def test_each_argument_is_stored_once_in_the_hyperparameters():
    dm = ProbeDataModule(probe="reverse", max_length=33, batch_size=8)
    assert dm.hparams["probe"] == "reverse" and dm.hparams["batch_size"] == 8
    assert "batch_size" not in vars(dm) and "probe" not in vars(dm)
    assert dm.batch_size == 8  # read through to the hyperparameters
    corpus = CorpusDataModule(vocab_size=300, max_length=64)
    assert corpus.hparams["requested_vocab_size"] == 300 and "vocab_size" not in corpus.hparams
    assert set(corpus.hparams) == set(CorpusDataModule.arguments()) - {"vocab_size"} | {
        "requested_vocab_size"
    }


@pytest.mark.parametrize("key", sorted(CORPUS_KEYS - {"vocab_size"}))
def test_a_corpus_key_with_a_task_config_is_one_line_naming_the_valid_keys(key):
    value = {"document_mask": "true", "dataset_streaming": "true"}.get(key, "7")
    config = ["--config", str(CONFIGS / "probes" / "copy.yaml")]
    with pytest.raises(ConfigError) as info:
        validate_config([*config, f"--data.{key}", value])
    line = str(info.value)
    assert "\n" not in line and line.startswith(f"data.{key}")
    valid = line.split("valid: ")[1].split(", ")
    assert valid == sorted(ProbeDataModule.arguments())


def test_a_task_key_with_a_corpus_config_is_one_line_naming_the_valid_keys():
    with pytest.raises(ConfigError) as info:
        validate_config(["--config", str(CONFIGS / "rope.yaml"), "--data.probe_symbols", "8"])
    line = str(info.value)
    assert "\n" not in line and "data.probe_symbols=8 needs data.probe" in line
    assert line.split("valid: ")[1].split(", ") == sorted(CorpusDataModule.arguments())


def test_the_command_line_refuses_a_corpus_key_with_a_task_in_one_line(tmp_path, capsys):
    args = [*probe_fit_args("copy"), "--data.train_files", "x.txt", "--trainer.logger", "false"]
    args += ["--trainer.default_root_dir", str(tmp_path)]
    assert main(args) == EXIT_USER_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: data.train_files='x.txt' cannot go with")
    assert not list(tmp_path.iterdir())


# -- which class a section builds ----------------------------------------------------------

SHIPPED = sorted(
    str(p.relative_to(CONFIGS))
    for p in [*CONFIGS.glob("*.yaml"), *CONFIGS.glob("probes/*.yaml"), *CONFIGS.glob("recipes/*")]
)


@pytest.mark.parametrize("config", SHIPPED)
def test_a_shipped_flat_config_builds_the_class_its_probe_key_says(config):
    document = safe_yaml_load((CONFIGS / config).read_text(encoding="utf-8"))
    has_task = (document.get("data") or {}).get("probe") is not None
    resolved = validate_config(["--config", str(CONFIGS / config)], prelaunch=False)
    cls, settings = resolve(resolved.data)
    assert cls is (ProbeDataModule if has_task else CorpusDataModule)
    assert set(settings) == set(cls.arguments())


def test_an_old_run_config_with_every_key_loads(tmp_path):
    """A run's ``config.yaml`` of an earlier version: every key of the single class."""
    for task, expected in ((None, CorpusDataModule), ("sort", ProbeDataModule)):
        data = {**OLD_ARGUMENTS, "probe": task, "max_length": 33}
        path = tmp_path / f"{task}.yaml"
        path.write_text(
            "data:\n" + "".join(f"  {k}: {_yaml(v)}\n" for k, v in data.items()),
            encoding="utf-8",
        )
        resolved = validate_config(["--config", str(path)], prelaunch=False)
        cls, settings = resolve(resolved.data)
        assert cls is expected and settings["max_length"] == 33
        assert settings.get("probe") == task


def _yaml(value: Any) -> str:
    return (
        "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    )


def test_a_section_names_its_class_by_class_path():
    args = ["--config", str(CONFIGS / "rope.yaml"), "--data", class_path(ProbeDataModule)]
    resolved = validate_config([*args, "--data.probe", "copy", "--data.max_length", "33"])
    cls, settings = resolve(resolved.data)
    assert cls is ProbeDataModule and settings["probe"] == "copy"
    assert settings["batch_size"] == 16  # base.yaml's, kept across the switch


def test_an_old_flat_section_with_a_non_default_key_of_the_other_source_is_one_line():
    with pytest.raises(ConfigError) as info:
        data_module({**OLD_ARGUMENTS, "probe": "copy", "max_length": 33, "vocab_size": 99}, False)
    assert str(info.value).startswith("data.vocab_size=99 cannot go with data.probe='copy'")


# -- checkpoints of the earlier single class -------------------------------------------------


@pytest.mark.parametrize("task", [None, "copy"])
def test_an_old_checkpoint_fills_the_class_of_its_run(task):
    saved = old_saved(probe=task, max_length=33, batch_size=8, probe_symbols=12)
    checkpoint = {"datamodule_hyper_parameters": saved, "hyper_parameters": {}}
    parsed = validate_config(["--config", str(CONFIGS / "rope.yaml")], prelaunch=False)
    fill, _ = checkpoint_settings(checkpoint, parsed, set(), resume=False, path="old.ckpt")
    section = fill["data"]
    values = section["init_args"]  # the run's class is named, whatever the command's
    if task is None:
        assert section["class_path"] == class_path(CorpusDataModule)
        assert values["max_length"] == 33 and "probe_symbols" not in values
        return
    assert section["class_path"] == class_path(ProbeDataModule)
    assert values["probe"] == "copy" and values["probe_symbols"] == 12
    assert values["batch_size"] == 8 and not set(values) & CORPUS_KEYS


@pytest.mark.parametrize("task", [None, "copy"])
def test_extrapolate_reads_an_old_checkpoints_data(tmp_path, task):
    saved = old_saved(probe=task, max_length=33, cache_dir=str(tmp_path), probe_symbols=12)
    settings = run_settings(tmp_path / "x.ckpt", {"datamodule_hyper_parameters": saved})
    expected = ProbeDataModule if task else CorpusDataModule
    assert set(settings.saved) <= set(expected.arguments())
    if task:
        dm = data_module(settings.data)
        assert isinstance(dm, ProbeDataModule) and dm.probe_symbols == 12


@pytest.mark.trainer
def test_an_old_checkpoint_validates_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert fit_preempted(probe_fit_args("copy", 3, 2), 2) == EXIT_PREEMPTED  # resumable
    (ckpt,) = tmp_path.glob("runs/probes/*/checkpoints/last.ckpt")
    checkpoint = torch.load(ckpt, map_location="cpu", weights_only=True)
    new = checkpoint["datamodule_hyper_parameters"]
    checkpoint["datamodule_hyper_parameters"] = old_saved(**new)  # the old class's form
    old = tmp_path / "old.ckpt"
    torch.save(checkpoint, old)
    capsys.readouterr()
    assert main(["validate", "--ckpt_path", str(old)]) == 0
    assert "val/exact" in capsys.readouterr().out  # validated as the position task it is
    resumed = [*probe_fit_args("copy", 3, 2), "--ckpt_path", str(ckpt)]
    ckpt.unlink()
    torch.save(checkpoint, ckpt)  # its own run's last.ckpt, in the old form
    assert main(resumed) == 0


# -- the rules that pair the data with the model ----------------------------------------------

#: (settings over configs/rope.yaml, words of the one line): one case per cross-section
#: rule of commands/prelaunch.py, and the data's own pair rules.
REFUSED = {
    "document_mask needs segments": (
        ["--data.document_mask", "true", "--model.attention", "linear"],
        ["data.document_mask", "model.attention='linear'", "valid: softmax"],
    ),
    "random positions need a reader": (
        ["--data.random_positions", "256", "--model.position", "nope"],
        ["data.random_positions=256", "model.position='nope'", "valid:", "rope"],
    ),
    "random positions fit the table": (
        ["--data.random_positions", "1024", "--model.position", "learned"],
        ["data.random_positions=1024", "model.max_positions=512", "'learned'"],
    ),
    "random positions and the document mask": (
        ["--data.random_positions", "256", "--data.document_mask", "true"],
        ["data.random_positions=256", "data.document_mask"],
    ),
    "random positions and the block length": (
        ["--data.random_positions", "64"],
        ["data.random_positions", "data.max_length=128", "got 64"],
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_each_pair_rule_is_refused_before_anything_is_built_in_one_line(case):
    extra, words = REFUSED[case]
    parsed = validate_config(["--config", str(CONFIGS / "rope.yaml"), *extra], prelaunch=False)
    with pytest.raises(ConfigError) as info:
        check_fit_config(parsed)
    line = str(info.value)
    assert "\n" not in line and all(word in line for word in words), line


def test_the_cross_section_table_has_one_refusing_case_each():
    """Every rule of the table refuses one of the cases above, and no case passes it."""
    parsed = {
        case: validate_config(
            ["--config", str(CONFIGS / "rope.yaml"), *REFUSED[case][0]], prelaunch=False
        )
        for case in REFUSED
    }
    for rule in CROSS_SECTION_RULES:
        refused = []
        for case, config in parsed.items():
            architecture = EncoderConfig.from_settings(config.model.as_dict())
            _, data = resolve(config.data)
            try:
                rule(architecture, data)
            except ConfigError:
                refused.append(case)
        assert len(refused) == 1, (rule.__name__, refused)


#: The words of each pair rule's refusal: written in one module of the package only.
RULE_WORDS = {
    "needs an attention kernel that keeps documents apart": "commands/prelaunch.py",
    "needs a position scheme that reads positions": "commands/prelaunch.py",
    "exceeds model.max_positions=": "commands/prelaunch.py",
    "exceeds the {config.position!r} position": "commands/prelaunch.py",
    "cannot go with data.document_mask=": "data/corpus_module.py",
    "must be >= data.max_length=": "data/datamodule.py",
}


@pytest.mark.parametrize("words", sorted(RULE_WORDS))
def test_each_pair_rule_is_decided_in_one_place(words):
    holders = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if words in p.read_text(encoding="utf-8")
    )
    assert holders == [RULE_WORDS[words]]


def test_the_data_modules_are_the_registered_ones():
    assert DATA_MODULES[0] is CorpusDataModule and ProbeDataModule in DATA_MODULES
    for cls in DATA_MODULES:
        signature = inspect.signature(cls.__init__).parameters
        assert "kwargs" in signature  # the base's arguments are passed on, not repeated
        assert not set(signature) & set(PretrainDataModule.arguments())


@pytest.mark.parametrize(
    "flags,expected",
    [
        (["--data.probe_max_length", "8", "--data.max_length", "17", "--data.probe", "copy"], 8),
        (["--data.max_train_blocks", "null", "--data.probe=copy", "--data.max_length=33"], 16),
    ],
)
def test_a_probe_flag_picks_the_class_whatever_the_order_of_the_flags(flags, expected):
    resolved = validate_config(["--config", str(CONFIGS / "rope.yaml"), *flags])
    cls, settings = resolve(resolved.data)
    assert cls is ProbeDataModule and settings["probe_max_length"] == expected
    assert settings["batch_size"] == 16  # base.yaml's, kept across the switch


def test_a_null_probe_flag_picks_the_corpus():
    args = ["--config", str(CONFIGS / "probes" / "copy.yaml"), "--data.probe", "null"]
    cls, settings = resolve(validate_config(args, prelaunch=False).data)
    assert cls is CorpusDataModule and settings["max_length"] == 33
