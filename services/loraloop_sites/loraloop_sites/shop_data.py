"""Shopzon's catalogue and seed state: fixed data, so every run of every task starts the same."""

from __future__ import annotations

import copy

CATEGORIES = {
    "electronics": "Electronics",
    "home-kitchen": "Home & Kitchen",
    "books": "Books",
    "sports-outdoors": "Sports & Outdoors",
    "toys-games": "Toys & Games",
    "office": "Office Supplies",
}

# id, name, category, price, rating, reviews, description
_ROWS = [
    (
        "p1",
        "Anker USB-C to USB-C Cable, 6 ft",
        "electronics",
        12.99,
        4.7,
        8421,
        "Braided nylon USB-C cable with 100 W fast charging and 480 Mbps data transfer.",
    ),
    (
        "p2",
        "Basics USB-C to USB-A Cable, 3 ft",
        "electronics",
        7.49,
        4.5,
        15230,
        "A short USB-C to USB-A cable for charging phones and syncing data.",
    ),
    (
        "p3",
        "Braided USB-C Cable, 10 ft",
        "electronics",
        15.99,
        4.6,
        3310,
        "An extra-long braided USB-C cable that reaches from the wall to the couch.",
    ),
    (
        "p4",
        "Lightning to USB Cable, 3 ft",
        "electronics",
        9.99,
        4.3,
        6712,
        "MFi-certified Lightning cable for iPhone and iPad.",
    ),
    (
        "p5",
        "Wireless Noise-Cancelling Headphones",
        "electronics",
        199.99,
        4.6,
        5120,
        "Over-ear headphones with active noise cancelling and 30 hours of battery life.",
    ),
    (
        "p6",
        "Bluetooth Over-Ear Headphones",
        "electronics",
        59.99,
        4.2,
        2204,
        "Comfortable wireless headphones with deep bass and a built-in microphone.",
    ),
    (
        "p7",
        "Wireless Earbuds with Charging Case",
        "electronics",
        39.99,
        4.4,
        9876,
        "True wireless earbuds, IPX5 water resistant, 24 hours with the case.",
    ),
    (
        "p8",
        "27-inch 4K Monitor",
        "electronics",
        329.00,
        4.5,
        1432,
        "A 27-inch IPS monitor with 3840 x 2160 resolution and HDR10.",
    ),
    (
        "p9",
        "Mechanical Keyboard, Brown Switches",
        "electronics",
        89.99,
        4.7,
        2890,
        "Tenkeyless mechanical keyboard with tactile brown switches and white backlight.",
    ),
    (
        "p10",
        "Wireless Mouse",
        "electronics",
        24.99,
        4.4,
        12011,
        "A quiet wireless mouse with a 2.4 GHz receiver and 18 months of battery life.",
    ),
    (
        "p11",
        "Stainless Steel Electric Kettle",
        "home-kitchen",
        34.99,
        4.6,
        7345,
        "1.7 litre kettle that boils water in under five minutes, with auto shut-off.",
    ),
    (
        "p12",
        "Drip Coffee Maker, 12 Cup",
        "home-kitchen",
        49.99,
        4.3,
        4410,
        "Programmable drip coffee maker with a glass carafe and a keep-warm plate.",
    ),
    (
        "p13",
        "Non-Stick Frying Pan, 10 inch",
        "home-kitchen",
        27.50,
        4.4,
        3982,
        "A 10 inch non-stick frying pan, oven safe to 400 degrees.",
    ),
    (
        "p14",
        "Chef's Knife, 8 inch",
        "home-kitchen",
        44.00,
        4.8,
        2675,
        "High-carbon stainless steel chef's knife with an ergonomic handle.",
    ),
    (
        "p15",
        "Glass Food Storage Containers, Set of 10",
        "home-kitchen",
        32.99,
        4.5,
        5540,
        "Oven-safe glass containers with snap-lock lids.",
    ),
    (
        "p16",
        "The Pragmatic Programmer",
        "books",
        39.95,
        4.8,
        3120,
        "Your journey to mastery, 20th anniversary edition, by David Thomas and Andrew Hunt.",
    ),
    (
        "p17",
        "Designing Data-Intensive Applications",
        "books",
        44.99,
        4.9,
        4877,
        "The big ideas behind reliable, scalable and maintainable systems, by Martin Kleppmann.",
    ),
    (
        "p18",
        "Clean Code",
        "books",
        34.50,
        4.6,
        6230,
        "A handbook of agile software craftsmanship, by Robert C. Martin.",
    ),
    ("p19", "The Hobbit", "books", 10.99, 4.8, 21034, "J. R. R. Tolkien's classic fantasy novel, paperback."),
    ("p20", "Dune", "books", 9.99, 4.7, 18450, "Frank Herbert's science fiction epic, paperback."),
    (
        "p21",
        "Yoga Mat, 6 mm",
        "sports-outdoors",
        21.99,
        4.5,
        9021,
        "A non-slip 6 mm exercise mat with a carrying strap.",
    ),
    (
        "p22",
        "Adjustable Dumbbells, Pair",
        "sports-outdoors",
        149.00,
        4.6,
        1876,
        "Two adjustable dumbbells from 5 to 52.5 pounds each.",
    ),
    (
        "p23",
        "Insulated Water Bottle, 32 oz",
        "sports-outdoors",
        18.95,
        4.7,
        14502,
        "Double-wall vacuum insulated bottle that keeps drinks cold for 24 hours.",
    ),
    (
        "p24",
        "Two-Person Camping Tent",
        "sports-outdoors",
        89.00,
        4.3,
        2150,
        "A waterproof dome tent for two that sets up in ten minutes.",
    ),
    (
        "p25",
        "Running Socks, 6 Pack",
        "sports-outdoors",
        16.49,
        4.4,
        3388,
        "Cushioned, moisture-wicking athletic socks.",
    ),
    (
        "p26",
        "Wooden Building Blocks, 100 Pieces",
        "toys-games",
        29.99,
        4.8,
        2764,
        "Colourful wooden blocks for toddlers, with a storage bag.",
    ),
    (
        "p27",
        "1000-Piece Jigsaw Puzzle",
        "toys-games",
        14.99,
        4.5,
        1904,
        "A 1000-piece puzzle of a mountain lake at sunrise.",
    ),
    (
        "p28",
        "Strategy Board Game",
        "toys-games",
        39.99,
        4.7,
        8760,
        "Trade, build and settle: a strategy game for 3 to 4 players.",
    ),
    ("p29", "Gel Pens, 12 Pack", "office", 8.99, 4.6, 10233, "Smooth 0.7 mm gel pens in black ink."),
    ("p30", "Spiral Notebook, 5 Pack", "office", 11.49, 4.4, 4021, "College-ruled spiral notebooks, 70 sheets each."),
    (
        "p31",
        "Ergonomic Office Chair",
        "office",
        229.00,
        4.3,
        1543,
        "Mesh office chair with adjustable lumbar support and armrests.",
    ),
    (
        "p32",
        "Desk Lamp with USB Charging Port",
        "office",
        28.99,
        4.5,
        2987,
        "An LED desk lamp with five brightness levels and a USB port for your phone.",
    ),
]

PRODUCTS = {
    pid: {
        "id": pid,
        "name": name,
        "category": category,
        "price": price,
        "rating": rating,
        "reviews": reviews,
        "description": description,
    }
    for pid, name, category, price, rating, reviews, description in _ROWS
}

SPEEDS = {  # value: (label, cost, days)
    "standard": ("Standard", 0.00, "5-7 business days"),
    "express": ("Express", 9.99, "2 business days"),
    "overnight": ("Overnight", 19.99, "next business day"),
}

ADDRESS = {
    "fullName": "Alex Morgan",
    "street": "12 Harbor Lane",
    "city": "Portland",
    "zip": "97201",
    "country": "United States",
}


def line(pid: str, quantity: int) -> dict:
    """A cart or order line for `quantity` of product `pid`."""
    product = PRODUCTS[pid]
    return {"id": pid, "name": product["name"], "price": product["price"], "quantity": quantity}


def _order(oid: str, date: str, lines: list[tuple[str, int]], speed: str, status: str) -> dict:
    items = [line(pid, quantity) for pid, quantity in lines]
    subtotal = round(sum(item["price"] * item["quantity"] for item in items), 2)
    cost = SPEEDS[speed][1]
    return {
        "id": oid,
        "date": date,
        "items": items,
        "shipping": dict(ADDRESS),
        "speed": speed,
        "status": status,
        "subtotal": subtotal,
        "shippingCost": cost,
        "total": round(subtotal + cost, 2),
    }


_SEED = {
    "user": {"name": "Alex Morgan", "email": "alex.morgan@example.com", "address": ADDRESS},
    "cart": {"items": []},
    "orders": [
        _order("o1001", "2024-05-02", [("p20", 1), ("p21", 1)], "standard", "delivered"),
        _order("o1002", "2024-05-20", [("p24", 1)], "express", "shipped"),
        _order("o1003", "2024-05-29", [("p10", 2)], "standard", "placed"),
    ],
    "searches": [],
    "viewed": [],
}


def seed() -> dict:
    """A fresh deep copy of the shop's initial state."""
    return copy.deepcopy(_SEED)


def new_order(state: dict, shipping: dict, speed: str) -> dict:
    """The order that checking out the cart creates, numbered after the last order."""
    number = max((int(order["id"][1:]) for order in state["orders"]), default=1000) + 1
    lines = [(item["id"], item["quantity"]) for item in state["cart"]["items"]]
    order = _order(f"o{number}", "2024-06-01", lines, speed, "placed")
    order["shipping"] = shipping
    return order
