"""No comment in a shipped config (``configs/**/*.yaml``) states a duration: the sweep files
typed run times no committed raw output states (``19.5 min with --jobs 2``, ``About 100
min``, ``38, 125 and 36 run-minutes`` where the compare tables log 30.2, 139.4 and 29.1,
``~2.5 h``, ``about 35 minutes of one core``, an estimate ``80 x 8 x 0.44 min``). A time a
raw output does state is written into a generated region of the docs
(``scripts/study_pages.py``), which a comment can point to.

Nor does one state a result: the probe configs typed scores no raw output holds or that
only the study page states from one (``rope val/acc 1.00 by step 1500 (0.91 at 1000)``,
``rope stayed at 0.21-0.33 ... in sixteen configurations``, ``t5 reaches val/acc 1.000``,
``from 0.995 to 0.825``); each now points to the page. A score is a number in [0, 1] with two
or more decimals, or any other decimal or percentage within two words of a word that names
a result (``reaches 0.9``, ``93 % accuracy``, ``val/loss 4.7``: :data:`RESULT_WORD`); a
setting written in a comment (``--only model.learning_rate=0.01``, ``data.probe_hint
0.25``, ``min_lr_ratio: 0.06``: a dotted or underscored key and its value), a proportion
that sets up a run (``30 % masking``, ``10 % warmup``, ``42 % of one epoch``, ``0.15
masking rate``, ``lr 1e-3``), a p-value (``p = 0.002``) or an angle (``<= 0.032 rad``) is
not one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = sorted((ROOT / "configs").glob("**/*.yaml"))
#: A duration: ``19.5 min``, ``~2.5 h``, ``56-132 s``, ``about 35 minutes``, ``run-minutes``.
DURATION = re.compile(
    r"\d+(?:[.,]\d+)*(?:\s?-\s?\d+(?:[.,]\d+)*)?\s?"
    r"(?:ms|s|sec|seconds?|min|minutes?|h|hours?|run-minutes)\b|under a minute"
)


#: A number that sets up a run rather than reports one: after a setting's word (``lr
#: 0.01``, ``dropout 0.10``, ``mask 0.15``) or before what it is a share of (``0.15 of the
#: tokens``, ``0.15 masking rate``, ``30 % masking``, ``10 % warmup``).
_SETUP_BEFORE = r"(?<!lr )(?<!rate )(?<!ratio )(?<!mask )(?<!masking )(?<!dropout )(?<!hint )"
_SETUP_AFTER = r"(?!\s?%?\s?(?:of\b|mask|warm))"

#: A score: ``0.19``, ``1.000``, ``0.21-0.33``; not after ``=`` or ``p =``, not before a unit.
SCORE = re.compile(
    rf"(?<![=\w.])(?<!p = )(?<!p < ){_SETUP_BEFORE}"
    r"(?>(?:0\.\d{2,}|1\.0{2,})(?:\s?[-–]\s?\d+\.\d+)?)(?!\d|\.\d|\s?(?:rad|°|x\b|×))"
    + _SETUP_AFTER
)

#: A setting named in a comment, ``model.learning_rate=0.01``, ``data.probe_hint 0.25``,
#: ``min_lr_ratio: 0.06``: a key with a dot or an underscore, then its value.
SETTING = re.compile(r"(?:--)?[a-z]\w*(?:[._]\w+)+\s?[:=]?\s?-?\d[\d.e+-]*")


#: A word naming a result: a metric (``val/acc``, ``accuracy``, ``loss``, ``perplexity``,
#: ``F1``, ``exact match`` ...) or what a run does to one (``reaches``, ``scores``).
RESULT_WORD = (
    r"(?:val/\w+|acc(?:uracy)?|loss(?:es)?|perplexit(?:y|ies)|ppl|scor(?:es?|ed|ing)|f1|mcc"
    r"|exact(?:[\s-]match)?|reach(?:es|ed|ing)?|achiev(?:es|ed|ing))"
)
#: A decimal (``0.9``, ``4.7``; not ``1.0e-3``) or a percentage (``93%``, ``93 %``), not a
#: p-value, nor a proportion that sets up a run (``30 % masking``, ``42 % of one epoch``).
_RESULT_NUMBER = (
    rf"(?<![\w.])(?<!p = )(?<!p < )(?<!p=)(?<!p<){_SETUP_BEFORE}"
    rf"(?:\d+(?:\.\d+)?\s?%|\d*\.\d+(?![\d.]|e[-+]?\d)){_SETUP_AFTER}"
)
#: At most two words between, within one clause (no ``,;()`` and no sentence's end).
_GAP = r"(?:\s+[^\s,;()]+){0,2}?\s+"
#: A number beside a word naming a result: ``reaches 0.9``, ``93 % accuracy``.
WORDED_SCORE = re.compile(
    rf"\b{RESULT_WORD}\b:?{_GAP}{_RESULT_NUMBER}|{_RESULT_NUMBER}{_GAP}{RESULT_WORD}\b",
    re.IGNORECASE,
)


def typed_score(text: str) -> str | None:
    """The first score stated in ``text`` outside a named setting (:data:`SCORE`, or a
    number beside a word naming a result: :data:`WORDED_SCORE`), or None."""
    plain = SETTING.sub("", text)
    found = SCORE.search(plain) or WORDED_SCORE.search(plain)
    return None if found is None else found[0]


def comments(text: str) -> str:
    """Every comment of ``text`` joined into one line (a duration can wrap)."""
    return " ".join(line.split("#", 1)[1].strip() for line in text.splitlines() if "#" in line)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("# 63 runs. 19.5 min with --jobs 2\n", True),
        ("# 20 runs, about 17\n# minutes of the 2-core CPU\n", True),
        ("# (90 runs, ~2.5 h with --jobs 2)\n", True),
        ("# 56-132 s a run\n", True),
        ("# took 38, 125 and 36 run-minutes\n", True),
        ("# 20 runs.\nmax_steps: 1500  # 1,500 steps\n", False),
        ("# checkpoints at steps 1,500 / 3,000 / 6,000, 5 seeds\n", False),
    ],
)
def test_the_pattern_finds_a_duration_and_only_one(text, found) -> None:
    assert bool(DURATION.search(comments(text))) is found


@pytest.mark.parametrize("path", CONFIGS, ids=[str(p.relative_to(ROOT)) for p in CONFIGS])
def test_no_config_comment_states_a_duration(path) -> None:
    found = DURATION.search(comments(path.read_text(encoding="utf-8")))
    assert found is None, f"{path.relative_to(ROOT)}: {found[0]!r}"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("# rope val/acc 1.00 by step 1500 (0.91 at 1000); nope 0.19 at\n", True),
        ("# rope stayed at 0.21-0.33, guessing among the values present\n", True),
        ("# t5 reaches val/acc 1.000 (exact match 1.000) on seeds 0, 1 and 2\n", True),
        ("# moves learned seed 0 at step 1,500 from 0.995 to 0.825 on copy\n", True),
        ("# rope val/acc 0.997, exact 0.96 at step 1500.\n", True),
        ("# at step 1500: learned val/acc 1.00 (from step 1000), rope 0.74.\n", True),
        ("# five stop at 0.0625. data.seed stays 0\n", True),
        ("# data.probe_hint 0.5: half of the training pairs\n", False),
        ("  intermediate_size: 384  # 1.5 x hidden, as 1152 / 768\n", False),
        ("#   sweep --only model.learning_rate=0.01 --only data.probe=TASK\n", False),
        ("# the sign-flip test reaches p = 0.002, where five stop at p = 0.0625\n", False),
        ("# the lowest quarter turns <= 0.032 rad over 0.57-1.01 rad\n", False),
        ("# data.probe_hint 0.25 and model.min_lr_ratio: 0.06 (of the peak)\n", False),
        ("learning_rate: 1.0e-3\nmin_lr_ratio: 0.1  # of the peak\n", False),
        # one decimal, or a percentage, beside a word naming a result
        ("# rope reaches 0.9 by step 1500\n", True),
        ("# 93% accuracy on copy\n", True),
        ("# nope stays at 93 % accuracy\n", True),
        ("# val/acc 0.9 at step 1000\n", True),
        ("# an accuracy of 0.8 after\n# 600 steps\n", True),
        ("# reaches val/loss 4.7\n", True),
        ("# the loss falls to 4.7\n", True),
        ("# exact-match 0.8 on copy\n", True),
        ("# scores 85.2 % on the offline task\n", True),
        ("# perplexity 110.5 at the end\n", True),
        # settings and proportions beside no result word, or set apart from one
        ("# GLUE-sane (lr 4e-5, batch 32, 5 epochs, length 128, 10 % warmup)\n", False),
        ("# symmetric ALiBi in every layer, and 30 % masking, at a laptop's size\n", False),
        ("# 150 steps (4,800 examples, 42 % of one epoch)\n", False),
        ("# mask 0.15 of the tokens; the loss is on those\n", False),
        ("# a 0.15 masking rate\n", False),
        ("# lr 0.01 for the head, dropout 0.10, ratio 0.06\n", False),
        ("# the loss is cross-entropy over 15 % of tokens\n", False),
        ("# learning rate 1.0e-3 reaches the plateau sooner\n", False),
        ("# training hint 0.5, 4,000 steps\n", False),
        ("# turn 9.1-16.2 rad by n = 256\n", False),
        ("# val/acc is logged. 0.5 of the pairs are hinted\n", False),
        ("# the sign-flip test can reach p = 0.002 with five seeds\n", False),
        ("# val/acc, 0.5 hint\n", False),
        ("# reaches step 1500\n", False),
    ],
)
def test_the_pattern_finds_a_score_and_only_one(text, found) -> None:
    assert (typed_score(comments(text)) is not None) is found


@pytest.mark.parametrize("path", CONFIGS, ids=[str(p.relative_to(ROOT)) for p in CONFIGS])
def test_no_config_comment_states_a_score(path) -> None:
    found = typed_score(comments(path.read_text(encoding="utf-8")))
    assert found is None, f"{path.relative_to(ROOT)}: {found!r}"
