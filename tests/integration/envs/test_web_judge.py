"""REAL's llm_boolean criterion asks a real judge: the tests' vLLM serving SmolLM2."""

from loraloop.envs.web.evaluate import Judge, grade
from loraloop.tasks.web.format import parse_web_task
from tests.helpers import REAL_TASK as GOOD


def test_llm_boolean_asks_a_real_judge(vllm_url):
    """SmolLM2 is a weak judge: the test checks the call and REAL's parsing, not the model's taste."""
    task = parse_web_task({**GOOD, "evals": [{"type": "llm_boolean", "rubric": "The answer is 42"}]}, file="t")
    result = grade(task, {}, "The answer is 42.", Judge(vllm_url, "SmolLM2-135M-Instruct"))
    outcome = result.results[0]
    assert outcome["judge_output"]  # the model answered
    if "similarity" in outcome:
        assert outcome["passed"] == (outcome["similarity"] > 0.8)
    else:
        assert outcome["passed"] is False and "not a number" in outcome["error"]
