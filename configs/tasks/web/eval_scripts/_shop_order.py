"""What the shop's order scripts share: one new order with these items, speed, address and total.

The scripts beside this file run as `python eval_shop_<n>.py STATE.json` (REAL's way); Python puts
their folder on the import path, so they import this module.
"""

import json
import sys


def new_orders(state):
    """The orders placed during the run (REAL's `differences.<collection>.added`)."""
    return list(state.get("differences", {}).get("orders", {}).get("added", {}).values())


def problem(state, items, speed, shipping=None, total=None):
    """Why the state fails the order check, or None when it passes."""
    orders = new_orders(state)
    if len(orders) != 1:
        return f"expected one new order, found {len(orders)}"
    order = orders[0]
    found = {item.get("id"): item.get("quantity") for item in order.get("items", [])}
    if found != items:
        return f"order holds {found}, expected {items}"
    if order.get("speed") != speed:
        return f"shipping speed is {order.get('speed')}, expected {speed}"
    address = order.get("shipping", {})
    for field, value in (shipping or {}).items():
        if str(address.get(field, "")).strip().lower() != value.lower():
            return f"shipping {field} is {address.get(field)!r}, expected {value!r}"
    if total is not None and abs(float(order.get("total", 0)) - total) > 0.005:
        return f"total is {order.get('total')}, expected {total}"
    return None


def run(**want):
    """Read STATE.json from argv and print SUCCESS, or FAILURE with the reason."""
    with open(sys.argv[1], encoding="utf-8") as handle:
        found = problem(json.load(handle), **want)
    print("FAILURE: " + found if found else "SUCCESS")
