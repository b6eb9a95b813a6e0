"""roformer-lit: encoder MLM pretraining with swappable position schemes and attention kernels."""

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.errors import ConfigError
from roformer_lit.module import MaskedLM
from roformer_lit.positions import POSITION_SCHEMES

__all__ = [
    "ATTENTION_KERNELS",
    "POSITION_SCHEMES",
    "ConfigError",
    "MaskedLM",
    "export_hf",
    "import_hf",
]


def export_hf(model: MaskedLM, out_dir: str) -> str:
    """Write ``model`` as a Hugging Face MLM directory (see ``roformer_lit.interop``)."""
    from roformer_lit.interop import export_hf as _export

    return _export(model, out_dir)


def import_hf(path_or_model: object) -> MaskedLM:
    """Build a ``MaskedLM`` from an HF MLM directory or model (see ``roformer_lit.interop``)."""
    from roformer_lit.interop import import_hf as _import

    return _import(path_or_model)
