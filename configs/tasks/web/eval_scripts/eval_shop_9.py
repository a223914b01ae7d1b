"""Grades shop-9: the highest-rated and the cheapest book, one each, overnight.

Run as `python eval_shop_9.py STATE.json` on the `/finish` document; prints SUCCESS or FAILURE.
"""

from _shop_order import run

run(items={"p17": 1, "p20": 1}, speed="overnight")
