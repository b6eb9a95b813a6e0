"""``export_hf``: write a ``MaskedLM`` as a Hugging Face ``*ForMaskedLM`` directory.

The directory loads with ``AutoModelForMaskedLM.from_pretrained`` and gives the same logits
in eval mode; with the model's tokenizer (required unless ``require_tokenizer=False``) it
also loads with ``AutoTokenizer`` and ``pipeline("fill-mask", model=dir)``. Validation
happens before anything touches the disk, and the files are written to a fresh sibling
directory that is then renamed into place, so an existing non-empty directory is never
written into (not even by a concurrent writer) and a failed export leaves nothing behind.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from roformer_lit.encoder_config import EncoderConfig, encoder_defaults
from roformer_lit.errors import ConfigError
from roformer_lit.interop._hf import require_transformers
from roformer_lit.interop.architectures.base import TOKEN_TYPES
from roformer_lit.interop.mapping import HFArchitecture, architecture_for, links
from roformer_lit.interop.modernbert import to_modernbert
from roformer_lit.interop.tokenizer import as_tokenizer, check_vocabulary, hf_tokenizer_files

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from roformer_lit.module import MaskedLM


#: The fields of :class:`~roformer_lit.encoder_config.EncoderConfig` a BERT-layout HF config
#: holds as they are, and its key for each (``import_hf`` reads them back through it).
HF_CONFIG_KEYS: dict[str, str] = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "intermediate_size": "intermediate_size",
    "dropout": "hidden_dropout_prob",
    "max_positions": "max_position_embeddings",
    "layer_norm_eps": "layer_norm_eps",
}
#: The other fields, each handled by name: the scheme picks the architecture and gives
#: its HF options; softmax attention, one global scheme in every layer (``layer_plan``)
#: and BERT's block are required; a pre-norm model goes to ModernBERT; the attention
#: dropout is ``attention_probs_dropout_prob``; the kernel's options choose how softmax
#: attention is computed, not what it computes.
HANDLED_FIELDS = (
    "position",
    "position_kwargs",
    "attention",
    "attention_kwargs",
    "attention_dropout",
    "layer_plan",
    "block",
    "pre_norm",
)


def _check_every_field_exports(config: EncoderConfig, model_class: str) -> None:
    """A field export neither maps nor handles (one added after this) is refused unless it
    has its default: no HF setting would carry it."""
    defaults = encoder_defaults(type(config))
    for name, value in config.as_dict().items():
        if name in HF_CONFIG_KEYS or name in HANDLED_FIELDS or value == defaults[name]:
            continue
        raise ConfigError(
            f"cannot export model.{name}={value!r}: no Hugging Face {model_class} setting "
            f"holds it; export needs model.{name}={defaults[name]!r}"
        )


def _check_exportable(model: MaskedLM) -> HFArchitecture:
    """``model``'s architecture, or a ConfigError for what HF cannot compute: a kernel or
    block layout no architecture has, then the scheme's own options (``check_export``)."""
    config = model.config
    arch = architecture_for(config.position)
    _check_every_field_exports(config, arch.model_class)
    if config.attention != "softmax":
        raise ConfigError(
            f"cannot export attention={config.attention!r}: Hugging Face {arch.model_class} "
            "computes softmax attention only; export needs attention='softmax'"
        )
    plain = config.model_layer
    if any(
        spec.window is not None or spec.scheme_key != plain.scheme_key
        for spec in config.layer_specs
    ):
        raise ConfigError(
            f"cannot export model.layer_plan: Hugging Face {arch.model_class} has one position "
            "scheme and global attention in every layer; export needs a plan without windows "
            "or per-layer position settings (or layer_plan null)"
        )
    changed = config.block_options.changed()
    if changed:
        listed = ", ".join(f"{key}={value}" for key, value in changed.items())
        raise ConfigError(
            f"cannot export model.block {listed}: Hugging Face {arch.model_class} has BERT's "
            "block only (gelu MLP, LayerNorm with bias, linear biases); export needs block null"
        )
    arch.check_export(model)
    return arch


def check_out_dir(out_dir: str | os.PathLike[str]) -> None:
    """Refuse (ConfigError) an export target that is a file or a non-empty directory."""
    out = Path(out_dir)
    try:
        what = None
        if out.is_dir():
            what = "a non-empty directory" if any(out.iterdir()) else None
        elif out.exists() or out.is_symlink():
            what = "an existing file"
    except OSError as err:
        raise ConfigError(f"cannot export into {str(out)!r}: {err.strerror or err}") from err
    if what is not None:
        raise ConfigError(
            f"refusing to export into {str(out)!r}: it is {what}; pick a new or empty "
            "directory (existing files are never overwritten)"
        )


def hf_config_kwargs(model: MaskedLM, arch: HFArchitecture) -> dict[str, Any]:
    """The HF config of ``model``: the fields of :data:`HF_CONFIG_KEYS`, the attention
    dropout, then the scheme options of ``arch.config_kwargs``."""
    config = model.config
    kwargs: dict[str, Any] = {key: getattr(config, name) for name, key in HF_CONFIG_KEYS.items()}
    kwargs.update(
        {
            "hidden_act": "gelu",  # exact (erf) GELU, as torch.nn.functional.gelu
            "attention_probs_dropout_prob": config.attention_dropout_value,
            "initializer_range": model.hparams.init_std,
            "pad_token_id": None,  # the model does not know it; export_hf sets the tokenizer's
            "tie_word_embeddings": True,
        }
    )
    kwargs.update(arch.config_kwargs(model))
    return kwargs


def to_hf_model(model: MaskedLM) -> Any:
    """An in-memory HF ``*ForMaskedLM`` (float32, CPU, eval mode) equal to ``model``: a
    pre-norm model as ``ModernBertForMaskedLM`` (:mod:`roformer_lit.interop.modernbert`),
    a post-norm one as its scheme's architecture."""
    if model.config.pre_norm:  # every architecture of ARCHITECTURES is post-LN (BERT)
        return to_modernbert(model)
    transformers = require_transformers()
    arch = _check_exportable(model)
    config = getattr(transformers, arch.config_class)(**hf_config_kwargs(model, arch))
    hf = getattr(transformers, arch.model_class)(config)
    ours = dict(model.named_parameters())
    table = links(arch, model.config.num_layers)
    unmapped = sorted(set(ours) - {link.ours for link in table})
    if unmapped:
        raise ConfigError(
            f"cannot export: parameters with no {arch.model_class} counterpart: "
            f"{', '.join(unmapped)}"
        )
    state = hf.state_dict()
    width = model.config.hidden_size
    for link in table:
        tensor = ours[link.ours].detach()
        if link.slot is not None:
            tensor = tensor[link.slot * width : (link.slot + 1) * width]
        if link.theirs not in state or state[link.theirs].shape != tensor.shape:
            raise RuntimeError(f"interop mapping error: {link.ours} -> {link.theirs}")
        state[link.theirs] = tensor.to(device="cpu", dtype=torch.float32).clone()
    for name in arch.derived:
        if name == TOKEN_TYPES:
            # HF always adds token-type row 0; our model has no token types
            state[f"{arch.prefix}.{name}"] = torch.zeros_like(state[f"{arch.prefix}.{name}"])
    hf.load_state_dict(state)
    return hf.eval()


def export_hf(
    model: MaskedLM,
    out_dir: str | os.PathLike[str],
    tokenizer: Tokenizer | str | os.PathLike[str] | None = None,
    *,
    require_tokenizer: bool = True,
) -> str:
    """Write ``model`` and its tokenizer as an HF MLM directory; returns its path.

    The directory holds ``config.json``, the weights, ``tokenizer.json`` and
    ``tokenizer_config.json`` (see :mod:`roformer_lit.interop.tokenizer`), so
    ``AutoTokenizer``, ``AutoModelForMaskedLM`` and ``pipeline("fill-mask", model=dir)``
    load it with only ``transformers`` installed. The HF class is
    ``ARCHITECTURES[model.config.position].model_class`` (:mod:`roformer_lit.interop`), or
    ``ModernBertForMaskedLM`` for a pre-norm model (``configs/recipes/modernbert.yaml``).

    Args:
        model: the model to export.
        out_dir: a new or empty directory.
        tokenizer: the tokenizer the model was trained with: a ``tokenizers.Tokenizer`` or
            a ``tokenizer.json`` path (a checkpoint's: :func:`roformer_lit.checkpoint_tokenizer`).
        require_tokenizer: with ``False`` and no tokenizer, write the model alone (the
            directory then loads with ``AutoModelForMaskedLM`` but not with ``AutoTokenizer``
            or a pipeline).

    Raises:
        ConfigError: no tokenizer (unless ``require_tokenizer=False``); a tokenizer without
            ``[PAD]``/``[SEP]``/``[MASK]`` or of another vocabulary size; a scheme, kernel
            or option HF cannot represent; an ``out_dir`` that is an existing file or
            non-empty directory, or that cannot be written. Nothing is left behind on error.
    """
    out = Path(out_dir)
    check_out_dir(out)
    hf = to_hf_model(model)
    if tokenizer is None and require_tokenizer:
        raise ConfigError(
            f"export to {str(out)!r} needs the model's tokenizer (a tokenizers.Tokenizer or a "
            "tokenizer.json path), or require_tokenizer=False to write the model without one"
        )
    files: dict[str, str] = {}
    if tokenizer is not None:
        tok = as_tokenizer(tokenizer)
        check_vocabulary(tok, model.config.vocab_size)
        files = hf_tokenizer_files(tok, model.config.max_positions)
        hf.config.pad_token_id = tok.token_to_id("[PAD]")
    _write_atomically(out, hf, files)
    return str(out)


def _write_atomically(out: Path, hf: Any, files: dict[str, str]) -> None:
    """Write ``hf`` and ``files`` into a fresh hidden sibling of ``out``, then rename it onto
    ``out`` (missing or empty). On any failure the sibling and every parent directory this
    call created are removed, so no partial export is ever visible at ``out``."""
    created = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
    staging = out.parent / f".{out.name}.export-{uuid.uuid4().hex[:12]}"
    try:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            staging.mkdir()
            hf.save_pretrained(staging)
            for name, text in files.items():
                (staging / name).write_text(text, encoding="utf-8")
            for path in staging.iterdir():  # some writers create 0600 files
                path.chmod(0o644)
        except OSError as err:
            raise ConfigError(
                f"cannot write the export to {str(out)!r}: {err.strerror or err}"
            ) from err
        try:
            # rename onto a missing or empty directory; fails if out_dir has files by now
            os.rename(staging, out)
        except OSError as err:
            raise ConfigError(
                f"refusing to export into {str(out)!r}: it is no longer a new or empty "
                f"directory ({err.strerror})"
            ) from err
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for parent in created:  # innermost first; only directories this call made
            try:
                parent.rmdir()
            except OSError:
                break
        raise
