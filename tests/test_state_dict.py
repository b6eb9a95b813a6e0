"""Each tensor of ``MaskedLM`` has one name, old checkpoints still load, and ``predict``
places tokens as validation does.

Checkpoints written before the model registered its encoder once hold every encoder
tensor a second time under ``_encode.*``; the checkpoint readers drop those names
(:func:`roformer_lit.training.checkpoint_io.drop_duplicate_weights`)."""

from __future__ import annotations

from collections import defaultdict

import lightning
import pytest
import torch
from model_factory import random_ids, small_model

from roformer_lit import POSITION_SCHEMES, MaskedLM
from roformer_lit.training.checkpoint_io import read_checkpoint


def names_per_tensor(model: torch.nn.Module) -> dict[tuple, list[str]]:
    """state_dict names grouped by the memory they hold (storage, offset, shape, stride)."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for name, tensor in model.state_dict(keep_vars=True).items():
        if tensor.numel() == 0:
            continue  # empty tensors share no memory that matters
        where = (
            tensor.untyped_storage().data_ptr(),
            tensor.storage_offset(),
            tuple(tensor.shape),
            tuple(tensor.stride()),
        )
        groups[where].append(name)
    return groups


@pytest.mark.parametrize("compile", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("position", sorted(POSITION_SCHEMES))
def test_no_tensor_has_two_names(position, compile):
    model = small_model(position, compile=compile)
    shared = {names[0]: names[1:] for names in names_per_tensor(model).values() if len(names) > 1}
    assert not shared, f"{position}: tensors under two names: {shared}"
    assert all(not key.startswith("_encode") for key in model.state_dict())


@pytest.mark.parametrize("position", sorted(POSITION_SCHEMES))
def test_a_state_dict_of_today_loads_strictly_and_predicts_the_same(position):
    model = small_model(position, seed=0)
    other = small_model(position, seed=1)
    ids = random_ids(2, 12)
    before = other(ids)
    other.load_state_dict(model.state_dict(), strict=True)
    assert not torch.equal(before, model(ids))  # the load changed something
    assert torch.equal(other(ids), model(ids))


def old_checkpoint(model: MaskedLM, path) -> dict[str, torch.Tensor]:
    """A checkpoint as earlier versions wrote it: every encoder tensor also as ``_encode.*``."""
    state = dict(model.state_dict())
    state.update(
        {f"_encode.{k[len('encoder.') :]}": v for k, v in state.items() if k.startswith("encoder.")}
    )
    torch.save(
        {
            "state_dict": state,
            "hyper_parameters": dict(model.hparams),
            "pytorch-lightning_version": lightning.__version__,
        },
        path,
    )
    return state


@pytest.mark.parametrize("position", ["rope", "t5"])
def test_a_checkpoint_with_the_old_duplicate_names_still_loads(position, tmp_path):
    model = small_model(position)
    path = tmp_path / "old.ckpt"
    state = old_checkpoint(model, path)
    assert any(k.startswith("_encode.") for k in state)
    read = read_checkpoint(path)
    assert set(read["state_dict"]) == set(model.state_dict())
    loaded = MaskedLM.from_checkpoint(path).eval()
    ids = random_ids(2, 12)
    assert torch.equal(loaded(ids), model(ids))


def test_predict_places_tokens_at_the_batchs_positions(monkeypatch):
    model = small_model("rope")
    ids = random_ids(2, 10)
    positions = torch.arange(10).mul(7).expand(2, 10)
    seen = []
    forward = model.encoder.forward

    def spy(*args, **kwargs):
        seen.append(kwargs.get("position_ids"))
        return forward(*args, **kwargs)

    monkeypatch.setattr(model.encoder, "forward", spy)
    predicted = model.predict_step({"input_ids": ids, "position_ids": positions}, 0)
    assert len(seen) == 1 and seen[0] is positions
    assert torch.equal(predicted, model(ids, position_ids=positions).argmax(-1))
