"""``--data.document_mask``: batches carry which document each token belongs to.

The segment ids come from the document ends the prepared shards keep: inside a block they
count documents from 0, change exactly after each document's ``[SEP]``, and the model keeps
the documents apart (``test_segments.py`` checks the model side against lone documents).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from cli_helpers import CONFIGS, fit_args

from roformer_lit.commands import EXIT_USER_ERROR, main
from roformer_lit.data.corpus_module import CorpusDataModule


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> CorpusDataModule:
    dm = CorpusDataModule(
        cache_dir=str(tmp_path_factory.mktemp("cache")),
        max_length=64,
        batch_size=4,
        max_train_blocks=64,
        max_val_blocks=8,
        document_mask=True,
    )
    dm.prepare_data()
    dm.setup("fit")
    return dm


def test_segment_ids_follow_the_document_ends(data):
    dataset = data.train_dataset
    sep = data.special_tokens.sep
    stream_blocks = dataset.blocks
    changes = 0
    for index in range(len(dataset)):
        sample = dataset[index]
        segments = sample["segment_ids"]
        raw = stream_blocks[index]
        assert segments[0] == 0
        steps = segments[1:] - segments[:-1]
        assert set(steps.tolist()) <= {0, 1}  # documents in order, contiguous
        boundaries = torch.nonzero(steps).flatten()
        changes += len(boundaries)
        assert all(raw[b] == sep for b in boundaries.tolist())  # each document ends in [SEP]
        # independent oracle: the document of every token from the shards' ends
        first = dataset.blocks.start + index * dataset.blocks.length
        ends = torch.from_numpy(dataset.blocks.stream.doc_ends.astype("int64"))
        positions = torch.arange(first, first + dataset.blocks.length)
        documents = torch.searchsorted(ends, positions, right=True)
        assert torch.equal(segments, documents - documents[0])
    assert changes > 0  # the bundled corpus packs several documents into some blocks


def test_batches_carry_segment_ids_only_when_asked(data, tmp_path):
    batch = next(iter(data.train_dataloader()))
    assert batch["segment_ids"].shape == batch["input_ids"].shape
    assert batch["segment_ids"].dtype == torch.long
    plain = CorpusDataModule(cache_dir=data.cache_dir, max_length=64, max_train_blocks=8)
    plain.setup("fit")
    assert "segment_ids" not in next(iter(plain.train_dataloader()))


def test_fit_with_document_mask_trains_and_records_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = fit_args("rope.yaml", 4, "--data.document_mask", "true")
    assert main(argv) == 0
    checkpoint = next(tmp_path.rglob("last.ckpt"))
    saved = torch.load(checkpoint, map_location="cpu", weights_only=True)
    assert saved["datamodule_hyper_parameters"]["document_mask"] is True
    assert all(torch.isfinite(v).all() for v in saved["state_dict"].values())


def test_document_mask_with_linear_attention_is_refused_in_one_line(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "roformer_lit",
            *fit_args(
                "rope.yaml", 2, "--model.attention", "linear", "--data.document_mask", "true"
            ),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == EXIT_USER_ERROR
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr
    assert "document_mask" in errors[0] and "'linear'" in errors[0] and "softmax" in errors[0]
    assert not (tmp_path / "runs").exists()


def test_document_mask_must_be_a_boolean(tmp_path):
    from roformer_lit.errors import ConfigError

    with pytest.raises(ConfigError, match="document_mask"):
        CorpusDataModule(cache_dir=str(tmp_path), document_mask="yes")  # type: ignore[arg-type]


def test_the_sweep_config_ablates_the_document_mask(monkeypatch, capsys):
    from roformer_lit.sweep import runner

    monkeypatch.chdir(CONFIGS.parent)
    monkeypatch.setattr(runner, "launch", lambda *a, **k: pytest.fail("a dry run launched"))
    sweep = "configs/sweeps/document_mask.yaml"
    assert main(["sweep", "--config", sweep, "--dry-run"]) == 0
    commands = capsys.readouterr().out.strip().splitlines()
    assert len(commands) == 18
    for value in ("true", "false"):
        assert sum(f"--data.document_mask {value}" in c for c in commands) == 9
