"""Macros expand into the env's primitive actions on real pages of the bundled sites; bad calls name the argument."""

import pytest

from loraloop.agents.macros import MacroError, macro_help, parse_macro
from loraloop.envs.shell.protocol import EMPTY_OUTPUT, format_output
from loraloop.envs.shell.protocol import parse_action as parse_shell
from loraloop.envs.web.actions import parse_action
from loraloop.kinds.registry import env_kind
from tests.unit.test_vac import pages

WEB, SHELL, TAU2 = env_kind("web"), env_kind("shell"), env_kind("tau2")

SHOP = pages("shop-2")  # home, search filled, results, product, quantity set, cart, checkout, radio checked, order
MAIL_SEARCH = pages("mail-19")  # inbox, search filled, results, the statement
COMPOSE = pages("mail-9")[2]  # the forward form: To, Subject, Body, Send


def expand(call: str, kind: str, observations: list[str]) -> list[str]:
    """The primitive actions a macro takes when the env answers each with the next observation in turn."""
    macro = parse_macro(call, env_kind(kind))
    taken = []
    for observation in observations:
        action = macro.next_action(observation)
        if action is None:
            break
        taken.append(action)
    assert macro.done
    return taken


def web(actions: list[str]) -> list[str]:
    return [parse_action(a).text() for a in actions]


def test_search_and_open_fills_the_search_box_submits_and_opens_the_first_result():
    taken = expand("Think: find it.\nAction: search_and_open(query='gel pens')", "web", SHOP[:4])
    assert web(taken) == ["fill('11', 'gel pens')", "click('12')", "click('31')"]  # 'Gel Pens, 12 Pack'
    mail = expand("search_and_open('statement')", "web", MAIL_SEARCH[:4])
    assert web(mail) == ["fill('11', 'statement')", "click('12')", "click('45')"]  # not a label in the side bar


def test_fill_form_fills_by_label_and_submits():
    macro = parse_macro("fill_form({'To': 'sofia.garcia@example.com', 'subject': 'Fwd: trip'}, submit='Send')", WEB)
    assert web([macro.next_action(COMPOSE) for _ in range(3)]) == [
        "fill('26', 'sofia.garcia@example.com')",
        "fill('28', 'Fwd: trip')",
        "click('32')",
    ]
    checkout = SHOP[6]
    assert web(expand("fill_form({'City': 'Seattle', 'Express': True})", "web", [checkout] * 3)) == [
        "fill('30', 'Seattle')",
        "check('41')",
    ]
    # 'Standard' is checked already: checking it again would change nothing, so the macro leaves it
    assert web(expand("fill_form({'Standard': True, 'ZIP code': '98101'})", "web", [checkout] * 2)) == [
        "fill('32', '98101')"
    ]


def test_add_to_cart_and_checkout_from_a_product_page():
    product, cart, checkout, placed = SHOP[3], SHOP[5], SHOP[6], SHOP[8]
    taken = expand(
        "add_to_cart_and_checkout(quantity=3, shipping='Overnight')",
        "web",
        [product, product, cart, checkout, checkout, placed],
    )
    assert web(taken) == ["select_option('27', '3')", "click('39')", "click('54')", "check('45')", "click('50')"]
    assert web(expand("add_to_cart_and_checkout(shipping='standard')", "web", [product, cart, checkout, placed])) == [
        "click('39')",
        "click('54')",
        "click('50')",
    ]  # the standard speed is checked already


def test_shell_macros_write_the_text_protocol():
    macro = parse_macro("Act: inspect_then_answer(path='/etc/my conf')", SHELL)
    first = parse_shell(macro.next_action("Task: what is in /etc/my conf?"))
    assert first.kind == "bash" and first.content == (
        "if [ -d '/etc/my conf' ]; then ls -A '/etc/my conf'; else cat '/etc/my conf'; fi"
    )
    answer = parse_shell(macro.next_action(format_output("alpha\nbeta\n")))
    assert (answer.kind, answer.content) == ("answer", "alpha beta")
    assert macro.next_action(format_output("")) is None and macro.done
    count = parse_macro("find_and_count(directory='/var/log', pattern='*.log')", SHELL)
    assert parse_shell(count.next_action("Task: count")).content == "find /var/log -type f -name '*.log' | wc -l"
    assert parse_shell(count.next_action(format_output("7\n"))).content == "7"
    empty = parse_macro("inspect_then_answer('/tmp/empty')", SHELL)
    empty.next_action("Task")
    assert parse_shell(empty.next_action(EMPTY_OUTPUT)).content == ""


@pytest.mark.parametrize(
    "call, named",
    [
        ("search_and_open()", "needs argument 'query'"),
        ("search_and_open(query='')", "argument 'query' must be a non-empty string"),
        ("search_and_open(q='x')", "no parameter 'q'"),
        ("fill_form(submit='Send')", "needs argument 'fields'"),
        ("fill_form(fields=['To'])", "argument 'fields' must be a non-empty dict"),
        ("fill_form({'To': ['a']})", "the value of field 'To'"),
        ("add_to_cart_and_checkout(quantity='two')", "argument 'quantity' must be a whole number"),
        ("search_and_open(query=user_input)", "arguments must be literals"),
        ("search_and_open(query='x'", "cannot read the call"),
    ],
)
def test_web_calls_with_missing_or_bad_arguments_name_the_argument(call, named):
    with pytest.raises(MacroError, match=named.replace("(", r"\(").replace("[", r"\[")):
        parse_macro(f"Action: {call}", WEB)


@pytest.mark.parametrize(
    "call, named",
    [
        ("find_and_count(directory='/etc')", "needs argument 'pattern'"),
        ("inspect_then_answer()", "needs argument 'path'"),
        ("find_and_count('/etc', 3)", "argument 'pattern' must be a non-empty string"),
    ],
)
def test_shell_calls_with_missing_or_bad_arguments_name_the_argument(call, named):
    with pytest.raises(MacroError, match=named):
        parse_macro(f"Act: {call}", SHELL)


def test_a_macro_that_cannot_go_on_says_why():
    cart = SHOP[5]
    with pytest.raises(
        MacroError,
        match=r"no 'Add to cart' button \(open a product first\) \(page http://"
        r"localhost:8090/shop/cart\)",
    ):
        parse_macro("add_to_cart_and_checkout()", WEB).next_action(cart)
    with pytest.raises(MacroError, match="no field 'Coupon' on the page.*fields: 'Search', 'Full name'"):
        parse_macro("fill_form({'Coupon': 'X'})", WEB).next_action(SHOP[6])
    macro = parse_macro("search_and_open('gel pens')", WEB)
    macro.next_action(SHOP[0])
    failed = SHOP[1].replace(
        "# Accessibility tree", "# Error from the last action\nno element with bid '11'\n\n# Accessibility tree"
    )
    with pytest.raises(MacroError, match="the last step failed: no element with bid '11'"):
        macro.next_action(failed)
    assert macro.done and macro.next_action(SHOP[1]) is None
    count = parse_macro("find_and_count('/nope', '*.txt')", SHELL)
    count.next_action("Task")
    with pytest.raises(MacroError, match="directory '/nope' does not exist"):
        count.next_action(format_output("find: '/nope': No such file or directory\n0"))


def test_replies_without_a_macro_and_kinds_without_macros():
    assert parse_macro("Think: x\nAction: click('12')", WEB) is None
    assert parse_macro("Act: bash\n```bash\nls\n```", SHELL) is None
    assert parse_macro("search_and_open('x')", TAU2) is None and macro_help(TAU2) == ""
    assert "search_and_open(query)" in macro_help(WEB) and "find_and_count(directory, pattern)" in macro_help(SHELL)
