"""The new-user path: ``fit`` -> ``export`` -> ``pipeline("fill-mask", model=dir)``.

Every exportable scheme is trained for a few steps through the CLI; its checkpoint carries
the run's tokenizer, and the exported directory loads in ``transformers`` without
``rjieba``, without our tokenizer cache and without the run. Oracle for the predictions: our
own ``MaskedLM`` at the ``[MASK]`` position, on ids made the way training makes them
(``encode_stream``: tokens, then ``[SEP]``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import torch
from cli_helpers import fit_args, tokenizer_section

transformers = pytest.importorskip("transformers")

import roformer_lit  # noqa: E402
from roformer_lit.commands import main  # noqa: E402
from roformer_lit.data.corpus_module import CorpusDataModule  # noqa: E402
from roformer_lit.data.packing import encode_stream  # noqa: E402
from roformer_lit.data.stored_tokenizer import TOKENIZER_KEY  # noqa: E402
from roformer_lit.training.architecture_digest import DIGEST_KEY  # noqa: E402

SCHEMES = ("rope", "deberta", "learned")  # every scheme with an HF counterpart
TEXT = "The function returns a [MASK] of the values in the list."
TOP_K = 5


@pytest.fixture(autouse=True, scope="module")
def _quiet_transformers():
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    yield
    transformers.utils.logging.enable_progress_bar()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One tiny fit per exportable scheme; scheme -> run directory."""
    work = tmp_path_factory.mktemp("export_runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        for scheme in SCHEMES:
            assert main(fit_args(f"{scheme}.yaml", 4, "--model.learning_rate", "3e-3")) == 0
    return {s: work / "runs" / "mlm" / f"{s}-softmax-seed0" for s in SCHEMES}


def _export(*args: str) -> int:
    return main(["export", *map(str, args)])


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def _one_error_line(err: str, *needles: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


def _our_top_k(ckpt: Path, tokenizer) -> tuple[list[int], torch.Tensor, torch.Tensor]:
    """(ids as training makes them, top-k ids and probabilities of our model at [MASK])."""
    sep, mask = tokenizer.token_to_id("[SEP]"), tokenizer.token_to_id("[MASK]")
    ids = encode_stream(tokenizer, [TEXT], sep).long()
    position = int((ids == mask).nonzero())
    model = roformer_lit.MaskedLM.load_from_checkpoint(ckpt, map_location="cpu").eval()
    with torch.no_grad():
        logits = model(ids[None])[0, position]
    top = logits.softmax(-1).topk(TOP_K)
    return ids.tolist(), logits, top


@pytest.mark.parametrize("scheme", SCHEMES)
def test_fit_export_fill_mask_pipeline(scheme, runs, tmp_path, monkeypatch, capsys):
    ckpt = runs[scheme] / "checkpoints" / "last.ckpt"
    stored = roformer_lit.checkpoint_tokenizer(ckpt)
    assert stored is not None
    # the tokenizer the data module gives every run on the bundled corpus
    assert stored.to_str() == CorpusDataModule().tokenizer.to_str()
    # saved by the data module itself (its state_dict, under its class name), once
    checkpoint = torch.load(ckpt, map_location="cpu", weights_only=True)
    assert checkpoint["CorpusDataModule"][TOKENIZER_KEY] == stored.to_str()
    assert TOKENIZER_KEY not in checkpoint

    out = tmp_path / "exported" / f"hf-{scheme}"
    assert _export("--ckpt_path", ckpt, "--out", out) == 0
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1] == str(out)
    assert "note:" not in captured.err  # the checkpoint's own tokenizer, no fallback
    assert {"config.json", "tokenizer.json", "tokenizer_config.json"} <= set(os.listdir(out))
    assert not [p for p in os.listdir(out.parent) if p.startswith(".")]

    # another machine: only the directory, no tokenizer cache, no run, no rjieba
    moved = tmp_path / "elsewhere" / "model"
    shutil.copytree(out, moved)
    monkeypatch.setenv("ROFORMER_LIT_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setitem(sys.modules, "rjieba", None)  # `import rjieba` fails
    monkeypatch.chdir(tmp_path / "elsewhere")

    ids, logits, top = _our_top_k(ckpt, stored)
    hf_tok = transformers.AutoTokenizer.from_pretrained("model")
    encoded = hf_tok(TEXT, return_tensors="pt")
    assert encoded["input_ids"][0].tolist() == ids  # the training framing: tokens [SEP]
    hf = transformers.AutoModelForMaskedLM.from_pretrained("model").eval()
    with torch.no_grad():
        hf_logits = hf(**encoded).logits[0, ids.index(stored.token_to_id("[MASK]"))]
    torch.testing.assert_close(hf_logits, logits, atol=1e-4, rtol=0)

    fill = transformers.pipeline("fill-mask", model="model", top_k=TOP_K)
    got = fill(TEXT)
    assert [r["token"] for r in got] == top.indices.tolist()
    assert [r["token_str"] for r in got] == [stored.id_to_token(i) for i in top.indices.tolist()]
    torch.testing.assert_close(
        torch.tensor([r["score"] for r in got]), top.values, atol=1e-5, rtol=1e-4
    )


def _old_checkpoint(ckpt: Path, dest: Path) -> Path:
    """A copy of ``ckpt`` as written before checkpoints carried the tokenizer."""
    checkpoint = torch.load(ckpt, map_location="cpu", weights_only=True)
    del tokenizer_section(checkpoint)[TOKENIZER_KEY]
    torch.save(checkpoint, dest)
    return dest


@pytest.mark.parametrize("where", ["in-its-run", "outside-any-run"])
def test_a_checkpoint_without_a_tokenizer_is_refused_then_exported_as_told(
    where, runs, tmp_path, capsys
):
    """No fallback, not even inside a run whose config.yaml trained on the bundled corpus:
    one error line, nothing written, until ``--tokenizer`` or ``--no_tokenizer`` says how."""
    run = runs["learned"]
    ckpt = run / "checkpoints" / "last.ckpt"
    folder = run / "checkpoints" if where == "in-its-run" else tmp_path
    old = _old_checkpoint(ckpt, folder / "old.ckpt")
    try:
        assert roformer_lit.checkpoint_tokenizer(old) is None
        before, run_before = _snapshot(tmp_path), _snapshot(run)
        capsys.readouterr()
        assert _export("--ckpt_path", old, "--out", tmp_path / "hf") == 2
        _one_error_line(capsys.readouterr().err, "stores no tokenizer", str(old), "--tokenizer")
        assert _snapshot(tmp_path) == before and _snapshot(run) == run_before

        assert _export("--ckpt_path", old, "--out", tmp_path / "bare", "--no_tokenizer") == 0
        assert "without a tokenizer" in capsys.readouterr().err
        assert not (tmp_path / "bare" / "tokenizer.json").exists()
        assert (tmp_path / "bare" / "config.json").is_file()

        tokenizer_json = tmp_path / "tokenizer.json"
        roformer_lit.checkpoint_tokenizer(ckpt).save(str(tokenizer_json))
        out = tmp_path / "given"
        assert _export("--ckpt_path", old, "--out", out, "--tokenizer", tokenizer_json) == 0
        assert "note:" not in capsys.readouterr().err
        hf_tok = transformers.AutoTokenizer.from_pretrained(out)
        stored = roformer_lit.checkpoint_tokenizer(ckpt)
        assert hf_tok.get_vocab() == stored.get_vocab(with_added_tokens=True)
    finally:
        old.unlink()


def test_a_tokenizer_file_other_than_the_stored_one_is_refused(runs, tmp_path, capsys):
    """``--tokenizer`` beside a checkpoint that stores its tokenizer must be that tokenizer:
    one of the same size with two ids swapped was written beside the model without a word
    (every prediction of the exported pipeline then read through the wrong ids). The stored
    one saved to a file, or the ``tokenizer.json`` of an earlier export, is the same."""
    ckpt = runs["rope"] / "checkpoints" / "last.ckpt"
    stored = roformer_lit.checkpoint_tokenizer(ckpt)
    same = tmp_path / "same.json"
    stored.save(str(same))
    data = json.loads(stored.to_str())
    vocab = data["model"]["vocab"]
    first, second = sorted(vocab, key=vocab.get)[100:102]
    vocab[first], vocab[second] = vocab[second], vocab[first]
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps(data))
    before, run_before = _snapshot(tmp_path), _snapshot(runs["rope"])
    capsys.readouterr()
    assert _export("--ckpt_path", ckpt, "--out", tmp_path / "hf", "--tokenizer", swapped) == 2
    _one_error_line(
        capsys.readouterr().err, "not the tokenizer stored", str(swapped), repr(first), str(ckpt)
    )
    assert _snapshot(tmp_path) == before and _snapshot(runs["rope"]) == run_before
    assert _export("--ckpt_path", ckpt, "--out", tmp_path / "hf", "--tokenizer", same) == 0
    again = tmp_path / "hf" / "tokenizer.json"  # with the post-processor the export sets
    assert _export("--ckpt_path", ckpt, "--out", tmp_path / "hf2", "--tokenizer", again) == 0


def test_an_out_that_links_to_an_empty_directory_exports_into_it(runs, tmp_path, capsys):
    """``--out`` a link to an empty directory is an empty directory: the export takes the
    directory's place and the link reads it (a rename onto the link itself failed, refused
    after the whole export as "no longer a new or empty directory")."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty", target_is_directory=True)
    ckpt = runs["rope"] / "checkpoints" / "last.ckpt"
    assert _export("--ckpt_path", ckpt, "--out", tmp_path / "link") == 0, capsys.readouterr()
    assert (tmp_path / "link").is_symlink() and (tmp_path / "empty" / "config.json").is_file()
    assert transformers.AutoModelForMaskedLM.from_pretrained(tmp_path / "link") is not None


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--out", "{nonempty}"], ["non-empty directory", "nonempty"]),
        (["--out", "{a_file}"], ["existing file"]),
        (["--out", "{new}", "--tokenizer", "{small_tok}"], ["not the tokenizer stored", "100"]),
        (["--out", "{new}", "--tokenizer", "{missing}"], ["tokenizer file not found"]),
        (["--out", "{new}", "--tokenizer", "{small_tok}", "--no_tokenizer"], ["exclude each"]),
        (["--out", "{in_run}"], ["inside the run directory"]),
    ],
    ids=[
        "non-empty-out",
        "out-is-a-file",
        "wrong-vocab",
        "missing-tokenizer",
        "both-flags",
        "out-inside-the-run",
    ],
)
def test_export_refusals_change_nothing(args, needles, runs, tmp_path, capsys):
    from tokenizer_factory import tiny_tokenizer

    (tmp_path / "nonempty").mkdir()
    (tmp_path / "nonempty" / "config.json").write_text("precious")
    (tmp_path / "a_file").write_text("x")
    tiny_tokenizer(100).save(str(tmp_path / "small.json"))
    names = {
        "nonempty": tmp_path / "nonempty",
        "a_file": tmp_path / "a_file",
        "new": tmp_path / "new" / "hf",
        "small_tok": tmp_path / "small.json",
        "missing": tmp_path / "missing.json",
        "in_run": runs["deberta"] / "hf",  # wrote an export into the run
    }
    run = runs["deberta"]
    before, run_before = _snapshot(tmp_path), _snapshot(run)
    ckpt = run / "checkpoints" / "last.ckpt"
    capsys.readouterr()
    assert _export("--ckpt_path", ckpt, *(a.format(**names) for a in args)) == 2
    _one_error_line(capsys.readouterr().err, *needles)
    assert _snapshot(tmp_path) == before and _snapshot(run) == run_before


def test_an_export_failing_its_logits_check_is_one_error_line_and_writes_nothing(
    runs, tmp_path, monkeypatch, capsys
):
    """The check after writing (``interop.verify``) reaches the command line as every
    refusal does; a tolerance no float can meet stands for an export that would differ."""
    from roformer_lit.interop import verify

    monkeypatch.setattr(verify, "TOLERANCE", -1.0)
    run = runs["rope"]
    before, run_before = _snapshot(tmp_path), _snapshot(run)
    capsys.readouterr()
    assert _export("--ckpt_path", run / "checkpoints" / "last.ckpt", "--out", tmp_path / "hf") == 2
    _one_error_line(capsys.readouterr().err, "failed its check", str(tmp_path / "hf"))
    assert _snapshot(tmp_path) == before and _snapshot(run) == run_before


class _Payload:
    def __reduce__(self):
        return (os.system, (f"touch {os.environ['PAYLOAD_MARK']}",))


def test_a_crafted_checkpoint_runs_no_code(tmp_path, monkeypatch, capsys):
    mark = tmp_path / "pwned"
    monkeypatch.setenv("PAYLOAD_MARK", str(mark))
    evil = tmp_path / "evil.ckpt"
    torch.save({"state_dict": {}, "x": _Payload()}, evil)
    with pytest.raises(roformer_lit.ConfigError, match="evil.ckpt"):
        roformer_lit.checkpoint_tokenizer(evil)
    assert _export("--ckpt_path", evil, "--out", tmp_path / "hf") == 2
    _one_error_line(capsys.readouterr().err, "evil.ckpt")
    assert not mark.exists() and not (tmp_path / "hf").exists()


def test_checkpoint_tokenizer_of_dicts_and_bad_files(tmp_path):
    from tokenizer_factory import tiny_tokenizer

    tok = tiny_tokenizer(100)
    assert roformer_lit.checkpoint_tokenizer({"state_dict": {}}) is None
    back = roformer_lit.checkpoint_tokenizer({TOKENIZER_KEY: tok.to_str()})
    assert back is not None and back.encode("w7 [MASK]").ids == [7, 4]
    with pytest.raises(roformer_lit.ConfigError, match="corrupt"):
        roformer_lit.checkpoint_tokenizer({TOKENIZER_KEY: "{not json"})
    (tmp_path / "notes.ckpt").write_text("hello")
    with pytest.raises(roformer_lit.ConfigError, match="not a PyTorch checkpoint"):
        roformer_lit.checkpoint_tokenizer(tmp_path / "notes.ckpt")


ROPE_BY_IMPORT_PATH = "roformer_lit.positions.rope:RotaryPosition"


def test_a_run_of_a_builtin_named_by_import_path_is_the_builtin_s_and_exports(
    tmp_path, monkeypatch, capsys
):
    """``fit --model.position <the import path of rope>`` is a rope run: named as one,
    recorded as one, and ``export`` (which refused the import path: no HF counterpart)
    exports it as ``rope``'s architecture."""
    monkeypatch.chdir(tmp_path)
    assert main(fit_args("rope.yaml", 2, "--model.position", ROPE_BY_IMPORT_PATH)) == 0
    run = tmp_path / "runs" / "mlm" / "rope-softmax-seed0"
    ckpt = run / "checkpoints" / "last.ckpt"
    assert torch.load(ckpt, weights_only=True)["hyper_parameters"]["position"] == "rope"
    capsys.readouterr()
    assert _export("--ckpt_path", ckpt, "--out", tmp_path / "hf") == 0
    assert "error:" not in capsys.readouterr().err
    config = transformers.AutoConfig.from_pretrained(tmp_path / "hf")
    assert config.model_type == "roformer"


def test_a_checkpoint_that_recorded_a_builtin_s_import_path_exports(runs, tmp_path, capsys):
    """A checkpoint written before a built-in's import path was read as the built-in
    records the import path: it loads and exports as the built-in."""
    checkpoint = torch.load(runs["rope"] / "checkpoints" / "last.ckpt", weights_only=True)
    checkpoint["hyper_parameters"]["position"] = ROPE_BY_IMPORT_PATH
    del checkpoint[DIGEST_KEY]  # written then: before the architecture digest too
    old = tmp_path / "import-path.ckpt"
    torch.save(checkpoint, old)
    capsys.readouterr()
    assert _export("--ckpt_path", old, "--out", tmp_path / "hf") == 0
    assert "error:" not in capsys.readouterr().err
    assert (tmp_path / "hf" / "config.json").is_file()


#: command -> the arguments that read a checkpoint's stored tokenizer at ``{ckpt}``.
READS_THE_STORED_TOKENIZER = {
    "export": ["export", "--ckpt_path", "{ckpt}", "--out", "{out}"],
    "validate": ["validate", "--ckpt_path", "{ckpt}"],
    "extrapolate": ["extrapolate", "{ckpt}", "--lengths", "16"],
    "finetune": [
        "finetune",
        "--config",
        "configs/finetune/movie_polarity.yaml",
        "--model.pretrained",
        "{ckpt}",
        "--trainer.max_steps",
        "1",
    ],
}


@pytest.mark.parametrize("command", list(READS_THE_STORED_TOKENIZER))
def test_a_corrupt_stored_tokenizer_is_refused_naming_its_checkpoint(
    command, runs, tmp_path, monkeypatch, capsys
):
    """A checkpoint whose stored tokenizer was damaged (hand-edited, cut short) is one
    line that names the checkpoint file, whichever command read it: the line said only
    'the tokenizer stored in the checkpoint is corrupt', which of several given was not
    said."""
    checkpoint = torch.load(runs["learned"] / "checkpoints" / "last.ckpt", weights_only=True)
    tokenizer_section(checkpoint)[TOKENIZER_KEY] = '{"version": "1.0", "model": '
    damaged = tmp_path / "damaged.ckpt"
    torch.save(checkpoint, damaged)
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # the shipped configs
    argv = [
        a.format(ckpt=damaged, out=tmp_path / "out") for a in READS_THE_STORED_TOKENIZER[command]
    ]
    before = _snapshot(tmp_path)
    capsys.readouterr()
    assert main(argv) == 2
    _one_error_line(capsys.readouterr().err, f"checkpoint {damaged}", "corrupt")
    assert _snapshot(tmp_path) == before
