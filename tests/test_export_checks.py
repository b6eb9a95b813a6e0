"""Every export is checked before it appears: the written directory, loaded by transformers
alone, must give the model's logits (``interop.verify``), and ``config.json`` records the
oldest transformers that reads it (``interop.versions``), checked on both sides.

The check is shown to act: an export damaged between our model and the files (a tensor
left at its initialisation, a setting written otherwise, a layer dropped) is refused in one
line, and nothing is left at the target -- an empty directory the user made stays there,
empty. Every registered architecture is covered.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hf_models import small_model
from tokenizer_factory import tiny_tokenizer

transformers = pytest.importorskip("transformers")

from roformer_lit import ConfigError, export_hf, import_hf  # noqa: E402
from roformer_lit.interop import ARCHITECTURES, export  # noqa: E402
from roformer_lit.interop.config_keys import hf_keys  # noqa: E402
from roformer_lit.interop.verify import TOLERANCE, probe_batch  # noqa: E402
from roformer_lit.interop.versions import FLOOR_KEY  # noqa: E402

MODEL_TYPES = sorted(ARCHITECTURES)


@pytest.fixture(autouse=True, scope="module")
def _quiet_progress():
    transformers.utils.logging.disable_progress_bar()
    yield
    transformers.utils.logging.enable_progress_bar()


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_export_records_its_architectures_floor_and_loads_back(model_type, tmp_path):
    model = small_model(model_type)
    out = export_hf(model, tmp_path / "hf", tiny_tokenizer(model.config.vocab_size))
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["model_type"] == model_type
    assert config[FLOOR_KEY] == ARCHITECTURES[model_type].transformers_floor
    ids, mask = probe_batch(model.config)
    with torch.no_grad():
        back = import_hf(out)(ids, mask)
        ours = model(ids, mask)
    assert torch.equal(back[mask.bool()], ours[mask.bool()])  # float32 both ways: exact


def _reinitialise_a_tensor(hf: Any, model_type: str) -> None:
    linear = next(m for m in hf.modules() if isinstance(m, torch.nn.Linear))
    with torch.no_grad():
        linear.weight.normal_(0, 0.02)


def _write_a_setting_otherwise(hf: Any, model_type: str) -> None:
    key = hf_keys(ARCHITECTURES[model_type])["layer_norm_eps"]
    setattr(hf.config, key, 0.5)  # the files say another epsilon than the model uses


def _drop_a_layer(hf: Any, model_type: str) -> None:
    hf.config.num_hidden_layers -= 1
    if getattr(hf.config, "layer_types", None):
        hf.config.layer_types = hf.config.layer_types[:-1]


DAMAGE: list[Callable[[Any, str], None]] = [
    _reinitialise_a_tensor,
    _write_a_setting_otherwise,
    _drop_a_layer,
]


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_an_export_that_would_not_give_the_models_logits_is_refused(
    model_type, damage, tmp_path, monkeypatch, capfd
):
    real = export.to_hf_model

    def damaged(model: Any, *args: Any, **kwargs: Any) -> Any:
        hf = real(model, *args, **kwargs)
        damage(hf, model_type)
        return hf

    monkeypatch.setattr(export, "to_hf_model", damaged)
    model = small_model(model_type)
    target = tmp_path / "users-empty-dir"
    target.mkdir()
    capfd.readouterr()
    with pytest.raises(ConfigError) as info:
        export_hf(model, target, tiny_tokenizer(model.config.vocab_size))
    message = str(info.value)
    assert "\n" not in message and "failed its check" in message, message
    assert str(target) in message
    assert capfd.readouterr() == ("", "")  # no load report, no progress bar
    assert os.listdir(tmp_path) == ["users-empty-dir"]  # no staging left, the dir kept
    assert os.listdir(target) == []


def test_the_tolerance_is_relative_to_the_logits_scale():
    """Documented in docs/guide/interop.md; a smaller one would refuse float32 rounding."""
    assert 0 < TOLERANCE <= 1e-3


def test_the_probe_passes_every_window_and_pads_a_row():
    model = small_model("modernbert", max_positions=64)
    ids, mask = probe_batch(model.config)
    assert ids.shape[1] > 2 * 8  # twice the plan's window
    assert mask[0].all() and not mask[1].all()
    assert int(ids.max()) < model.config.vocab_size


def test_a_model_not_in_float32_on_the_cpu_is_checked_and_left_as_it_was(tmp_path):
    model = small_model("bert").double()
    before = {name: param.clone() for name, param in model.state_dict().items()}
    model.train()
    export_hf(model, tmp_path / "hf", tiny_tokenizer(model.config.vocab_size))
    assert model.training and next(model.parameters()).dtype == torch.float64
    assert all(torch.equal(before[name], value) for name, value in model.state_dict().items())


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_a_transformers_older_than_the_floor_is_refused_on_both_sides(
    model_type, tmp_path, monkeypatch
):
    model = small_model(model_type)
    out = export_hf(model, tmp_path / "hf", require_tokenizer=False)
    floor = ARCHITECTURES[model_type].transformers_floor
    major, minor = (int(part) for part in floor.split(".")[:2])
    older = f"{major}.{minor - 1}.0" if minor else f"{major - 1}.99.0"
    installed = sys.modules["transformers"]  # loading a model may replace the lazy module
    monkeypatch.setattr(installed, "__version__", older)
    for action in (
        lambda: export_hf(model, tmp_path / "again", require_tokenizer=False),
        lambda: import_hf(out),
    ):
        with pytest.raises(ConfigError) as info:
            action()
        message = str(info.value)
        assert "\n" not in message and f"transformers>={floor}" in message, message
        assert f"installed: {older}" in message
    assert not (tmp_path / "again").exists()
    monkeypatch.setattr(installed, "__version__", floor)
    import_hf(out)  # the floor itself is enough
