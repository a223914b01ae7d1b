"""Grades shop-9: the highest-rated and the cheapest book, one each, overnight.

Run as `python eval_shop_9.py STATE.json` on the `/finish` document; prints SUCCESS or FAILURE.
"""
import json
import sys

WANT_ITEMS = {'p17': 1, 'p20': 1}
WANT_SPEED = 'overnight'
WANT_SHIPPING = {}
WANT_TOTAL = None


def new_orders(state):
    return list(state.get("differences", {}).get("orders", {}).get("added", {}).values())


def check(state):
    orders = new_orders(state)
    if len(orders) != 1:
        return f"expected one new order, found {len(orders)}"
    order = orders[0]
    items = {item.get("id"): item.get("quantity") for item in order.get("items", [])}
    if items != WANT_ITEMS:
        return f"order holds {items}, expected {WANT_ITEMS}"
    if order.get("speed") != WANT_SPEED:
        return f"shipping speed is {order.get('speed')}, expected {WANT_SPEED}"
    shipping = order.get("shipping", {})
    for field, value in WANT_SHIPPING.items():
        if str(shipping.get(field, "")).strip().lower() != value.lower():
            return f"shipping {field} is {shipping.get(field)!r}, expected {value!r}"
    if WANT_TOTAL is not None and abs(float(order.get("total", 0)) - WANT_TOTAL) > 0.005:
        return f"total is {order.get('total')}, expected {WANT_TOTAL}"
    return None


def main():
    with open(sys.argv[1], encoding="utf-8") as handle:
        problem = check(json.load(handle))
    print("FAILURE: " + problem if problem else "SUCCESS")


if __name__ == "__main__":
    main()
