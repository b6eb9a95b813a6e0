"""Data pipeline: corpus reading, WordPiece tokenizer, block packing, BERT masking, DataModule.

Public names::

    from roformer_lit.data import MLMDataModule            # the LightningDataModule
    from roformer_lit.data import read_documents, load_default_corpus
    from roformer_lit.data import load_or_train_tokenizer, load_tokenizer_file, SpecialTokens
    from roformer_lit.data import encode_stream, pack_blocks
    from roformer_lit.data import mask_tokens, sample_seed, MLMBlockDataset
"""

from roformer_lit.data.corpus import load_default_corpus, read_documents, split_train_val
from roformer_lit.data.datamodule import MLMDataModule
from roformer_lit.data.dataset import EpochSampler, MLMBlockDataset
from roformer_lit.data.masking import mask_tokens, sample_seed
from roformer_lit.data.packing import encode_stream, pack_blocks
from roformer_lit.data.tokenizer import (
    SPECIAL_TOKENS,
    SpecialTokens,
    load_or_train_tokenizer,
    load_tokenizer_file,
    train_tokenizer,
)

__all__ = [
    "EpochSampler",
    "MLMBlockDataset",
    "MLMDataModule",
    "SPECIAL_TOKENS",
    "SpecialTokens",
    "encode_stream",
    "load_default_corpus",
    "load_or_train_tokenizer",
    "load_tokenizer_file",
    "mask_tokens",
    "pack_blocks",
    "read_documents",
    "sample_seed",
    "split_train_val",
    "train_tokenizer",
]
