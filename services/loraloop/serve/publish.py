"""Publish an adapter: store it, hot-load it into the running vLLM, and prove vLLM really serves it.

Several peer projects shipped rollouts that silently kept using the base model after an adapter
update; here the publish fails loudly unless the served adapter's logprobs on fixed prompts differ from the
base's and agree with the trainer's own (train/verify_logprobs.py), and a rollback unless they match the ones
recorded when that version was published.
Each version is served under its own name, `<name>-vK` (store.adapters.served_name), so a request
never meets other weights under a name it knew; `retire` unloads the old ones once no rollout
uses them.
"""

from __future__ import annotations

import hashlib
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from loraloop.errors import ConfigError, LoraloopError, ServiceUnavailable
from loraloop.rollout.preflight import served_models
from loraloop.settings import Settings
from loraloop.store import adapters, open_store
from loraloop.store.backends import Store
from loraloop.train.verify_logprobs import VERIFY_PROMPTS, read_trainer_logprobs, verification_prompts


class PublishVerificationError(LoraloopError):
    """vLLM answered, but not with the adapter just published."""


def _post(url: str, path: str, payload: dict, settings: Settings) -> httpx.Response:
    try:
        return httpx.post(
            f"{url.rstrip('/')}{path}",
            json=payload,
            timeout=settings.request_timeout_s,
            headers={"Authorization": f"Bearer {settings.vllm_api_key}"},
        )
    except httpx.HTTPError as exc:
        raise ServiceUnavailable(f"model server unreachable at {url} ({type(exc).__name__})") from exc


def _root(settings: Settings) -> str:
    return settings.vllm_url.rstrip("/").removesuffix("/v1")


def listed(settings: Settings) -> set[str]:
    """The model names the vLLM at settings.vllm_url serves now (base and adapters)."""
    return {m["id"] for m in served_models(settings.vllm_url, settings.vllm_api_key)}


def load_adapter(settings: Settings, name: str, path: str) -> None:
    """Load (or replace) an adapter in the running vLLM under the served name `name`."""
    if name in listed(settings):
        unload_adapter(settings, name)
    response = _post(_root(settings), "/v1/load_lora_adapter", {"lora_name": name, "lora_path": path}, settings)
    if response.status_code != 200:
        hint = "; start vLLM with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True" if response.status_code == 404 else ""
        raise ServiceUnavailable(
            f"vLLM at {settings.vllm_url} refused to load adapter {name!r} from {path}: "
            f"HTTP {response.status_code} {response.text[:300]}{hint}"
        )


def unload_adapter(settings: Settings, served_name: str) -> bool:
    """Unload an adapter from the vLLM at settings.vllm_url by its served name (`<name>-vK`); False when it
    was not loaded (already gone is not an error). Requests naming it fail from then on with 404."""
    response = _post(_root(settings), "/v1/unload_lora_adapter", {"lora_name": served_name}, settings)
    if response.status_code == 404 and served_name not in listed(settings):
        return False  # not loaded (a 404 from a server without runtime updating still lists it: an error)
    if response.status_code != 200:
        raise ServiceUnavailable(
            f"vLLM at {settings.vllm_url} refused to unload adapter {served_name!r}: "
            f"HTTP {response.status_code} {response.text[:300]} (runtime unloading needs "
            "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True)"
        )
    return True


IN_EFFECT_GAP = 1e-4  # a logprob gap above vLLM's run-to-run noise (0.0 in float32 here) and below one RL step's
TOP_LOGPROBS = 20  # the first reply token's alternatives whose logprobs make a prompt's fingerprint
# A served adapter matches its record when its fingerprint is this much closer to the recorded one than the recorded
# one is to the base (mean absolute logprob difference): noise between batches is orders of magnitude smaller,
# another version's weights are as far from this one as it is from the base.
MATCH_FRACTION = 0.25


def fingerprint(settings: Settings, model: str, prompts: list[list[dict]]) -> list[dict[str, float]]:
    """The logprobs `model` gives the TOP_LOGPROBS likeliest first tokens of its reply to each prompt, keyed
    `token_id:<id>` (exact ids, not decoded text): one prefill per prompt and a single decoded token, all prompts
    at once.

    Not `prompt_logprobs` (scoring the prompt itself): with LoRA enabled, vLLM computes it through the LoRA
    logits path with the wrong mapping and can kill the engine (vllm-project/vllm#16668, #29955)."""
    payload = {
        "max_tokens": 1,
        "temperature": 0.0,
        "seed": 0,
        "logprobs": True,
        "top_logprobs": TOP_LOGPROBS,
        "return_tokens_as_token_ids": True,
    }

    def one(messages: list[dict]) -> dict[str, float]:
        response = _post(
            settings.vllm_url, "/chat/completions", {**payload, "model": model, "messages": messages}, settings
        )
        if response.status_code != 200:
            raise PublishVerificationError(
                f"model {model!r} at {settings.vllm_url}: HTTP {response.status_code} {response.text[:300]}"
            )
        content = (response.json()["choices"][0].get("logprobs") or {}).get("content") or []
        if not content:
            raise PublishVerificationError(f"model {model!r} at {settings.vllm_url} returned no logprobs")
        return {alt["token"]: alt["logprob"] for alt in content[0]["top_logprobs"]}

    with ThreadPoolExecutor(max_workers=max(1, len(prompts))) as pool:  # concurrent: vLLM batches them
        return list(pool.map(one, prompts))


def distance(a: list[dict[str, float]], b: list[dict[str, float]]) -> tuple[float, float]:
    """(largest, mean) absolute difference between two fingerprints of the same prompts, over the tokens either
    lists; a token only one lists counts at the other's lowest listed logprob (an upper bound on where it is)."""
    gaps = []
    for top_a, top_b in zip(a, b, strict=True):
        floor_a, floor_b = min(top_a.values()), min(top_b.values())
        gaps += [abs(top_a.get(t, floor_a) - top_b.get(t, floor_b)) for t in top_a.keys() | top_b.keys()]
    return (max(gaps), sum(gaps) / len(gaps)) if gaps else (0.0, 0.0)


LIKELY_LOGPROB = -3.0  # served tokens this likely (5 %) are compared with the trainer's, and always the top one


def against_trainer(served: list[dict[str, float]], trainer: list[dict[str, float]], threshold: float) -> dict:
    """Compare a served fingerprint with the trainer's own logprobs on the same prompts (train/verify_logprobs.py):
    over each prompt's served tokens at least LIKELY_LOGPROB likely (and its likeliest), the largest absolute
    difference must be at most `threshold`; raise PublishVerificationError naming the gap otherwise.

    Only the likely tokens: vLLM serves in bfloat16 and the trainer computes in its own dtype, so the tail of the
    distribution is noisy (up to 0.23 on the 20th token of the same weights, measured on the 2-core VM) while the
    likely tokens agree within 0.12 (0.24 with a bfloat16 trainer) and another adapter moves them by 0.67 or more
    (docs/training.md). A token the trainer did not keep among its likeliest counts at the trainer's lowest kept
    logprob (where it is at most)."""
    gaps = []
    for served_top, trainer_top in zip(served, trainer, strict=True):
        floor = min(trainer_top.values())
        best = max(served_top, key=served_top.__getitem__)
        likely = [t for t, lp in served_top.items() if lp >= LIKELY_LOGPROB or t == best]
        gaps += [abs(served_top[t] - trainer_top.get(t, floor)) for t in likely]
    largest, mean = max(gaps), sum(gaps) / len(gaps)
    if largest > threshold:
        raise PublishVerificationError(
            f"the served logprobs differ from the trainer's own on the same tokens by up to {largest:.3f} (mean "
            f"{mean:.3f}), above the threshold {threshold} (LORALOOP_PUBLISH_MAX_LOGPROB_DIFF): vLLM serves other "
            "weights than the ones trained (another adapter, a stale copy, or none)"
        )
    return {"max_diff": round(largest, 4), "mean_diff": round(mean, 4), "threshold": threshold, "tokens": len(gaps)}


def verify_served(settings: Settings, name: str, prompts: list[list[dict]], recorded: dict | None = None) -> dict:
    """Check /v1/models lists the adapter over the base and that it is in effect: the logprobs it gives the
    verification prompts (`fingerprint`) must differ from the base's by more than IN_EFFECT_GAP somewhere.

    With `recorded` (the verification stored when this version was published, with its `fingerprint` and
    `base_distance`) the served adapter must also be that version: its fingerprint within MATCH_FRACTION of
    the recorded one's distance from the base, which catches other weights served under this name."""
    models = {m["id"]: m for m in served_models(settings.vllm_url, settings.vllm_api_key)}
    if name not in models:
        raise PublishVerificationError(f"vLLM at {settings.vllm_url} does not list adapter {name!r}")
    parent = models[name].get("parent")
    with ThreadPoolExecutor(max_workers=2) as pool:
        tuned_job = pool.submit(fingerprint, settings, name, prompts)
        base = fingerprint(settings, parent or settings.base_model_name, prompts)
        tuned = tuned_job.result()
    gap, base_distance = distance(base, tuned)
    if gap <= IN_EFFECT_GAP:
        raise PublishVerificationError(
            f"vLLM at {settings.vllm_url} serves {name!r} but its logprobs equal the base model's on all "
            f"{len(prompts)} verification prompts, within {gap:.1e}: the adapter is not in effect "
            "(or was trained to no change)"
        )
    matched = None
    if recorded and recorded.get("fingerprint"):
        _, off = distance(recorded["fingerprint"], tuned)
        matched = off <= MATCH_FRACTION * recorded["base_distance"]
        if not matched:
            raise PublishVerificationError(
                f"vLLM at {settings.vllm_url} serves {name!r}, but its logprobs are {off:.2e} (mean) from the ones "
                f"recorded for this version, which were {recorded['base_distance']:.2e} from the base: another "
                "version is in effect"
            )
    return {
        "parent": parent,
        "prompts": len(prompts),
        "logprob_gap": gap,
        "base_distance": base_distance,
        "fingerprint": tuned,
        "prompt_set": prompts,
        "matches_recorded": matched,
    }


def serve_on(settings: Settings, store: Store, name: str, version: str) -> dict:
    """Load a stored version into the vLLM at settings.vllm_url under `<name>-<version>` and verify it
    against its record."""
    metadata = adapters.read_metadata(store, name, version)
    recorded = metadata.get("verification", {})
    local = adapters.download(store, name, version, Path(settings.adapters_dir))
    served = adapters.served_name(name, version)
    load_adapter(settings, served, _seen_by_vllm(settings, name, version, local))
    return {
        **metadata,
        "verification": verify_served(settings, served, recorded.get("prompt_set") or VERIFY_PROMPTS, recorded),
    }


def serve_version(settings: Settings, name: str, version: str) -> dict:
    """Make every vLLM serve a stored version (e.g. a rollback), verified against its record, and make it
    the one a bare `name` resolves to."""
    store = open_store(settings=settings)
    adapters.read_metadata(store, name, version)  # an unknown name or version fails here, naming the versions
    served = [
        serve_on(settings.model_copy(update={"vllm_url": url}), store, name, version) for url in vllm_urls(settings)
    ]
    adapters.mark_served(store, name, version)
    return served[0]


def rollback(settings: Settings, name: str, to: str | None = None) -> tuple[str, dict]:
    """Serve an earlier version (default: the one before the served one); return it and its verification."""
    if to is None:
        store = open_store(settings=settings)
        current = adapters.wanted(store, name)
        to = adapters.version_before(adapters.versions(store, name), current)
        if to is None:
            raise LoraloopError(f"adapter {name!r}: no version before {current or 'the served one'} to roll back to")
    return to, serve_version(settings, name, to)["verification"]


def served_version(settings: Settings, name: str) -> str | None:
    """The version a bare `name` resolves to (the store's served marker) when the vLLM at
    settings.vllm_url serves it, else None."""
    version = adapters.wanted(open_store(settings=settings), name)
    return version if version and adapters.served_name(name, version) in listed(settings) else None


def version_order(version: str) -> int:
    """A version's place among its name's versions, oldest first ('v3' -> 3; a name that is not a version, 0)."""
    return adapters.version_number(version) or 0


def loaded_versions(settings: Settings, name: str) -> list[str]:
    """The versions of `name` the vLLM at settings.vllm_url serves now, oldest first."""
    found = [parsed[1] for parsed in map(adapters.parse_served, listed(settings)) if parsed and parsed[0] == name]
    return sorted(found, key=version_order)


def retire(settings: Settings, name: str, keep: int) -> list[str]:
    """Unload every version of `name` but the newest `keep` (and the one a bare name resolves to) from every
    vLLM in PUBLISH_VLLM_URLS; return the served names unloaded.

    Call it when no request in flight uses them (the RL loop: after a rollout job has finished), since a
    request naming an unloaded version fails."""
    if keep < 1:
        raise ConfigError(f"retire {name!r}: keep must be at least 1, got {keep}")
    current = adapters.wanted(open_store(settings=settings), name)
    retired: set[str] = set()  # versions unloaded somewhere
    for url in vllm_urls(settings):
        server = settings.model_copy(update={"vllm_url": url})
        loaded = loaded_versions(server, name)
        for version in loaded[:-keep]:
            if version != current and unload_adapter(server, adapters.served_name(name, version)):
                retired.add(version)
    return [adapters.served_name(name, version) for version in sorted(retired, key=version_order)]


def _seen_by_vllm(settings: Settings, name: str, version: str, local: Path) -> str:
    return (
        f"{settings.vllm_adapters_dir.rstrip('/')}/{name}/{version}"
        if settings.vllm_adapters_dir
        else str(local.resolve())
    )


def publish(settings: Settings, adapter_dir: Path, name: str, *, load: bool = True) -> dict:
    """Store the adapter as the next version vK of `name`, load it into every vLLM as `<name>-vK`, verify,
    mark it the version a bare `name` resolves to, and return its metadata (with `served_name`)."""
    adapter_config = adapters.check_adapter_dir(adapter_dir)
    rank = adapter_config.get("r", 0)
    if rank > settings.max_lora_rank:
        raise ConfigError(f"{adapter_dir}: LoRA rank {rank} exceeds vLLM's --max-lora-rank {settings.max_lora_rank}")
    trainer = read_trainer_logprobs(adapter_dir)  # None: not saved by loraloop's trainers (base check only)
    metrics_file = adapter_dir / "training_metrics.json"
    metrics = json.loads(metrics_file.read_text()) if metrics_file.is_file() else {}
    weights = (adapter_dir / "adapter_model.safetensors").read_bytes()
    metadata = {
        "base_model": adapter_config.get("base_model_name_or_path"),
        "lora_r": rank,
        "dataset": metrics.get("dataset_path"),
        "dataset_digest": metrics.get("dataset_digest"),
        "training_metrics": metrics,
        "weights_sha256": hashlib.sha256(weights).hexdigest(),
        "published_at": time.time(),
    }
    store = open_store(settings=settings)
    clock = time.perf_counter()
    timings: dict[str, float] = {}

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = round(timings.get(stage, 0.0) + now - clock, 3)
        clock = now

    version = adapters.upload(store, name, adapter_dir, metadata)
    lap("upload")
    served = adapters.served_name(name, version)
    metadata.update(name=name, version=version, store_key=adapters.version_key(name, version), served_name=served)
    if load:
        local = adapters.download(store, name, version, Path(settings.adapters_dir))
        prompts = trainer["prompts"] if trainer else verification_prompts(metrics.get("dataset_path"))
        lap("download")
        checks: list[dict] = []  # each server's verification, the first the one the others must match
        loaded: list[Settings] = []
        try:
            for url in vllm_urls(settings):  # every server: a replica still on the old adapter is caught too
                server = settings.model_copy(update={"vllm_url": url})
                load_adapter(server, served, _seen_by_vllm(server, name, version, local))
                loaded.append(server)
                lap("load")
                check = verify_served(server, served, prompts, checks[0] if checks else None)
                if trainer:  # the weights the trainer had in memory, not just some weights that are not the base
                    check["trainer"] = {
                        **against_trainer(check["fingerprint"], trainer["logprobs"], settings.publish_max_logprob_diff),
                        "dtype": trainer.get("dtype"),
                    }
                checks.append({"url": url, **check})
                lap("verify")
        except PublishVerificationError:
            for server in loaded:  # a refused version serves no request; it stays in the store, unmarked, to inspect
                unload_adapter(server, served)
            raise
        metadata["verification"] = {**checks[0], "servers": [c["url"] for c in checks]}
        metadata["publish_s"] = timings  # where a publish's time went: upload, download, load, verify
        adapters.write_metadata(store, name, version, metadata)  # with the fingerprint a rollback must reproduce
        adapters.mark_served(store, name, version)
    return metadata


def vllm_urls(settings: Settings) -> list[str]:
    """The vLLM servers a publish or rollback must update (LORALOOP_PUBLISH_VLLM_URLS, else the one)."""
    return [u.strip() for u in settings.publish_vllm_urls.split(",") if u.strip()] or [settings.vllm_url]
