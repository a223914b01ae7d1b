"""Macros, the cache's rules and progress scores on the live bundled sites in Chromium, through EpisodeSession.

One purchase on Shopzon and one email on Quickmail, each played with macros only (plus the final answer); the
sites grade the outcome, the store keeps every primitive step with its macro and progress, and a session saved and
resumed half-way goes on with the same progress.
"""

from loraloop.agents.macros import parse_macro
from loraloop.agents.vac import MemoryActionCache, action_worked, state_key
from loraloop.envs.web.env import WebEnv
from loraloop.envs.web.teacher import ScriptedWebTeacher
from loraloop.kinds.registry import env_kind
from loraloop.rollout.session import EpisodeSession
from loraloop.store import open_store
from loraloop.store.records import NO_HALO, HaloStep, Provenance
from loraloop.store.trajectories import iter_episodes
from loraloop.task_registry import load_registry

TASKS = {t.id: t for t in load_registry("configs/tasks/web").tasks}
WEB = env_kind("web")


def halo(step):
    """The step's HALO part, empty where it has none."""
    return step.halo or NO_HALO


def play_macro(session: EpisodeSession, call: str, cache: MemoryActionCache) -> int:
    """Take every primitive action of a macro, verifying each in the cache as HALO's orchestrator does."""
    macro = parse_macro(f"Action: {call}", WEB)
    taken = 0
    while (action := macro.next_action(session.observation)) is not None:
        before = session.observation
        result = session.act(action, source="macro", halo=HaloStep(macro=macro.call))
        assert action_worked(WEB, result.info, before, result.observation), (action, result.info)
        cache.verified(state_key(WEB, session.task.id, before), action)
        taken += 1
    return taken


def test_macros_buy_and_send_on_the_live_sites_with_progress_recorded(sites_url, settings_for, tmp_path):
    settings = settings_for(sites_url=sites_url)
    store = open_store(settings=settings)
    cache = MemoryActionCache()
    shop = TASKS["shop-2"]  # Buy 3 packs of the 12-pack Gel Pens with standard shipping
    env = WebEnv(shop, settings)
    try:
        session = EpisodeSession(
            store, env, shop, mode="skills", run_id="live", attempt=0, provenance=Provenance(use_macros=True)
        )
        session.start()
        assert play_macro(session, "search_and_open(query='gel pens')", cache) == 3
        halfway = session.progress.score
        assert halfway == 0.4  # found the product and opened it
        session = EpisodeSession.resume(store, env, shop, session.snapshot())  # another process would go on so
        assert session.progress.score == halfway and session.steps == 3
        assert play_macro(session, "add_to_cart_and_checkout(quantity=3, shipping='Standard')", cache) == 4
        session.act("Think: bought.\nAction: send_msg_to_user('Done.')", source="worker")
        assert session.done and session.outcome.success  # the site's own grading: the order is right
        assert session.finish()
    finally:
        env.close()

    env = WebEnv(shop, settings)  # a second attempt replays the purchase from the cache alone
    try:
        session = EpisodeSession(
            store, env, shop, mode="skills", run_id="live", attempt=1, provenance=Provenance(use_cache=True)
        )
        session.start()
        events, taken = [], []
        while True:
            found = cache.lookup(
                state_key(WEB, shop.id, session.observation),
                kind=WEB,
                observation=session.observation,
                recent_actions=taken[-1:],
            )
            events.append(found.event)
            if found.action is None:
                break
            taken.append(found.action)
            session.act(found.action, source="cache", halo=HaloStep(cache_hit=True, cache_event="hit"))
        assert events == ["hit"] * 7 + ["miss"]  # the answer was never cached: the worker would take over here
        assert session.progress.score == 1.0 and session.observation.count("Placed on") == 1
        session.finish("cancelled")
    finally:
        env.close()

    mail = TASKS["mail-22"]
    env = WebEnv(mail, settings)
    try:
        session = EpisodeSession(
            store, env, mail, mode="skills", run_id="live", attempt=0, provenance=Provenance(use_macros=True)
        )
        session.start()
        session.act(ScriptedWebTeacher(mail, env.origin, page=lambda: env.observation).act([]).text, source="worker")
        assert (
            play_macro(
                session,
                "fill_form({'To': 'marcus.lee@northwind.com, priya.shah@northwind.com', "
                "'Subject': 'Team lunch', 'Body': 'Lunch on Friday at noon?'}, submit='Send')",
                cache,
            )
            == 4
        )
        session.act("Action: send_msg_to_user('Sent.')", source="worker")
        assert session.outcome.success and session.finish()
    finally:
        env.close()

    episodes = {(e.start.task_id, e.start.attempt_idx): e for e in iter_episodes(store, "trajectories/skills/live/")}
    bought = episodes[shop.index, 0]
    assert [halo(s).macro for s in bought.steps] == ["search_and_open(query='gel pens')"] * 3 + [
        "add_to_cart_and_checkout(quantity=3, shipping='Standard')"
    ] * 4 + [None]  # Standard was checked already
    assert [s.action_source for s in bought.steps] == ["macro"] * 7 + ["worker"]
    scores = [s.progress_score for s in bought.steps]
    assert scores == sorted(scores) and scores[0] < 0.5 < scores[-1] == 1.0
    assert bought.end.max_progress_score == bought.end.final_progress_score == 1.0
    sent = episodes[mail.index, 0]
    replayed = episodes[shop.index, 1]
    assert [s.action_source for s in replayed.steps] == ["cache"] * 7 and replayed.end.max_progress_score == 1.0
    assert [s.progress_score for s in sent.steps] == [0.333, 0.667, 0.667, 0.667, 1.0, 1.0]
    # every primitive step verified one state's action; none of the two episodes' states repeats
    assert len(cache.entries) == 11
