"""``export_hf``: write a ``MaskedLM`` as a Hugging Face ``*ForMaskedLM`` directory.

The directory loads with ``AutoModelForMaskedLM.from_pretrained`` and gives the same logits
in eval mode; with the model's tokenizer (required unless ``require_tokenizer=False``) it
also loads with ``AutoTokenizer`` and ``pipeline("fill-mask", model=dir)``. Validation
happens before anything touches the disk, and the files are written to a fresh sibling
directory that is then renamed into place, so an existing non-empty directory is never
written into (not even by a concurrent writer) and a failed export leaves nothing behind.
Before the rename, the written files are loaded back with ``transformers`` and their
logits compared with the model's (:mod:`roformer_lit.interop.verify`): an export that
would not give the model's predictions is refused and removed.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from roformer_lit.errors import ConfigError
from roformer_lit.interop._hf import quiet_transformers, require_transformers
from roformer_lit.interop.config_keys import check_every_field_exports, hf_config_kwargs
from roformer_lit.interop.mapping import HFArchitecture, architecture_for
from roformer_lit.interop.spelling import SPELLING_KEY, spelling
from roformer_lit.interop.tokenizer import as_tokenizer, check_vocabulary, hf_tokenizer_files
from roformer_lit.interop.verify import check_written
from roformer_lit.interop.versions import FLOOR_KEY, check_floor

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from roformer_lit.module import MaskedLM


def _check_exportable(model: MaskedLM) -> HFArchitecture:
    """``model``'s architecture (:func:`~roformer_lit.interop.mapping.architecture_for`),
    or a ConfigError for what HF cannot compute: a field no HF setting holds, a kernel
    other than softmax, then what the architecture refuses (``check_export``)."""
    config = model.config
    arch = architecture_for(config.position, config.pre_norm)
    check_every_field_exports(config, arch)
    kernels = sorted({layer.spec.attention for layer in config.layers} - {"softmax"})
    if kernels:  # every layer's kernel, a plan's included
        raise ConfigError(
            f"cannot export attention={kernels[0]!r}: Hugging Face {arch.model_class} "
            "computes softmax attention only; export needs attention='softmax' in every layer"
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


def to_hf_model(model: MaskedLM, dtype: torch.dtype = torch.float32) -> Any:
    """An in-memory HF ``*ForMaskedLM`` (``dtype``, CPU, eval mode) equal to ``model``, of
    the architecture of its scheme and block layout (:mod:`roformer_lit.interop`); its
    config records the architecture's ``transformers`` floor (:data:`.versions.FLOOR_KEY`)."""
    transformers = require_transformers()
    arch = _check_exportable(model)
    check_floor(arch.transformers_floor, transformers, f"exporting {arch.model_class}")
    config = getattr(transformers, arch.config_class)(**hf_config_kwargs(model, arch))
    setattr(config, FLOOR_KEY, arch.transformers_floor)
    setattr(config, SPELLING_KEY, spelling(model.config))  # how its settings were written
    hf = getattr(transformers, arch.model_class)(config).to(dtype)
    ours = dict(model.named_parameters())
    table = arch.links(config)
    unmapped = sorted(set(ours) - {link.ours for link in table})
    if unmapped:
        raise ConfigError(
            f"cannot export: parameters with no {arch.model_class} counterpart: "
            f"{', '.join(unmapped)}"
        )
    state = hf.state_dict()
    width, heads = model.config.hidden_size, model.config.num_heads
    for link in table:
        tensor = ours[link.ours].detach().to(device="cpu", dtype=dtype)
        if link.slot is not None:
            tensor = tensor[link.slot * width : (link.slot + 1) * width]
        tensor = arch.to_hf(link, tensor, heads)
        if link.theirs not in state or state[link.theirs].shape != tensor.shape:
            raise RuntimeError(f"interop mapping error: {link.ours} -> {link.theirs}")
        state[link.theirs] = tensor.clone()
    arch.derive_export_weights(state)
    for name, twin in arch.tied(config).items():
        if name in state:
            state[name] = state[twin]
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
    load it with only ``transformers`` installed. The HF class is the architecture of the
    model's scheme and block layout (:mod:`roformer_lit.interop`; a pre-norm RoPE model,
    ``configs/recipes/modernbert.yaml``, is ``ModernBertForMaskedLM``). ``config.json``
    records the oldest ``transformers`` that reads it (``min_transformers_version``), and
    the written directory is loaded back and checked to give the model's logits.

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
            non-empty directory, or that cannot be written; written files whose logits
            differ from the model's. Nothing is left behind on error.
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
    # a link to an empty directory: the export takes that directory's place (renaming onto
    # the link itself fails, and was refused as "no longer a new or empty directory")
    target = out.resolve() if out.is_symlink() else out
    _write_atomically(target, hf, files, lambda staging: check_written(model, staging, out))
    return str(out)


def _write_atomically(
    out: Path, hf: Any, files: dict[str, str], check: Callable[[Path], None]
) -> None:
    """Write ``hf`` and ``files`` into a fresh hidden sibling of ``out``, ``check`` it, then
    rename it onto ``out`` (missing or empty). On any failure the sibling and every parent directory this
    call created are removed, so no partial export is ever visible at ``out``."""
    created = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
    staging = out.parent / f".{out.name}.export-{uuid.uuid4().hex[:12]}"
    try:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            staging.mkdir()
            with quiet_transformers(require_transformers()):
                hf.save_pretrained(staging)
            for name, text in files.items():
                (staging / name).write_text(text, encoding="utf-8")
            for path in staging.iterdir():  # some writers create 0600 files
                path.chmod(0o644)
        except OSError as err:
            raise ConfigError(
                f"cannot write the export to {str(out)!r}: {err.strerror or err}"
            ) from err
        check(staging)
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
