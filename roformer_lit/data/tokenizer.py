"""WordPiece tokenizer: trained once on the training text and cached on disk, or loaded from a file.

The cache key is a SHA-256 over the corpus content, the requested vocab size and the
tokenizer settings, so a different corpus, vocab size or setting trains a new tokenizer.
Cache directory: the ``cache_dir`` argument, else ``$ROFORMER_LIT_CACHE/tokenizers``,
else ``~/.cache/roformer_lit/tokenizers``. Files are written atomically.

HF ``tokenizers`` WordPiece training is not deterministic across processes (hash-map
iteration order breaks merge ties differently; huggingface/tokenizers#1794), so two
machines with empty caches can train slightly different vocabularies. For the bundled
corpus at default settings (``vocab_size=8192``, ``val_fraction=0.05``) a pre-trained
tokenizer ships in ``corpus/`` (looked up by cache file name), which makes the default
configuration reproducible everywhere. For other corpora, pass the cached file
(``CorpusDataModule.tokenizer_path``) as ``tokenizer_file`` to pin the vocabulary.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from roformer_lit.errors import ConfigError

#: Special tokens, in id order: ``[PAD]`` is 0 for a trained tokenizer.
SPECIAL_TOKENS: tuple[str, ...] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
#: Tokens a loaded tokenizer.json must define.
REQUIRED_TOKENS: tuple[str, ...] = ("[PAD]", "[SEP]", "[MASK]")
#: Everything that changes the trained tokenizer besides corpus and vocab size.
TOKENIZER_SETTINGS: dict[str, object] = {
    "format": 1,
    "model": "wordpiece",
    "normalizer": "bert(lowercase=True, clean_text=True, chinese_chars=True, strip_accents=None)",
    "pre_tokenizer": "bert",
    "special_tokens": list(SPECIAL_TOKENS),
    "min_frequency": 2,
    "continuing_subword_prefix": "##",
    "limit_alphabet": 1000,
}
ENV_CACHE = "ROFORMER_LIT_CACHE"
#: The longest word the WordPiece model encodes (``models.WordPiece``'s
#: ``max_input_chars_per_word``, default 100): a longer one is ``[UNK]`` whole.
MAX_WORD_CHARS = 100
#: A run of characters without whitespace (as the BERT normalizer and pre-tokenizer read
#: it: ``\x1c``-``\x1f`` are control characters there, removed, not spaces) long enough to
#: hold a word of more than :data:`MAX_WORD_CHARS` characters.
_LONG_RUN = re.compile(rf"(?:[^\s]|[\x1c-\x1f]){{{MAX_WORD_CHARS + 1},}}")
#: ASCII punctuation, each character a word of its own to the BERT pre-tokenizer.
_ASCII_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
#: The most characters normalized at once when looking for long words (normalizing keeps
#: about 50 bytes a character of alignments).
_NORMALIZED_SLICE = 10_000


@dataclass(frozen=True)
class SpecialTokens:
    """Ids of the special tokens of a tokenizer (``None`` when absent)."""

    pad: int
    sep: int
    mask: int
    cls: int | None
    unk: int | None

    @property
    def all_ids(self) -> tuple[int, ...]:
        """Every special id present (never masked or used as a random replacement)."""
        return tuple(
            i for i in (self.pad, self.unk, self.cls, self.sep, self.mask) if i is not None
        )

    @classmethod
    def from_tokenizer(cls, tokenizer: Tokenizer, source: str = "tokenizer") -> SpecialTokens:
        """Look the special tokens up; raise ConfigError if a required one is missing."""
        ids = {t: tokenizer.token_to_id(t) for t in SPECIAL_TOKENS}
        missing = [t for t in REQUIRED_TOKENS if ids[t] is None]
        if missing:
            raise ConfigError(
                f"{source} lacks required special token(s) {', '.join(missing)} "
                f"(needs {', '.join(REQUIRED_TOKENS)})"
            )
        return cls(
            pad=ids["[PAD]"],
            sep=ids["[SEP]"],
            mask=ids["[MASK]"],
            cls=ids["[CLS]"],
            unk=ids["[UNK]"],
        )


def default_cache_dir() -> Path:
    """``$ROFORMER_LIT_CACHE/tokenizers`` if set, else ``~/.cache/roformer_lit/tokenizers``."""
    env = os.environ.get(ENV_CACHE)
    base = Path(env).expanduser() if env else Path.home() / ".cache" / "roformer_lit"
    return base / "tokenizers"


def cache_key(documents: Iterable[str], vocab_size: int) -> str:
    """Hex SHA-256 of (settings, vocab size, every document)."""
    h = hashlib.sha256()
    h.update(json.dumps({"vocab_size": vocab_size, **TOKENIZER_SETTINGS}, sort_keys=True).encode())
    for doc in documents:
        h.update(doc.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def cache_file_name(documents: Iterable[str], vocab_size: int) -> str:
    """File name of the cached tokenizer for (documents, vocab_size, settings)."""
    return f"wordpiece-v{vocab_size}-{cache_key(documents, vocab_size)[:20]}.json"


def _encodable_words(
    document: str, normalizer: normalizers.Normalizer, pre_tokenizer: pre_tokenizers.PreTokenizer
) -> str:
    """``document`` without its words of more than :data:`MAX_WORD_CHARS` characters.

    The model encodes such a word as one ``[UNK]``, so its merges would be vocabulary no
    encoding uses, and the trainer's merges cost time quadratic in a word's length (a
    100,000-character word without spaces or punctuation took 11 s, a 9 MB one hours).
    Only a run without whitespace longer than the limit is looked at: cut at its ASCII
    punctuation, each piece normalized and pre-tokenized as the tokenizer does (a piece of
    more than :data:`_NORMALIZED_SLICE` characters, a word far past the limit, in slices of
    that size), its words kept when short enough. A document without such a run is
    passed as it is.
    """
    if _LONG_RUN.search(document) is None:
        return document

    def short_words(run: re.Match[str]) -> str:
        kept: list[str] = []
        for piece in _ASCII_PUNCTUATION.split(run.group()):
            if len(piece) <= MAX_WORD_CHARS:  # normalizing never lengthens a word
                kept.append(piece)
                continue
            for start in range(0, len(piece), _NORMALIZED_SLICE):
                text = normalizer.normalize_str(piece[start : start + _NORMALIZED_SLICE])
                words = pre_tokenizer.pre_tokenize_str(text)
                kept.extend(word for word, _ in words if len(word) <= MAX_WORD_CHARS)
        return " ".join(word for word in kept if word)

    return _LONG_RUN.sub(short_words, document)


def train_tokenizer(documents: Sequence[str], vocab_size: int) -> Tokenizer:
    """Train a BERT-style lowercase WordPiece tokenizer on ``documents`` (their words of
    more than :data:`MAX_WORD_CHARS` characters, which it encodes as ``[UNK]``, left out)."""
    tok = Tokenizer(
        models.WordPiece(
            unk_token="[UNK]",
            continuing_subword_prefix="##",
            max_input_chars_per_word=MAX_WORD_CHARS,
        )
    )
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        min_frequency=int(TOKENIZER_SETTINGS["min_frequency"]),  # type: ignore[call-overload]
        special_tokens=list(SPECIAL_TOKENS),
        limit_alphabet=int(TOKENIZER_SETTINGS["limit_alphabet"]),  # type: ignore[call-overload]
        continuing_subword_prefix="##",
        show_progress=False,
    )
    # Objects of their own: the tokenizer's are locked while it trains on this generator.
    normalizer = normalizers.BertNormalizer(lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    words = (_encodable_words(doc, normalizer, pre_tokenizer) for doc in documents)
    tok.train_from_iterator(words, trainer=trainer, length=len(documents))
    return tok


def _atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a cache should be readable like any file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_or_train_tokenizer(
    documents: Sequence[str], vocab_size: int, cache_dir: str | Path | None = None
) -> tuple[Tokenizer, Path]:
    """Return the cached tokenizer for (documents, vocab_size, settings), training it if needed.

    A cached file that does not load is trained again and replaced; a cache entry that is
    not a file (a directory, a dangling link) is one ConfigError line naming it, to delete,
    before anything is trained.

    Returns:
        (tokenizer, path of its cached ``tokenizer.json``).
    """
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    name = cache_file_name(documents, vocab_size)
    path = root / name
    if os.path.lexists(path) and not path.is_file():
        what = "a dangling link" if path.is_symlink() and not path.exists() else "not a file"
        raise ConfigError(
            f"tokenizer cache entry {path} is damaged ({what}); delete it and run again"
        )
    if path.is_file():
        try:
            return Tokenizer.from_file(str(path)), path
        except Exception:  # corrupt cache entry: retrain and overwrite
            pass
    bundled = resources.files("roformer_lit.data") / "corpus" / f"{name}.xz"
    if bundled.is_file():  # pre-trained for the bundled corpus at default settings
        text = lzma.decompress(bundled.read_bytes()).decode("utf-8")
        tok = Tokenizer.from_str(text)
    else:
        tok = train_tokenizer(documents, vocab_size)
        text = tok.to_str()
    try:
        _atomic_write_text(path, text)
    except OSError as e:
        raise ConfigError(f"cannot write tokenizer cache {path}: {e.strerror or e}") from None
    return tok, path


def training_sample(
    documents: Iterable[str], sample_chars: int, val_fraction: float | None = None
) -> list[str]:
    """The documents a tokenizer is trained on: the first ones, up to ``sample_chars`` of text.

    With ``val_fraction`` the last ``val_fraction`` of the same documents is validation
    (:func:`~roformer_lit.data.corpus.validation_count`): the sample stops before them, so
    when the corpus is larger than the sample the rest of it is counted (streamed, not kept).
    A corpus smaller than the sample is used whole, as it always was (the bundled corpus's
    shipped tokenizer is found by the hash of exactly its training documents).
    """
    from roformer_lit.data.corpus import validation_count

    sample: list[str] = []
    size = 0
    remaining = iter(documents)
    exhausted = True
    for doc in remaining:
        sample.append(doc)
        size += len(doc)
        if size >= sample_chars:
            exhausted = False
            break
    if val_fraction is None:
        return sample
    total = len(sample) if exhausted else len(sample) + sum(1 for _ in remaining)
    return sample[: total - validation_count(total, val_fraction)]


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_tokenizer_file(path: str | Path) -> Tokenizer:
    """Load a ``tokenizer.json`` (HF tokenizers format); it must define [PAD], [SEP], [MASK].

    Padding and truncation settings of the file are switched off (blocks are packed here).
    """
    p = Path(path).expanduser()
    if not p.is_file():
        what = "is not a regular file" if os.path.lexists(p) else "not found"
        raise ConfigError(f"tokenizer file {what}: {p}")
    try:
        tok = Tokenizer.from_file(str(p))
    except Exception as e:
        msg = " ".join(str(e).split())
        raise ConfigError(f"cannot load tokenizer file {p}: {msg}") from None
    SpecialTokens.from_tokenizer(tok, source=f"tokenizer file {p}")
    tok.no_padding()
    tok.no_truncation()
    return tok
