"""``import_hf`` verifies what it loaded: every way a Hugging Face directory can fail to be
the model its config describes is one ConfigError line naming what is wrong, with nothing
printed (no transformers exception, no load report) -- and nothing is ever filled with
fresh initialisation.

Every directory is made here: a tiny model of each registered architecture built by
transformers alone from a config (no download, our code plays no part), saved with
``save_pretrained``, then damaged one way per case. The table runs over every
architecture of ``interop.ARCHITECTURES``, so a new one is covered automatically.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from safetensors.torch import load_file, save_file  # noqa: E402

from roformer_lit import ConfigError, import_hf  # noqa: E402
from roformer_lit.interop import ARCHITECTURES  # noqa: E402
from roformer_lit.interop.versions import FLOOR_KEY  # noqa: E402

COMMON = dict(
    vocab_size=50,
    hidden_size=16,
    num_hidden_layers=3,
    num_attention_heads=2,
    intermediate_size=24,
    max_position_embeddings=32,
)
#: model_type -> the config of a tiny model our encoder computes exactly
HF_CONFIGS: dict[str, dict[str, Any]] = {
    "roformer": dict(type_vocab_size=1),
    "bert": dict(type_vocab_size=2),
    "deberta-v2": dict(
        relative_attention=True,
        position_buckets=8,
        max_relative_positions=16,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        type_vocab_size=0,
    ),
    "modernbert": dict(
        local_attention=8,
        global_attn_every_n_layers=3,
        pad_token_id=0,
        bos_token_id=None,
        eos_token_id=None,
        cls_token_id=None,
        sep_token_id=None,
    ),
}
MODEL_TYPES = sorted(ARCHITECTURES)


@pytest.fixture(autouse=True, scope="module")
def _quiet_progress():
    transformers.utils.logging.disable_progress_bar()
    yield
    transformers.utils.logging.enable_progress_bar()


def hf_model(model_type: str) -> Any:
    """A tiny random HF model of ``model_type``, pushed off its initialisation."""
    arch = ARCHITECTURES[model_type]
    config = getattr(transformers, arch.config_class)(**COMMON, **HF_CONFIGS[model_type])
    torch.manual_seed(0)
    hf = getattr(transformers, arch.model_class)(config)
    with torch.no_grad():
        for param in hf.parameters():
            if param.requires_grad:  # skips RoFormer's fixed sinusoid table
                param.add_(0.05 * torch.randn_like(param))
        token_types = getattr(hf.base_model.embeddings, "token_type_embeddings", None)
        if token_types is not None and model_type == "roformer":
            token_types.weight[0] = 0  # no absolute table to fold row 0 into
    return hf.eval()


def saved(model_type: str, tmp_path: Path) -> Path:
    directory = tmp_path / model_type
    hf_model(model_type).save_pretrained(directory)
    return directory


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(
        1, COMMON["vocab_size"], (2, 20), generator=torch.Generator().manual_seed(1)
    )
    mask = torch.ones_like(ids)
    mask[1, 15:] = 0
    return ids, mask


def test_every_architecture_has_a_tiny_model_here():
    assert set(HF_CONFIGS) == set(ARCHITECTURES)


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_an_intact_directory_imports_with_the_models_logits(model_type, tmp_path, capfd):
    """The baseline every damaged case departs from: it imports, silently, exactly."""
    hf = hf_model(model_type)
    hf.save_pretrained(tmp_path / "hf")
    capfd.readouterr()
    model = import_hf(tmp_path / "hf")
    assert capfd.readouterr() == ("", "")
    ids, mask = _batch()
    with torch.no_grad():
        ours, theirs = model(ids, mask), hf(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    torch.testing.assert_close(ours[real], theirs[real], atol=1e-5, rtol=0)


# -- the damage, one function each: (directory, model_type) -> the words the line must hold


def _config(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "config.json").read_text())


def _write_config(directory: Path, config: dict[str, Any]) -> None:
    (directory / "config.json").write_text(json.dumps(config))


def _state(directory: Path) -> dict[str, torch.Tensor]:
    return load_file(str(directory / "model.safetensors"))


def _write_state(directory: Path, state: dict[str, torch.Tensor]) -> None:
    save_file({k: v.contiguous() for k, v in state.items()}, str(directory / "model.safetensors"))


def _a_layer_tensor(state: dict[str, torch.Tensor]) -> str:
    return next(name for name in sorted(state) if ".1." in name and name.endswith("weight"))


def no_config(directory: Path, model_type: str) -> list[str]:
    (directory / "config.json").unlink()
    return ["no config.json"]


def invalid_json(directory: Path, model_type: str) -> list[str]:
    (directory / "config.json").write_text('{"model_type": "bert",')
    return ["config.json", "cannot read"]


def config_not_an_object(directory: Path, model_type: str) -> list[str]:
    (directory / "config.json").write_text("[1, 2]")
    return ["names no model_type"]


def unknown_model_type(directory: Path, model_type: str) -> list[str]:
    _write_config(directory, _config(directory) | {"model_type": "gpt2"})
    return ["model_type 'gpt2'", "supported:", "ModernBertForMaskedLM"]


def no_weights(directory: Path, model_type: str) -> list[str]:
    (directory / "model.safetensors").unlink()
    return ["has no weights", "model.safetensors"]


def truncated_weights(directory: Path, model_type: str) -> list[str]:
    path = directory / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return ["cannot read the weights", "model.safetensors"]


def garbage_pickle(directory: Path, model_type: str) -> list[str]:
    (directory / "model.safetensors").unlink()
    (directory / "pytorch_model.bin").write_bytes(b"not a checkpoint")
    return ["cannot read the weights", "pytorch_model.bin"]


def missing_tensor(directory: Path, model_type: str) -> list[str]:
    state = _state(directory)
    name = _a_layer_tensor(state)
    del state[name]
    _write_state(directory, state)
    return ["missing", name]


def renamed_tensor(directory: Path, model_type: str) -> list[str]:
    state = _state(directory)
    name = _a_layer_tensor(state)
    state[name.replace("weight", "wieght")] = state.pop(name)
    _write_state(directory, state)
    return ["missing", name, "unexpected", name.replace("weight", "wieght")]


def wrong_shape(directory: Path, model_type: str) -> list[str]:
    state = _state(directory)
    name = _a_layer_tensor(state)
    state[name] = state[name][..., :-1] if state[name].dim() > 1 else state[name][:-1]
    _write_state(directory, state)
    return ["wrong shape", name]


def nan_weight(directory: Path, model_type: str) -> list[str]:
    state = _state(directory)
    name = _a_layer_tensor(state)
    state[name] = state[name].clone()
    state[name].view(-1)[1] = float("nan")  # one entry among finite ones
    _write_state(directory, state)
    return ["NaN or inf", name]


def integer_weight(directory: Path, model_type: str) -> list[str]:
    state = _state(directory)
    name = _a_layer_tensor(state)
    state[name] = state[name].round().to(torch.int32)  # would be cast silently
    _write_state(directory, state)
    return ["not floating-point", name, "int32"]


def fewer_layers_in_config(directory: Path, model_type: str) -> list[str]:
    config = _config(directory)
    config["num_hidden_layers"] = 2
    if "layer_types" in config:
        config["layer_types"] = config["layer_types"][:2]
    _write_config(directory, config)
    return ["unexpected", ".2."]


def more_layers_in_config(directory: Path, model_type: str) -> list[str]:
    config = _config(directory)
    config["num_hidden_layers"] = 4
    if "layer_types" in config:
        config["layer_types"] = [*config["layer_types"], "sliding_attention"]
    _write_config(directory, config)
    return ["missing", ".3."]


def relabelled(directory: Path, model_type: str) -> list[str]:
    other = "bert" if model_type != "bert" else "roformer"
    _write_config(directory, _config(directory) | {"model_type": other})
    return ["do not match its config", "missing", "unexpected"]


def mistyped_size(directory: Path, model_type: str) -> list[str]:
    _write_config(directory, _config(directory) | {"hidden_size": "16"})
    return ["not a valid", "hidden_size"]


def floor_above_installed(directory: Path, model_type: str) -> list[str]:
    _write_config(directory, _config(directory) | {FLOOR_KEY: "999.0"})
    return ["needs transformers>=999.0", "installed"]


def floor_not_a_version(directory: Path, model_type: str) -> list[str]:
    _write_config(directory, _config(directory) | {FLOOR_KEY: "soon"})
    return [f"{FLOOR_KEY}='soon'", "not a version"]


def untied_decoder(directory: Path, model_type: str) -> list[str]:
    arch = ARCHITECTURES[model_type]
    config = getattr(transformers, arch.config_class).from_dict(_config(directory))
    name, twin = next(iter(arch.tied(config).items()))
    state = _state(directory)
    state[name] = state[twin] + 1
    _write_state(directory, state)
    return [name, "not tied", twin]


def untied_in_config_decoder_omitted(directory: Path, model_type: str) -> list[str]:
    """``tie_word_embeddings: false`` with the decoder left out: transformers builds an
    untied decoder and fills it with fresh initialisation, so it is missing (it was read as
    tied to the embeddings: other logits than transformers' own for the same directory)."""
    arch = ARCHITECTURES[model_type]
    config = getattr(transformers, arch.config_class).from_dict(_config(directory))
    name = next(iter(arch.tied(config)))
    state = _state(directory)
    state.pop(name, None)
    _write_state(directory, state)
    _write_config(directory, _config(directory) | {"tie_word_embeddings": False})
    return ["missing", name]


DAMAGE: list[Callable[[Path, str], list[str]]] = [
    no_config,
    invalid_json,
    config_not_an_object,
    unknown_model_type,
    no_weights,
    truncated_weights,
    garbage_pickle,
    missing_tensor,
    renamed_tensor,
    wrong_shape,
    nan_weight,
    integer_weight,
    fewer_layers_in_config,
    more_layers_in_config,
    relabelled,
    mistyped_size,
    floor_above_installed,
    floor_not_a_version,
    untied_decoder,
    untied_in_config_decoder_omitted,
]


def _one_line(directory: Path, capfd: pytest.CaptureFixture[str]) -> str:
    capfd.readouterr()
    with pytest.raises(ConfigError) as info:
        import_hf(directory)
    assert capfd.readouterr() == ("", "")  # no report, no warning: the line says it all
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_a_damaged_directory_is_refused_in_one_line_naming_the_damage(
    model_type, damage, tmp_path, capfd
):
    directory = saved(model_type, tmp_path)
    expected = damage(directory, model_type)
    message = _one_line(directory, capfd)
    for words in expected:
        assert words in message, message


#: ModernBERT's own config values transformers rejects with exceptions of its own
MODERNBERT_CONFIGS = [
    ({"layer_types": ["full_attention", "sliding", "full_attention"]}, ["layer_types ['sliding']"]),
    ({"layer_types": "full_attention"}, ["layer_types 'full_attention'"]),
    ({"local_attention": "128"}, ["local_attention '128'", "positive even integer"]),
    ({"local_attention": 127.5}, ["local_attention 127.5"]),
    ({"local_attention": 7}, ["local_attention 7"]),
    ({"local_attention": True}, ["local_attention True"]),
    ({"local_attention": None}, ["local_attention None"]),
    ({"layer_types": ["full_attention"]}, ["not a valid ModernBertConfig", "layer_types"]),
    ({"hidden_activation": "relu"}, ["hidden_activation 'relu'"]),
    # heads narrower than hidden / heads: ours would build 8-wide heads from 4-wide weights
    ({"head_dim": 4}, ["head_dim 4", "only hidden_size / num_attention_heads = 8"]),
]


@pytest.mark.parametrize(
    "changes, expected", MODERNBERT_CONFIGS, ids=[str(c) for c, _ in MODERNBERT_CONFIGS]
)
def test_a_modernbert_config_transformers_rejects_is_one_line(changes, expected, tmp_path, capfd):
    directory = saved("modernbert", tmp_path)
    _write_config(directory, _config(directory) | changes)
    message = _one_line(directory, capfd)
    for words in expected:
        assert words in message, message


@pytest.mark.parametrize("kind", ["relative_key", "relative_key_query"])
@pytest.mark.parametrize("model_type", ["bert", "roformer", "deberta-v2"])
def test_a_relative_position_embedding_type_is_refused_naming_it(model_type, kind, tmp_path, capfd):
    """BERT's ``position_embedding_type``: transformers 4.x (the floor is 4.48) computes
    ``relative_key`` with distance embeddings import never read, and 5.x ignores the key,
    so such a checkpoint imported as an absolute-position BERT without a word."""
    directory = saved(model_type, tmp_path)
    _write_config(directory, _config(directory) | {"position_embedding_type": kind})
    message = _one_line(directory, capfd)
    assert f"position_embedding_type={kind!r}" in message, message
    _write_config(directory, _config(directory) | {"position_embedding_type": "absolute"})
    import_hf(directory)  # BERT's own default, written by its older configs: accepted


@pytest.mark.parametrize("model_type", MODEL_TYPES)
@pytest.mark.parametrize("narrow", [torch.float16, torch.bfloat16])
def test_weights_of_two_dtypes_import_at_the_wider_one_with_every_value_kept(
    model_type, narrow, tmp_path
):
    """Word embeddings stored narrower than the rest: the model is float32, the embeddings
    hold exactly the stored values and the other weights theirs (before, the model took
    the embeddings' dtype and rounded every other weight to it: logits 1e-3 off). The
    oracle is transformers' own model with its embeddings rounded the same way."""
    hf = hf_model(model_type)
    hf.save_pretrained(tmp_path / "hf")
    state = _state(tmp_path / "hf")
    name = next(n for n in state if "word_embeddings" in n or "tok_embeddings" in n)
    state[name] = state[name].to(narrow)
    _write_state(tmp_path / "hf", state)
    model = import_hf(tmp_path / "hf")
    assert {param.dtype for param in model.parameters()} == {torch.float32}
    assert torch.equal(model.encoder.word_embeddings.weight, state[name].float())
    with torch.no_grad():
        words = hf.get_input_embeddings().weight
        words.copy_(words.to(narrow).float())
    ids, mask = _batch()
    with torch.no_grad():
        ours, theirs = model(ids, mask), hf(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    torch.testing.assert_close(ours[real], theirs[real], atol=1e-5, rtol=0)


def test_a_sharded_directory_imports_and_a_missing_shard_is_one_line(tmp_path, capfd):
    hf = hf_model("bert")
    hf.save_pretrained(tmp_path / "hf", max_shard_size="20KB")
    shards = sorted((tmp_path / "hf").glob("model-*.safetensors"))
    assert len(shards) > 1 and (tmp_path / "hf" / "model.safetensors.index.json").is_file()
    ids, mask = _batch()
    with torch.no_grad():
        ours = import_hf(tmp_path / "hf")(ids, mask)
        theirs = hf(input_ids=ids, attention_mask=mask).logits
    torch.testing.assert_close(ours[mask.bool()], theirs[mask.bool()], atol=1e-5, rtol=0)
    shards[-1].unlink()
    assert shards[-1].name in _one_line(tmp_path / "hf", capfd)


def test_an_instance_is_held_to_its_config_as_a_directory_is():
    hf = hf_model("modernbert")
    hf.config.local_attention = 9  # transformers takes it; its window would be 8
    with pytest.raises(ConfigError, match="local_attention 9; valid: a positive even"):
        import_hf(hf)


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_an_instance_with_a_tensor_of_the_wrong_shape_is_refused(model_type):
    """An in-memory model goes through the same loader as a directory."""
    hf = hf_model(model_type)
    module = next(m for m in hf.modules() if isinstance(m, torch.nn.Linear))
    module.weight = torch.nn.Parameter(module.weight[:, :-1].clone())
    with pytest.raises(ConfigError, match="wrong shape") as info:
        import_hf(hf)
    assert "\n" not in str(info.value)


def _logits(model: Any, hf: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    ids, mask = _batch()
    with torch.no_grad():
        return model(ids, mask), hf(input_ids=ids, attention_mask=mask).logits, mask.bool()


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_a_pickled_state_dict_imports_as_the_safetensors_one(model_type, tmp_path):
    directory = saved(model_type, tmp_path)
    state = _state(directory)
    (directory / "model.safetensors").unlink()
    torch.save(state, directory / "pytorch_model.bin")
    ours, theirs, real = _logits(import_hf(directory), hf_model(model_type))
    torch.testing.assert_close(ours[real], theirs[real], atol=1e-5, rtol=0)


def test_what_transformers_never_reads_is_not_unexpected(tmp_path):
    """A BERT pre-training directory (pooler, next-sentence head) and an old file with the
    ``position_ids`` buffer import with the logits transformers' own MLM gives them."""
    config = transformers.BertConfig(**COMMON, **HF_CONFIGS["bert"])
    torch.manual_seed(2)
    transformers.BertForPreTraining(config).save_pretrained(tmp_path / "pretraining")
    state = _state(tmp_path / "pretraining")
    assert any(name.startswith("bert.pooler.") for name in state)
    assert any(name.startswith("cls.seq_relationship.") for name in state)
    state["bert.embeddings.position_ids"] = torch.arange(COMMON["max_position_embeddings"])[None]
    _write_state(tmp_path / "pretraining", state)
    verbosity = transformers.utils.logging.get_verbosity()
    transformers.utils.logging.set_verbosity_error()  # its report of the unused heads
    try:
        hf = transformers.BertForMaskedLM.from_pretrained(tmp_path / "pretraining").eval()
    finally:
        transformers.utils.logging.set_verbosity(verbosity)
    ours, theirs, real = _logits(import_hf(tmp_path / "pretraining"), hf)
    torch.testing.assert_close(ours[real], theirs[real], atol=1e-5, rtol=0)


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_a_parameter_no_link_reads_is_refused_not_dropped(model_type, tmp_path, monkeypatch, capfd):
    """What a newer transformers adds to a model (a parameter our mapping has no link for)
    is in its files and in the model it builds, so no name check sees it, and import
    dropped its value: a model that computes something else, without a word. Here the
    class transformers builds gains such a parameter; import names it."""
    model_class = getattr(transformers, ARCHITECTURES[model_type].model_class)
    original = model_class.__init__

    def with_a_new_parameter(self, config, *args, **kwargs):
        original(self, config, *args, **kwargs)
        self.register_parameter("new_scale", torch.nn.Parameter(torch.full((3,), 2.0)))

    monkeypatch.setattr(model_class, "__init__", with_a_new_parameter)
    directory = saved(model_type, tmp_path)
    capfd.readouterr()
    with pytest.raises(ConfigError) as refused:
        import_hf(directory)
    line = str(refused.value)
    assert "\n" not in line and "does not read: new_scale" in line, line
    assert capfd.readouterr() == ("", "")
