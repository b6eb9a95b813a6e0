"""Shared test set-up: a private tokenizer cache for the whole session, the fast tier, and
the study pages read from a temporary folder (:func:`study_bench`).

``python -m pytest -m fast`` runs the tests of the core that build no Trainer: the schemes
and kernels against their oracles, the model's properties, masking, data, position tasks
and every argument rule. It is chosen by test: a test of :data:`FAST_MODULES` is in it
unless marked ``trainer`` (it trains, validates, or runs the CLI in a process of its
own) or ``slow``, and
:func:`no_trainer_in_the_fast_tier` fails a fast test that builds a Trainer, so the tier
cannot grow one by mistake. The default run (``python -m pytest``) runs everything but
``slow``; ``-m slow`` runs what the default run leaves out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: The test modules of the fast tier (by subject: the network, data, argument rules).
FAST_MODULES = frozenset(
    {
        # the network: schemes, kernels, model
        "test_math_oracles",
        "test_bias_scheme_oracles",
        "test_p_rope",
        "test_model_properties",
        "test_blocks",
        "test_layer_plans",
        "test_windowed_attention",
        "test_seam",
        "test_scheme_kit",
        "test_scheme_kit_fails",
        "test_scheme_kit_defaults",
        "test_layer_hooks_registered",
        "test_example_schemes",
        "test_segments",
        "test_sdpa_backends",
        "test_cpu_fused_bias",
        "test_flex_attention",
        "test_random_positions",
        "test_state_dict",
        "test_earlier_checkpoints",
        "test_import_graph",
        "test_statistics",
        # data, masking and position tasks
        "test_data",
        "test_probe_tasks",
        "test_probe_baselines",
        "test_task_kit",
        "test_task_kit_fails",
        "test_readers_guarded",
        "test_finetune_inputs",
        # argument rules
        "test_bad_arguments",
        "test_integer_ranges",
        "test_tool_arguments",
        "test_script_arguments",
        "test_config_composition",
        "test_run_name",
        "test_resume_hint",
        "test_compare_resolved_settings",
        "test_plan_identity",
        "test_extrapolate_overrides",
        "test_replaced_mappings",
        "test_checkpoint_settings",
        "test_checkpoint_records",
        "test_nonfinite_checkpoints",
        "test_load_from_checkpoint",
        "test_damaged_checkpoint_bytes",
        "test_checkpoint_digest",
        "test_yaml_keys",
        "test_yaml_numbers",
        "test_encoder_config",
        "test_encoder_config_inputs",
        "test_module_arguments",
        "test_corpus_baselines",
        "test_total_steps",
        "test_plugins",
        "test_docs_composition",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if (
            item.path.stem in FAST_MODULES
            and item.get_closest_marker("slow") is None
            and item.get_closest_marker("trainer") is None
        ):
            item.add_marker(pytest.mark.fast)


@pytest.fixture(autouse=True)
def no_trainer_in_the_fast_tier(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """A fast-tier test that builds a Lightning Trainer fails, naming the marker to add."""
    if request.node.get_closest_marker("fast") is None:
        yield
        return
    from lightning.pytorch import Trainer

    def refuse(self, *args, **kwargs):
        pytest.fail(
            "the fast tier builds no Trainer: mark this test @pytest.mark.trainer", pytrace=False
        )

    monkeypatch.setattr(Trainer, "__init__", refuse)
    yield


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Never write to the user's ~/.cache; trained tokenizers are shared within the session."""
    mp = pytest.MonkeyPatch()
    mp.setenv("ROFORMER_LIT_CACHE", str(tmp_path_factory.mktemp("cache")))
    yield
    mp.undo()


@pytest.fixture
def study_bench(tmp_path: Path):
    """The study pages read their raw outputs from an empty ``tmp_path`` (pages from
    ``tmp_path / "pages"``) for the test, the repository's afterwards."""
    from roformer_lit.results.study import places

    pages = tmp_path / "pages"
    pages.mkdir()
    places.read_from(tmp_path, pages)
    yield tmp_path
    places.read_from(places.REPOSITORY / "docs" / "bench", places.REPOSITORY / "docs" / "studies")
