"""The scripted MiniWoB++ solver's multi-page strategies (envs/browsergym/teacher_navigation.py) on AX trees as
the browsergym kind shows them (copied from real pages); tests/integration/envs plays them in Chromium."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loraloop.envs.browsergym.teacher import SOLVED, solve
from loraloop.envs.browsergym.teacher_navigation import FORWARD_TEMPLATES

NEW_TYPES = {
    "multi-orderings",
    "multi-layouts",
    "login-user-popup",
    "read-table-2",
    "choose-date-easy",
    "click-menu",
    "guess-number",
    "phone-book",
    "email-inbox-forward-nl",
    "social-media-some",
}


def tree(*lines: str) -> str:
    """An observation holding these AX tree lines."""
    return "# Accessibility tree\nRootWebArea 'Task', focused\n" + "\n".join("\t" + line for line in lines)


def test_the_new_types_are_solved_types():
    assert NEW_TYPES <= set(SOLVED)


MOVIES = "Search for urban movies directed by Bennett from year 2002."


def test_a_form_is_filled_by_its_labels_whatever_their_order_and_words():
    layout = tree(
        "[13] StaticText 'Director Name'",
        "[15] textbox ''",
        "[17] StaticText 'Released Date'",
        "[19] textbox ''",
        "[21] StaticText 'Movie Genre'",
        "[23] textbox ''",
        "[25] button 'Go!'",
    )
    assert solve("multi-layouts", MOVIES, layout, 0, []) == "fill('15', 'Bennett')"
    assert solve("multi-layouts", MOVIES, layout, 1, ["fill('15', 'Bennett')"]) == "fill('19', '2002')"
    done = layout.replace("[15] textbox ''", "[15] textbox '', value='Bennett'")
    done = done.replace("[19] textbox ''", "[19] textbox '', value='2002'")
    done = done.replace("[23] textbox ''", "[23] textbox '', value='urban'")
    assert solve("multi-layouts", MOVIES, done, 3, []) == "click('25')"
    table = tree(
        "[16] rowheader 'Genre'",
        "[18] textbox ''",
        "[20] rowheader 'Director'",
        "[22] textbox ''",
        "[24] rowheader 'Year'",
        "[26] textbox ''",
        "[27] StaticText 'Submit'",
    )
    assert solve("multi-orderings", MOVIES, table, 0, []) == "fill('18', 'urban')"
    missing = tree("[16] rowheader 'Genre'", "[18] textbox ''", "[27] StaticText 'Submit'")
    assert solve("multi-orderings", MOVIES, missing, 0, []).startswith("report_infeasible(")


def test_a_login_popup_is_cancelled_and_a_lost_fill_is_sent_again():
    goal = 'Enter the username "juan" and the password "Jc" into the text fields and press login.'
    form = tree("[16] textbox ''", "[19] textbox ''", "[20] button 'OK'")
    popup = form + "\n\t[25] button 'OK'\n\t[26] button 'Cancel'"
    assert solve("login-user-popup", goal, popup, 1, ["fill('16', 'juan')"]) == "click('26')"
    # the popup disabled the form: the user name never arrived, so it is filled again
    assert solve("login-user-popup", goal, form, 2, ["fill('16', 'juan')", "click('26')"]) == "fill('16', 'juan')"
    filled = form.replace("[16] textbox ''", "[16] textbox '', value='juan'")
    assert solve("login-user-popup", goal, filled, 3, []) == "fill('19', 'Jc')"
    both = filled.replace("[19] textbox ''", "[19] textbox '', value='••'")
    assert solve("login-user-popup", goal, both, 4, []) == "click('20')"


def test_each_label_gets_the_tables_value():
    page = tree(
        "[16] cell 'Color'",
        "[17] cell 'black'",
        "[19] cell 'Year of Birth'",
        "[20] cell '1945'",
        "[32] StaticText 'Year of Birth:'",
        "[33] textbox ''",
        "[35] StaticText 'Color:'",
        "[36] textbox ''",
        "[37] button 'Submit'",
    )
    assert solve("read-table-2", "", page, 0, []) == "fill('33', '1945')"
    assert solve("read-table-2", "", page, 1, ["fill('33', '1945')"]) == "fill('36', 'black')"


DATE_GOAL = "Select 02/07/2017 as the date and hit submit."


def test_the_date_picker_is_opened_moved_to_the_month_and_the_day_clicked():
    closed = tree("[16] StaticText 'Date:'", "[17] textbox '', readonly", "[19] button 'Submit'")
    assert solve("choose-date-easy", DATE_GOAL, closed, 0, []) == "click('17')"
    opened = closed + "\n\t[23] StaticText 'Prev'\n\t[25] StaticText 'Next'\n\t[26] StaticText 'December'"
    opened += "\n\t[26] StaticText '2016'\n\t[60] link '7'"
    assert solve("choose-date-easy", DATE_GOAL, opened, 1, ["click('17')"]) == "click('25')"  # forward
    later = opened.replace("'December'", "'March'").replace("'2016'", "'2017'")
    assert solve("choose-date-easy", DATE_GOAL, later, 2, []) == "click('23')"  # back
    there = opened.replace("'December'", "'February'").replace("'2016'", "'2017'")
    assert solve("choose-date-easy", DATE_GOAL, there, 3, []) == "click('60')"
    picked = closed.replace("readonly", "readonly, value='02/07/2017'")
    assert solve("choose-date-easy", DATE_GOAL, picked, 4, []) == "click('19')"


MENU = tree(
    "[17] menu ''",
    "\t[19] menuitem 'Amandi', hasPopup='menu'",
    "\t[23] menu ''",
    "\t\t[25] menuitem 'Olga', hasPopup='menu'",
    "\t\t[27] menu ''",
    "\t\t\t[29] menuitem 'Ashlee'",
    "\t[45] menuitem 'Olga'",
)


def test_a_menu_path_is_hovered_then_its_last_item_clicked():
    top = "\n".join(line for line in MENU.splitlines() if "\t\t" not in line[1:])
    assert solve("click-menu", "Select Amandi>Olga>Ashlee", top, 0, []) == "hover('19')"
    assert solve("click-menu", "Select Amandi>Olga>Ashlee", top, 1, ["hover('19')"]) == "noop(500)"
    assert solve("click-menu", "Select Amandi>Olga>Ashlee", MENU, 2, ["hover('19')", "noop(500)"]) == "click('29')"
    # a top-level item is clicked at once; the Olga inside Amandi is not the top-level one
    assert solve("click-menu", "Select Olga", MENU, 0, []) == "click('45')"
    assert solve("click-menu", "Select Amandi>Olga", MENU, 0, []) == "click('25')"
    # no submenu after the wait: no way on (a click on a menu would end the episode)
    assert solve("click-menu", "Select Amandi>Olga", top, 2, ["hover('19')", "noop(500)"]).startswith(
        "report_infeasible("
    )


@given(st.integers(0, 9))
def test_the_number_is_found_within_four_guesses_whatever_it_is(number):
    box = "[21] spinbutton ''\n\t[22] button 'Submit'"
    feedback, history = "Waiting for your guess...", []
    for _ in range(4):
        page = tree(f"[16] StaticText '{feedback}'", box)
        guess = solve("guess-number", "", page, len(history), history)
        history += [guess, solve("guess-number", "", page, len(history) + 1, history + [guess])]
        assert history[-1] == "click('22')"
        value = int(guess.split("'")[3])
        if value == number:
            return
        feedback = f"The number is {'lower' if number < value else 'higher'} than {value}."
    raise AssertionError(f"{number} not found: {history}")


def test_the_contact_is_paged_to_then_its_field_clicked():
    goal = "Find Ella in the contact book and click on their email."
    other = tree("[16] heading 'Lauree', level=2", "[21] StaticText 'Email:'", "[24] link 'l@aol.eu'", "[37] link '>'")
    assert solve("phone-book", goal, other, 0, []) == "click('37')"
    ella = tree(
        "[41] heading 'Ella', level=2",
        "[42] StaticText 'Phone:'",
        "[45] link '513-644-8868'",
        "[46] StaticText 'Email:'",
        "[49] link 'ella@aol.rocks'",
    )
    assert solve("phone-book", goal, ella, 1, ["click('37')"]) == "click('49')"


NAMES = st.from_regex(r"[A-Z][a-z]{1,9}", fullmatch=True)


@given(NAMES, NAMES, st.sampled_from(FORWARD_TEMPLATES))
def test_every_forward_template_gives_back_its_sender_and_recipient(name, dest, template):
    goal = template.pattern[1:-1].replace(r"(?P<name>\S+?)", name).replace(r"(?P<dest>\S+?)", dest).replace("\\", "")
    found = template.match(goal)
    assert found and (found["name"], found["dest"]) == (name, dest)


def test_the_forward_opens_the_senders_email():
    inbox = tree("[20] StaticText 'Hazel'", "[30] StaticText 'Roslyn'", "[40] StaticText 'Margaretta'")
    goal = "Please forward the information from Margaretta to Roslyn."
    assert solve("email-inbox-forward-nl", goal, inbox, 0, []) == "click('40')"
    assert solve("email-inbox-forward-nl", "Forward it.", inbox, 0, []).startswith("report_infeasible(")


def test_the_button_is_clicked_on_the_first_n_posts_of_the_user_then_submit():
    goal = 'Click the "Like" button on 1 post by @kasie and then click Submit.'
    post = "[{0}] StaticText '@{1}'\n\t[{2}] image ''\n\t[{3}] image ''\n\t[{4}] image ''\n\t[{5}] image ''"
    page = tree(
        post.format(10, "jess", 11, 12, 13, 14),
        post.format(20, "kasie", 21, 22, 23, 24),
        post.format(30, "kasie", 31, 32, 33, 34),
        "[40] button 'Submit'",
    )
    assert solve("social-media-some", goal, page, 0, []) == "click('23')"
    assert solve("social-media-some", goal, page, 1, ["click('23')"]) == "click('40')"
