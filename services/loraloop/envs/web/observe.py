"""What the agent sees of a page: bids marked in the DOM and the accessibility tree in BrowserGym's text form.

Every element gets a `bid` attribute (kept across steps, new elements get new ones). Chromium's
own accessibility tree (CDP `Accessibility.getFullAXTree`) is joined to the bids through the DOM's
backend node ids and flattened one node a line, tab-indented: `[bid] role 'name', prop=value`.
"""

from __future__ import annotations

from typing import Any

# Marks elements lacking a bid; returns how many elements the page has.
MARK_JS = """() => {
  let next = window.__loraloopBid || 0;
  const all = document.querySelectorAll('*');
  for (const el of all) {
    if (!el.hasAttribute('bid')) { el.setAttribute('bid', String(next++)); }
  }
  window.__loraloopBid = next;
  return all.length;
}"""

SKIPPED_ROLES = {"none", "LineBreak", "InlineTextBox", "ListMarker"}
SHOWN_PROPERTIES = (
    "focused",
    "expanded",
    "selected",
    "checked",
    "pressed",
    "disabled",
    "required",
    "readonly",
    "level",
    "valuemin",
    "valuemax",
    "multiselectable",
    "invalid",
    "hasPopup",
)


def _value(field: dict | None) -> Any:
    return (field or {}).get("value")


def _bids(node: dict, out: dict[int, str]) -> None:
    """Walk CDP's DOM tree (iteratively; pages can be deep) collecting backendNodeId -> bid."""
    stack = [node]
    while stack:
        current = stack.pop()
        attrs = current.get("attributes") or []
        for i in range(0, len(attrs) - 1, 2):
            if attrs[i] == "bid":
                out[current["backendNodeId"]] = attrs[i + 1]
                break
        stack.extend(current.get("children") or ())
        if current.get("contentDocument"):
            stack.append(current["contentDocument"])
        stack.extend(current.get("shadowRoots") or ())


def _line(node: dict, bid: str | None, text_bid: str | None = None) -> str | None:
    role = _value(node.get("role")) or ""
    name = str(_value(node.get("name")) or "").strip()
    if node.get("ignored") or role in SKIPPED_ROLES:
        return None
    if role in ("generic", "group", "paragraph", "Section", "LabelText") and not name:
        return None
    props = []
    value = _value(node.get("value"))
    if value not in (None, "") and role not in ("StaticText",):
        props.append(f"value={str(value)!r}")
    for prop in node.get("properties") or ():
        pname = prop.get("name")
        pvalue = _value(prop.get("value"))
        if pname not in SHOWN_PROPERTIES or pvalue in (None, False, "false", ""):
            continue
        props.append(
            pname if pvalue is True else f"{pname}={pvalue!r}" if isinstance(pvalue, str) else f"{pname}={pvalue}"
        )
    if role == "StaticText":
        bid = text_bid
    head = f"[{bid}] {role} {name!r}" if bid is not None else f"{role} {name!r}"
    return head + (", " + ", ".join(props) if props else "")


def flatten_axtree(
    ax_nodes: list[dict], bids: dict[int, str], max_chars: int | None = None, text_bids: bool = False
) -> str:
    """BrowserGym's text form of the AX tree; a StaticText that is empty or part of the name of the element it is
    shown under is dropped. BrowserGym's `flatten_axtree_to_str` compares with the node right above, which is an
    unnamed span in a link such as a mail's row, so its texts come twice; here it is the nearest line shown, but
    never the page itself: its title is not the page's text (text-transform's captcha letters are in its title).

    With `text_bids`, a StaticText whose element is not shown (an unnamed span or div: a `generic` node) carries
    that element's bid, `[12] StaticText 'Carlynne'`: MiniWoB's clickable spans and divs have a bid in the DOM but
    reach the AX tree only as their text, so an agent reading the tree could not click them otherwise.
    """
    by_id = {n["nodeId"]: n for n in ax_nodes}
    roots = [n for n in ax_nodes if not n.get("parentId") or n["parentId"] not in by_id]
    lines: list[str] = []
    used = 0
    stack: list[tuple[dict, int, str, str | None]] = [(r, 0, "", None) for r in reversed(roots)]
    while stack:
        node, depth, parent_name, hidden_bid = stack.pop()
        bid = bids.get(node.get("backendDOMNodeId", -1))  # -1: no DOM node, no bid
        line = _line(node, bid, hidden_bid if text_bids else None)
        name = str(_value(node.get("name")) or "").strip()
        role = _value(node.get("role"))
        if line is not None and role == "StaticText" and name in parent_name:
            line = None
        if line is not None:
            text = "\t" * depth + line
            used += len(text) + 1
            if max_chars is not None and used > max_chars:
                lines.append("\t" * depth + "... (tree truncated)")
                break
            lines.append(text)
        child_depth = depth + (line is not None)
        child_parent = name if line is not None and role != "RootWebArea" else parent_name
        child_hidden = None if line is not None else (bid if bid is not None else hidden_bid)
        for child in reversed(node.get("childIds") or ()):
            if child in by_id:
                stack.append((by_id[child], child_depth, child_parent, child_hidden))
    return "\n".join(lines)


async def accessibility_text(page, cdp, max_chars: int | None = None, text_bids: bool = False) -> str:
    """Mark new elements with bids and return the page's flattened accessibility tree (`text_bids`: see
    flatten_axtree)."""
    await page.evaluate(MARK_JS)
    dom = await cdp.send("DOM.getDocument", {"depth": -1, "pierce": True})
    ax = await cdp.send("Accessibility.getFullAXTree")
    bids: dict[int, str] = {}
    _bids(dom["root"], bids)
    return flatten_axtree(ax["nodes"], bids, max_chars, text_bids)
