"""``locality``: the attention a position bias alone gives, read from the weights.

Oracles: ALiBi's prior is ``softmax_j(-m_h |i - j|)`` with the paper's slopes
``m_h = 2^(-8h/n)``, computed here from the formula; a T5 table of zeros gives uniform
attention, ``(2W + 1) / L`` within ``W``. The properties run over every registered scheme.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from cli_helpers import fit_args
from model_factory import small_model

from roformer_lit import POSITION_SCHEMES
from roformer_lit.commands import main
from roformer_lit.positions.base import LayerPosition, PositionScheme, ScoreBias, default_scale
from roformer_lit.results.locality import bias_prior, local_mass
from roformer_lit.training.architecture_digest import DIGEST_KEY, architecture_digest

LENGTH = 24


def test_alibi_prior_is_the_softmax_of_the_papers_slopes():
    model = small_model("alibi", hidden_size=32, num_heads=4)
    prior = bias_prior(model.encoder, LENGTH)
    query = LENGTH // 2
    distance = (torch.arange(LENGTH) - query).abs().double()
    slopes = [2.0 ** (-8 * h / 4) for h in range(1, 5)]
    oracle = torch.stack([torch.softmax(-m * distance, 0) for m in slopes])
    assert not isinstance(prior, str)
    for layer_prior in prior:  # every layer shares ALiBi's fixed bias
        torch.testing.assert_close(layer_prior.double(), oracle, rtol=1e-5, atol=1e-6)
    expected = oracle[:, query - 2 : query + 3].sum(-1)
    torch.testing.assert_close(local_mass(prior, 2)[0].double(), expected, rtol=1e-5, atol=1e-6)


def test_a_zero_t5_table_is_uniform_attention():
    model = small_model("t5", hidden_size=32, num_heads=4)
    with torch.no_grad():
        for param in model.encoder.position.parameters():
            param.zero_()
    prior = bias_prior(model.encoder, LENGTH)
    assert not isinstance(prior, str)
    mass = local_mass(prior, 3)
    torch.testing.assert_close(mass, torch.full_like(mass, 7 / LENGTH))


@pytest.mark.parametrize("position", sorted(POSITION_SCHEMES))
def test_every_scheme_gives_a_distribution_or_says_why_not(position):
    model = small_model(position, hidden_size=32, num_heads=4)
    prior = bias_prior(model.encoder, LENGTH)
    if not POSITION_SCHEMES[position].capabilities().needs_score_bias:
        assert isinstance(prior, str) and "no score bias" in prior
        return
    if isinstance(prior, str):  # a content-dependent bias: random q, k must change it
        assert "depends on the queries and keys" in prior
        return
    assert prior.shape == (len(model.encoder.layers), 4, LENGTH)
    assert (prior >= 0).all()
    torch.testing.assert_close(prior.sum(-1), torch.ones(prior.shape[:2]))


def test_content_dependent_biases_are_recognised():
    """xl's and deberta's biases read the queries; a content-free one must not be claimed."""
    for position in ("xl", "deberta"):
        if position in POSITION_SCHEMES:
            prior = bias_prior(small_model(position, hidden_size=32, num_heads=4).encoder, 16)
            assert isinstance(prior, str) and "queries and keys" in prior


class _Sloped(LayerPosition):
    def __init__(self, slope):
        super().__init__()
        self.slope = slope

    def score(self, q, k, ctx, qkv):
        if not self.slope:
            return None
        i = torch.arange(q.shape[-2], device=q.device)
        bias = -self.slope * (i[:, None] - i[None, :]).abs().to(q.dtype)
        return ScoreBias(bias, default_scale(q.shape[-1]))


class DeclaredBias(PositionScheme):
    """A plugin's scheme whose score bias depends on an option (``slope``: none at 0), so
    it declares it in ``capabilities`` (what the rule table reads) and leaves the class
    attribute ``needs_score_bias`` at its default, False."""

    def __init__(self, shape, *, slope: float = 0.5):
        super().__init__(shape)
        self.hook = _Sloped(slope)

    @classmethod
    def capabilities(cls, options=None):
        slope = (options or {}).get("slope", 0.5)
        return dataclasses.replace(super().capabilities(options), needs_score_bias=slope != 0)

    def layer(self, index):
        return self.hook


@pytest.mark.parametrize("slope", [0.5, 0.0])
def test_a_scheme_declaring_its_bias_is_read_as_the_rule_table_reads_it(slope):
    """locality read the built scheme's class attribute ``needs_score_bias``, not what the
    scheme declares (:meth:`~roformer_lit.positions.base.PositionScheme.capabilities`,
    which the rule table reads): a plugin declaring its bias there had "no score bias".
    Oracle: ``softmax_j(-slope |i - j|)`` in every layer and head."""
    model = small_model(DeclaredBias, hidden_size=32, num_heads=4, position_kwargs={"slope": slope})
    prior = bias_prior(model.encoder, LENGTH)
    if not slope:
        assert isinstance(prior, str) and "no score bias" in prior
        return
    assert not isinstance(prior, str), prior
    distance = (torch.arange(LENGTH) - LENGTH // 2).abs().double()
    oracle = torch.softmax(-slope * distance, 0).expand(len(model.encoder.layers), 4, LENGTH)
    torch.testing.assert_close(prior.double(), oracle, rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def alibi_checkpoint(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("locality")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main(fit_args("alibi.yaml", 2)) == 0
    return workdir / "runs" / "mlm" / "alibi-softmax-seed0" / "checkpoints" / "last.ckpt"


def test_cli_table_at_the_training_length(alibi_checkpoint, capsys):
    assert main(["locality", str(alibi_checkpoint), str(alibi_checkpoint)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 3  # header, rule, one row (a checkpoint named twice counts once)
    cells = [c.strip() for c in out[2].split("|")[1:-1]]
    assert cells[1] == "alibi" and cells[2] == "32"  # TINY trains at 32 tokens
    maximum, median, uniform = (float(c) for c in cells[3:])
    assert uniform == pytest.approx(5 / 32, abs=5e-4)
    assert 1 >= maximum >= median > uniform  # every ALiBi head is more local than uniform


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--window", "16"], "--window must be < L / 2 = 16, got 16"),
        (
            ["--window", "-1"],
            "locality: argument --window: must be an integer in [0, 4096], got '-1'",
        ),
        (
            ["--length", "4"],
            "locality: argument --length: must be an integer in [8, 4096], got '4'",
        ),
        (
            ["--length", "x"],
            "locality: argument --length: must be an integer in [8, 4096], got 'x'",
        ),
    ],
)
def test_bad_arguments_are_one_error_line(alibi_checkpoint, capsys, extra, expected):
    assert main(["locality", str(alibi_checkpoint), *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing half-printed
    assert captured.err.strip().splitlines() == [f"error: {expected}"]


def test_missing_and_non_checkpoint_files(alibi_checkpoint, tmp_path, capsys):
    junk = tmp_path / "junk.ckpt"
    junk.write_text("not a checkpoint")
    assert main(["locality", str(tmp_path / "none.ckpt")]) == 2
    assert capsys.readouterr().err.strip() == f"error: checkpoint not found: {tmp_path}/none.ckpt"
    assert main(["locality", str(junk), str(alibi_checkpoint)]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith(f"warning: cannot read checkpoint {junk}")
    assert len(captured.out.strip().splitlines()) == 3


def test_a_plan_with_several_schemes_has_no_single_prior():
    plan = {"pattern": ["a", "b"], "types": {"b": {"position": "t5"}}}
    prior = bias_prior(small_model("alibi", layer_plan=plan).encoder, LENGTH)
    assert isinstance(prior, str) and "layer plan" in prior


def _unbuildable(checkpoint, path):
    """``checkpoint`` with its scheme replaced by an import path nothing provides."""
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    state["hyper_parameters"]["position"] = "gone_pkg.schemes:Gone"
    # a run of a plugin since uninstalled: its record sealed as its save sealed it
    state[DIGEST_KEY] = architecture_digest(state["hyper_parameters"])
    torch.save(state, path)
    return path


def test_a_checkpoint_that_cannot_be_built_prints_no_table(alibi_checkpoint, tmp_path, capsys):
    gone = _unbuildable(alibi_checkpoint, tmp_path / "gone.ckpt")
    assert main(["locality", str(gone)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no table head before the refusal
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "gone_pkg" in lines[0]
    other = _unbuildable(alibi_checkpoint, tmp_path / "other.ckpt")
    assert main(["locality", str(gone), str(other)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    # refused when read (its recorded model cannot be built here): one line naming each
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert f"{gone} records a model" in lines[0] and f"{other} records a model" in lines[0]
    assert main(["locality", str(gone), str(alibi_checkpoint)]) == 0  # the readable one
    assert len(capsys.readouterr().out.strip().splitlines()) == 3
