"""experiments.yaml: the HALO seed's modes and the smol_* family, validated with each bad key's path."""

import pytest

from loraloop.errors import ConfigError
from loraloop.rollout.experiments import load_experiments
from loraloop.rollout.sampler import plan_rollout
from loraloop.task_registry import load_registry

SEED_MODES = [
    "baseline_worker",
    "hierarchy_vac_macros",
    "qwen_worker_zero",
    "qwen_worker_bc",
    "qwen_worker_dpo",
    "qwen_pure_zero",
    "qwen_pure_grpo",
]


def write(tmp_path, text):
    path = tmp_path / "e.yaml"
    path.write_text(text)
    return path


def test_seed_modes_and_their_smol_shapes_ship():
    experiments = load_experiments("configs/experiments.yaml")
    for name in SEED_MODES:
        seed = experiments[name]
        smol = experiments[
            "smol_" + name.removeprefix("qwen_").removeprefix("hierarchy_")
            if name != "hierarchy_vac_macros"
            else "smol_hierarchy_vac_macros"
        ]
        assert (bool(seed.manager), seed.vac, seed.macros) == (bool(smol.manager), smol.vac, smol.macros), name
        assert bool(seed.worker.adapter) == bool(smol.worker.adapter), name
        assert smol.worker.url is None and smol.model.startswith(("SmolLM2", "smollm_")), name
        assert smol.manager is None or (smol.manager.model == "SmolLM2-135M-Instruct" and smol.manager.url is None)
    assert (
        experiments["baseline_worker"].worker.api_key_env == "OPENAI_API_KEY"
        and not experiments["baseline_worker"].halo
    )
    assert experiments["hierarchy_vac_macros"].manager.model == "gpt-4o"
    assert experiments["qwen_pure_grpo"].model == "qwen_grpo" and not experiments["qwen_pure_grpo"].halo
    assert experiments["teacher"].policy == "scripted" and experiments["smollm_zero"].policy == "openai"


def test_unknown_keys_and_bad_values_name_their_path(tmp_path):
    path = write(
        tmp_path,
        "experiments:\n  smol_hierarchy:\n    worker: {model: m}\n"
        "    manager: {model: m, url: 3, colour: red}\n    vac: maybe\n",
    )
    with pytest.raises(ConfigError) as caught:
        load_experiments(path)
    said = str(caught.value)
    assert f"{path}: experiments.smol_hierarchy.manager.url: Input should be a valid string" in said
    assert "experiments.smol_hierarchy.manager.colour: Extra inputs are not permitted" in said
    assert "experiments.smol_hierarchy.vac: Input should be a valid boolean" in said


@pytest.mark.parametrize(
    "fields, said",
    [
        ("worker: {backend: magic}", r"experiments\.x\.worker\.backend: Input should be 'openai', 'local' or"),
        ("max_steps: 0", r"experiments\.x\.max_steps: Input should be greater than or equal to 1"),
        ("policy: openai\n    worker: {model: m}", r"experiments\.x: give either a worker block or the short form"),
        (
            "worker: {backend: local}\n    protocol: tools",
            r"experiments\.x: the local backend speaks the text protocol",
        ),
        ("manager: {model: m, warm_start_steps: -1}", r"experiments\.x\.manager\.warm_start_steps: Input should be"),
        ("worker: {backend: scripted, model: m}", r"experiments\.x\.worker: a scripted worker takes no model"),
    ],
)
def test_each_bad_value_is_named(tmp_path, fields, said):
    with pytest.raises(ConfigError, match=said):
        load_experiments(write(tmp_path, f"experiments:\n  x:\n    {fields}\n"))


def test_a_misspelt_top_level_key_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"the file holds `defaults` and `experiments` only"):
        load_experiments(write(tmp_path, "experimnets:\n  x: {}\n"))


def test_manager_off_and_the_short_form(tmp_path):
    experiments = load_experiments(
        write(
            tmp_path,
            "experiments:\n  a:\n    manager: off\n    policy: scripted\n"
            "  b:\n    worker: {adapter: mine}\n    recovery: true\n",
        )
    )
    assert experiments["a"].manager is None and experiments["a"].policy == "scripted" and not experiments["a"].halo
    assert experiments["b"].model == "mine" and experiments["b"].policy == "openai" and experiments["b"].halo


def test_the_plan_carries_the_orchestrator_and_no_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-never-written")
    experiments = load_experiments("configs/experiments.yaml")
    specs = plan_rollout(
        load_registry("configs/tasks/os"),
        "configs/tasks/os",
        experiments["hierarchy_vac_macros"],
        run_id="r",
        subset="test",
        sample_size=1,
        rollouts_per_task=1,
        seed=1,
        task_seed=1,
        temperature=None,
    )
    spec = specs[0]
    assert spec.halo and spec.use_cache and spec.use_macros and spec.use_recovery
    assert spec.manager["model"] == "gpt-4o" and spec.manager["api_key_env"] == "OPENAI_API_KEY"
    assert spec.model_url == "https://api.openai.com/v1" and "sk-secret" not in str(spec.to_dict())


def test_a_server_key_comes_from_the_named_variable_only(monkeypatch):
    from loraloop.rollout.endpoints import endpoint
    from loraloop.settings import Settings

    settings = Settings(vllm_url="http://vllm:8000/v1", vllm_api_key="EMPTY")
    assert endpoint(None, None, settings) == ("http://vllm:8000/v1", "EMPTY")
    monkeypatch.delenv("HALO_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"HALO_TEST_KEY is not set: the experiment's server at https://api\.x/v1"):
        endpoint("https://api.x/v1", "HALO_TEST_KEY", settings)
    monkeypatch.setenv("HALO_TEST_KEY", "sk-1")
    assert endpoint("https://api.x/v1", "HALO_TEST_KEY", settings) == ("https://api.x/v1", "sk-1")
