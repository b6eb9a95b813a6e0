"""Data pipeline: corpus reading, WordPiece tokenizer, block packing, BERT masking, DataModule.

Public names::

    from roformer_lit.data import CorpusDataModule, ProbeDataModule  # the LightningDataModules
    from roformer_lit.data import PretrainDataModule                   # their base
    from roformer_lit.data import data_module      # the module a (flat or class_path) section builds
    from roformer_lit.data import read_documents, load_default_corpus
    from roformer_lit.data import load_or_train_tokenizer, load_tokenizer_file, SpecialTokens
    from roformer_lit.data import encode_stream, pack_blocks
    from roformer_lit.data import mask_tokens, sample_seed, MLMBlockDataset
    from roformer_lit.data import prepare_corpus, TokenStream, TokenBlocks   # prepared shards
    from roformer_lit.data import FileSource, HFSource, expand_paths         # sources
"""

from roformer_lit.data.corpus import (
    BundledSource,
    load_default_corpus,
    read_documents,
    split_train_val,
)
from roformer_lit.data.corpus_module import CorpusDataModule
from roformer_lit.data.datamodule import PretrainDataModule
from roformer_lit.data.dataset import EpochSampler, MLMBlockDataset
from roformer_lit.data.hf_source import HFSource
from roformer_lit.data.masking import mask_tokens, sample_seed
from roformer_lit.data.modules import data_module
from roformer_lit.data.packing import encode_stream, pack_blocks
from roformer_lit.data.prepare import PreparedCorpus, prepare_corpus
from roformer_lit.data.probe_module import ProbeDataModule
from roformer_lit.data.shards import TokenBlocks, TokenStream
from roformer_lit.data.sources import FileSource, expand_paths, iter_documents
from roformer_lit.data.tokenizer import (
    SPECIAL_TOKENS,
    SpecialTokens,
    load_or_train_tokenizer,
    load_tokenizer_file,
    train_tokenizer,
)

__all__ = [
    "BundledSource",
    "FileSource",
    "HFSource",
    "PreparedCorpus",
    "TokenBlocks",
    "TokenStream",
    "expand_paths",
    "iter_documents",
    "prepare_corpus",
    "EpochSampler",
    "MLMBlockDataset",
    "CorpusDataModule",
    "PretrainDataModule",
    "ProbeDataModule",
    "data_module",
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
