"""Grades shop-23: a board game and a puzzle to Sam Rivera in San Diego, express.

Run as `python eval_shop_23.py STATE.json` on the `/finish` document; prints SUCCESS or FAILURE.
"""

from _shop_order import run

run(
    items={"p28": 1, "p27": 1},
    speed="express",
    shipping={"fullName": "Sam Rivera", "street": "9 Ocean Ave", "city": "San Diego", "zip": "92101"},
)
