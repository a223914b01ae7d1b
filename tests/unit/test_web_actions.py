"""BrowserGym's action strings as the web environment parses them: every form, and errors that name the fault."""

import pytest

from loraloop.envs.web.actions import ActionError, parse_action


def test_parse_action_forms_and_errors():
    assert parse_action("Think: type it.\nAction: fill('12', 'a) b')").args == {"bid": "12", "value": "a) b"}
    assert parse_action("```python\nclick(\"7\", button='right')\n```").args["button"] == "right"
    assert parse_action("I will now send_msg_to_user('done') thanks").name == "send_msg_to_user"
    assert parse_action("noop()").args == {"wait_ms": 1000}
    assert parse_action("click(12)").args["bid"] == "12"
    assert parse_action("select_option('3', ['a', 'b'])").text() == "select_option('3', ['a', 'b'])"
    for text, message in [
        ("Action: frobnicate(1)", "unknown action 'frobnicate'"),
        ("click()", "needs argument 'bid'"),
        ("click('1', colour='red')", "no parameter 'colour'"),
        ("fill('1', open('/etc/passwd').read())", "must be literals"),
        ("", "empty output"),
        ("I am thinking.", "no action found"),
    ]:
        with pytest.raises(ActionError, match=message.replace("(", r"\(")):
            parse_action(text)
