"""Grades shop-20: the USB desk lamp with the fastest shipping (overnight, $48.98 in all).

Run as `python eval_shop_20.py STATE.json` on the `/finish` document; prints SUCCESS or FAILURE.
"""

from _shop_order import run

run(items={"p32": 1}, speed="overnight", total=48.98)
