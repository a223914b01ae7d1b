"""Grades shop-14: 2 chef's knives and a frying pan, overnight, to 77 Elm Street.

Run as `python eval_shop_14.py STATE.json` on the `/finish` document; prints SUCCESS or FAILURE.
"""

from _shop_order import run

run(
    items={"p14": 2, "p13": 1},
    speed="overnight",
    shipping={
        "fullName": "Alex Morgan",
        "street": "77 Elm Street",
        "city": "Portland",
        "zip": "97205",
        "country": "United States",
    },
)
