"""Grades shop-4: 2 yoga mats and 1 water bottle in one order, express.

Run as `python eval_shop_4.py STATE.json` on the `/finish` document; prints SUCCESS or FAILURE.
"""

from _shop_order import run

run(items={"p21": 2, "p23": 1}, speed="express")
