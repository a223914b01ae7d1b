"""Shopzon, the shop site (similar to Amazon): catalogue, search, cart, checkout and orders under /shop."""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from .pages import BadInput, Site
from .protocol import add_protocol_routes, session
from .shop_data import CATEGORIES, PRODUCTS, SPEEDS, line, new_order

KEY = "shop"
HOME = "/shop"
COLLECTIONS = {"cart": ("cart", "items"), "orders": ("orders",), "searches": ("searches",), "viewed": ("viewed",)}
SORTS = {
    "relevance": "Relevance",
    "price-asc": "Price: low to high",
    "price-desc": "Price: high to low",
    "rating": "Customer rating",
}
ADDRESS_FIELDS = {
    "fullName": "Full name",
    "street": "Street address",
    "city": "City",
    "zip": "ZIP code",
    "country": "Country",
}
MAX_QUANTITY = 10

TEMPLATES = {
    "empty.html": """<p>Your cart is empty. <a href="/shop">Continue shopping</a></p>""",
    "shop.html": """{% extends "layout.html" %}
{% block search %}
<form role="search" action="/shop/search" method="get">
  <label class="sr" for="shop-q">Search</label>
  <input type="search" id="shop-q" name="q" value="{{ query|default('') }}" placeholder="Search Shopzon">
  <button type="submit">Search</button>
</form>
{% endblock %}
""",
    "products.html": """{% macro listing(products) %}
<ul style="list-style: none; padding: 0">
{% for p in products %}
  <li style="padding: 10px 0; border-bottom: 1px solid #eee">
    <a href="/shop/product/{{ p.id }}">{{ p.name }}</a>
    <div><span class="price">{{ p.price|money }}</span>
      <span class="muted">· {{ p.rating }} out of 5 stars ({{ "{:,}".format(p.reviews) }} ratings)</span></div>
  </li>
{% endfor %}
</ul>
{% endmacro %}""",
    "home.html": """{% extends "shop.html" %}{% from "products.html" import listing %}
{% block main %}
<h1>Welcome to Shopzon</h1>
<aside><h2>Categories</h2>
<ul>{% for slug, name in categories.items() %}<li><a href="/shop/category/{{ slug }}">{{ name }}</a></li>{% endfor %}</ul>
</aside>
<section><h2>Today's picks</h2>{{ listing(picks) }}</section>
{% endblock %}""",  # noqa: E501 - HTML and CSS the site serves: a line broken in the template would change its pages
    "list.html": """{% extends "shop.html" %}{% from "products.html" import listing %}
{% block main %}
<h1>{{ title }}</h1>
{% if sortable %}
<form action="/shop/search" method="get">
  <input type="hidden" name="q" value="{{ query }}">
  <label for="sort" style="display: inline">Sort by</label>
  <select id="sort" name="sort">{% for value, label in sorts.items() %}
    <option value="{{ value }}"{% if value == sort %} selected{% endif %}>{{ label }}</option>{% endfor %}
  </select>
  <button type="submit">Sort</button>
</form>
{% endif %}
<p class="muted">{{ products|length }} result{{ "" if products|length == 1 else "s" }}</p>
{{ listing(products) }}
{% endblock %}""",
    "product.html": """{% extends "shop.html" %}
{% block main %}
<p><a href="/shop/category/{{ product.category }}">{{ category }}</a></p>
<h1>{{ product.name }}</h1>
<p class="muted">{{ product.rating }} out of 5 stars · {{ "{:,}".format(product.reviews) }} ratings</p>
<p class="price" style="font-size: 22px">{{ product.price|money }}</p>
<p>{{ product.description }}</p>
<form action="/shop/cart/add" method="post">
  <input type="hidden" name="product_id" value="{{ product.id }}">
  <label for="quantity">Quantity</label>
  <select id="quantity" name="quantity">{% for n in range(1, max_quantity + 1) %}<option>{{ n }}</option>{% endfor %}</select>
  <p><button type="submit">Add to cart</button></p>
</form>
{% endblock %}""",  # noqa: E501 - HTML and CSS the site serves: a line broken in the template would change its pages
    "cart.html": """{% extends "shop.html" %}
{% block main %}
<h1>Shopping cart</h1>
{% if items %}
<table>
<thead><tr><th>Item</th><th>Price</th><th>Quantity</th><th></th></tr></thead>
<tbody>{% for item in items %}
<tr>
  <td><a href="/shop/product/{{ item.id }}">{{ item.name }}</a></td>
  <td>{{ item.price|money }}</td>
  <td><form action="/shop/cart/update" method="post">
    <input type="hidden" name="product_id" value="{{ item.id }}">
    <label class="sr" for="qty-{{ item.id }}">Quantity for {{ item.name }}</label>
    <select id="qty-{{ item.id }}" name="quantity">{% for n in range(1, max_quantity + 1) %}
      <option{% if n == item.quantity %} selected{% endif %}>{{ n }}</option>{% endfor %}</select>
    <button type="submit" aria-label="Update quantity of {{ item.name }}">Update</button>
  </form></td>
  <td><form action="/shop/cart/remove" method="post">
    <input type="hidden" name="product_id" value="{{ item.id }}">
    <button type="submit" aria-label="Remove {{ item.name }}">Remove</button>
  </form></td>
</tr>{% endfor %}
</tbody></table>
<p>Subtotal ({{ count }} item{{ "" if count == 1 else "s" }}): <span class="price">{{ subtotal|money }}</span></p>
<p><a class="button" href="/shop/checkout">Proceed to checkout</a></p>
{% else %}{% include "empty.html" %}{% endif %}
{% endblock %}""",
    "checkout.html": """{% extends "shop.html" %}
{% block main %}
<h1>Checkout</h1>
{% if items %}
<ul>{% for item in items %}<li>{{ item.quantity }} × {{ item.name }} — {{ (item.price * item.quantity)|money }}</li>{% endfor %}</ul>
<p>Subtotal: <span class="price">{{ subtotal|money }}</span></p>
<form action="/shop/checkout" method="post">
  <h2>Shipping address</h2>
  {% for name, label in fields.items() %}
  <label for="{{ name }}">{{ label }}</label>
  <input type="text" id="{{ name }}" name="{{ name }}" value="{{ address[name] }}">
  {% endfor %}
  <fieldset style="margin-top: 14px"><legend>Shipping speed</legend>
  {% for value, speed in speeds.items() %}
    <input type="radio" id="speed-{{ value }}" name="speed" value="{{ value }}"{% if loop.first %} checked{% endif %}>
    <label for="speed-{{ value }}">{{ speed[0] }}</label> <span class="muted">{{ speed[1]|money }}, {{ speed[2] }}</span><br>
  {% endfor %}
  </fieldset>
  <p><button type="submit">Place order</button></p>
</form>
{% else %}{% include "empty.html" %}{% endif %}
{% endblock %}""",  # noqa: E501 - HTML and CSS the site serves: a line broken in the template would change its pages
    "orders.html": """{% extends "shop.html" %}
{% block main %}
<h1>Your orders</h1>
<table>
<thead><tr><th>Order</th><th>Date</th><th>Items</th><th>Total</th><th>Status</th></tr></thead>
<tbody>{% for order in orders %}
<tr><td><a href="/shop/orders/{{ order.id }}">Order {{ order.id }}</a></td><td>{{ order.date }}</td>
<td>{{ order["items"]|map(attribute="name")|join(", ") }}</td><td>{{ order.total|money }}</td>
<td>{{ order.status|capitalize }}</td></tr>{% endfor %}
</tbody></table>
{% endblock %}""",
    "order.html": """{% extends "shop.html" %}
{% block main %}
<h1>Order {{ order.id }}</h1>
<p>Placed on {{ order.date }} · Status: <strong>{{ order.status|capitalize }}</strong></p>
<table>
<thead><tr><th>Item</th><th>Price</th><th>Quantity</th></tr></thead>
<tbody>{% for item in order["items"] %}
<tr><td><a href="/shop/product/{{ item.id }}">{{ item.name }}</a></td><td>{{ item.price|money }}</td><td>{{ item.quantity }}</td></tr>
{% endfor %}</tbody></table>
<h2>Shipping</h2>
<p>{{ order.shipping.fullName }}<br>{{ order.shipping.street }}<br>{{ order.shipping.city }} {{ order.shipping.zip }}<br>{{ order.shipping.country }}</p>
<p>{{ speed }} shipping: {{ order.shippingCost|money }} · Subtotal: {{ order.subtotal|money }} · Total: <span class="price">{{ order.total|money }}</span></p>
{% if order.status == "placed" %}
<form action="/shop/orders/{{ order.id }}/cancel" method="post"><button type="submit">Cancel order</button></form>
{% endif %}
<p><a href="/shop/orders">Back to orders</a></p>
{% endblock %}""",  # noqa: E501 - HTML and CSS the site serves: a line broken in the template would change its pages
}


def _nav(state: dict) -> list[tuple[str, str]]:
    count = sum(item["quantity"] for item in state.get("cart", {}).get("items", []))
    return [("Home", HOME), (f"Cart ({count})", f"{HOME}/cart"), ("Orders", f"{HOME}/orders")]


SITE = Site("Shopzon", HOME, "#131921", _nav, TEMPLATES)
router = APIRouter(prefix=HOME)
add_protocol_routes(router, KEY, SITE, COLLECTIONS)


def _see_other(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303)


def _product(pid: str, state: dict) -> dict:
    if pid not in PRODUCTS:
        raise BadInput(SITE, f"Product '{pid}' does not exist.", state, status=404)
    return PRODUCTS[pid]


def _quantity(raw: str, state: dict) -> int:
    if not raw.strip().isdigit() or not 1 <= int(raw) <= MAX_QUANTITY:
        raise BadInput(SITE, f"Quantity must be a whole number from 1 to {MAX_QUANTITY}, not '{raw}'.", state)
    return int(raw)


def search_products(query: str, sort: str) -> list[dict]:
    """Products whose name, description or category hold every word of `query`; name matches first."""
    words = re.findall(r"[a-z0-9]+", query.lower())
    found = []
    for product in PRODUCTS.values():
        text = f"{product['name']} {product['description']} {CATEGORIES[product['category']]}".lower()
        if words and all(word in text for word in words):
            found.append(product)
    found.sort(key=lambda p: not all(word in p["name"].lower() for word in words))
    if sort == "price-asc":
        found.sort(key=lambda p: p["price"])
    elif sort == "price-desc":
        found.sort(key=lambda p: -p["price"])
    elif sort == "rating":
        found.sort(key=lambda p: -p["rating"])
    return found


def _subtotal(items: list[dict]) -> float:
    return round(sum(item["price"] * item["quantity"] for item in items), 2)


def _page(request: Request, path: str, template: str, title: str, context) -> HTMLResponse:
    """Record a view of a plain page and render it with `context(state)`."""
    with session(request, KEY) as run:
        run.record("view_page", {"path": f"{HOME}{path}"})
        return SITE.render(template, run.state, title=title, **context(run.state))


@router.get("", response_class=HTMLResponse)
@router.get("/", response_class=HTMLResponse)
def home(request: Request) -> HTMLResponse:
    """The storefront: categories and a few picks."""
    picks = [PRODUCTS[pid] for pid in ("p5", "p11", "p17", "p23", "p28", "p32")]
    return _page(request, "", "home.html", "Home", lambda state: {"categories": CATEGORIES, "picks": picks})


@router.get("/category/{slug}", response_class=HTMLResponse)
def category(request: Request, slug: str) -> HTMLResponse:
    """All products of one category."""
    with session(request, KEY) as run:
        if slug not in CATEGORIES:
            raise BadInput(SITE, f"Category '{slug}' does not exist.", run.state, status=404)
        run.record("view_category", {"category": slug})
        products = [p for p in PRODUCTS.values() if p["category"] == slug]
        return SITE.render("list.html", run.state, title=CATEGORIES[slug], products=products, sortable=False)


@router.get("/search", response_class=HTMLResponse)
def search(request: Request, q: str = "", sort: str = "relevance") -> HTMLResponse:
    """Search results, recorded in `searches` so retrieval tasks can grade what was looked for."""
    with session(request, KEY) as run:
        if sort not in SORTS:
            raise BadInput(SITE, f"Sort by must be one of: {', '.join(SORTS.values())}.", run.state)
        products = search_products(q, sort)
        entry = {
            "id": f"s{len(run.state['searches']) + 1}",
            "query": q,
            "sort": sort,
            "results": [p["id"] for p in products],
        }
        run.state["searches"].append(entry)
        run.record("search", entry)
        return SITE.render(
            "list.html",
            run.state,
            title=f'Results for "{q}"',
            products=products,
            query=q,
            sortable=True,
            sorts=SORTS,
            sort=sort,
        )


@router.get("/product/{pid}", response_class=HTMLResponse)
def product(request: Request, pid: str) -> HTMLResponse:
    """A product page, recorded in `viewed`."""
    with session(request, KEY) as run:
        item = _product(pid, run.state)
        entry = {"id": f"v{len(run.state['viewed']) + 1}", "productId": pid, "name": item["name"]}
        run.state["viewed"].append(entry)
        run.record("view_product", entry)
        return SITE.render(
            "product.html",
            run.state,
            title=item["name"],
            product=item,
            category=CATEGORIES[item["category"]],
            max_quantity=MAX_QUANTITY,
        )


@router.post("/cart/add")
async def add_to_cart(request: Request) -> RedirectResponse:
    """Add a quantity of a product to the cart (capped at the maximum per item)."""
    form = await request.form()
    with session(request, KEY) as run:
        pid = str(form.get("product_id", ""))
        _product(pid, run.state)
        quantity = _quantity(str(form.get("quantity", "")), run.state)
        items = run.state["cart"]["items"]
        existing = next((item for item in items if item["id"] == pid), None)
        if existing:
            existing["quantity"] = min(existing["quantity"] + quantity, MAX_QUANTITY)
        else:
            items.append(line(pid, quantity))
        run.record("add_to_cart", {"productId": pid, "quantity": quantity})
    return _see_other(f"{HOME}/cart")


def _cart_item(run_state: dict, pid: str) -> dict:
    item = next((item for item in run_state["cart"]["items"] if item["id"] == pid), None)
    if item is None:
        raise BadInput(SITE, f"Product '{pid}' is not in your cart.", run_state, status=404)
    return item


@router.post("/cart/update")
async def update_cart(request: Request) -> RedirectResponse:
    """Set the quantity of a cart line."""
    form = await request.form()
    with session(request, KEY) as run:
        item = _cart_item(run.state, str(form.get("product_id", "")))
        item["quantity"] = _quantity(str(form.get("quantity", "")), run.state)
        run.record("update_cart", {"productId": item["id"], "quantity": item["quantity"]})
    return _see_other(f"{HOME}/cart")


@router.post("/cart/remove")
async def remove_from_cart(request: Request) -> RedirectResponse:
    """Remove a line from the cart."""
    form = await request.form()
    with session(request, KEY) as run:
        item = _cart_item(run.state, str(form.get("product_id", "")))
        run.state["cart"]["items"].remove(item)
        run.record("remove_from_cart", {"productId": item["id"]})
    return _see_other(f"{HOME}/cart")


def _cart(state: dict) -> dict:
    items = state["cart"]["items"]
    return {
        "items": items,
        "max_quantity": MAX_QUANTITY,
        "count": sum(item["quantity"] for item in items),
        "subtotal": _subtotal(items),
    }


@router.get("/cart", response_class=HTMLResponse)
def cart(request: Request) -> HTMLResponse:
    """The cart with per-line quantity and remove controls."""
    return _page(request, "/cart", "cart.html", "Cart", _cart)


@router.get("/checkout", response_class=HTMLResponse)
def checkout_page(request: Request) -> HTMLResponse:
    """The checkout form, prefilled with the user's saved address."""
    return _page(
        request,
        "/checkout",
        "checkout.html",
        "Checkout",
        lambda state: {**_cart(state), "fields": ADDRESS_FIELDS, "address": state["user"]["address"], "speeds": SPEEDS},
    )


@router.post("/checkout")
async def place_order(request: Request) -> RedirectResponse:
    """Turn the cart into an order shipped to the given address at the given speed."""
    form = await request.form()
    with session(request, KEY) as run:
        if not run.state["cart"]["items"]:
            raise BadInput(SITE, "Your cart is empty: add something before placing an order.", run.state)
        shipping = {name: str(form.get(name, "")).strip() for name in ADDRESS_FIELDS}
        missing = [label for name, label in ADDRESS_FIELDS.items() if not shipping[name]]
        if missing:
            raise BadInput(SITE, f"{', '.join(missing)}: this field is required.", run.state)
        speed = str(form.get("speed", ""))
        if speed not in SPEEDS:
            raise BadInput(SITE, "Shipping speed: choose Standard, Express or Overnight.", run.state)
        order = new_order(run.state, shipping, speed)
        run.state["orders"].append(order)
        run.state["cart"]["items"] = []
        run.record("place_order", {"orderId": order["id"]})
    return _see_other(f"{HOME}/orders/{order['id']}")


@router.get("/orders", response_class=HTMLResponse)
def orders(request: Request) -> HTMLResponse:
    """Past orders, newest first."""
    return _page(request, "/orders", "orders.html", "Orders", lambda state: {"orders": state["orders"][::-1]})


def _order(state: dict, oid: str) -> dict:
    order = next((order for order in state["orders"] if order["id"] == oid), None)
    if order is None:
        raise BadInput(SITE, f"Order '{oid}' does not exist.", state, status=404)
    return order


@router.get("/orders/{oid}", response_class=HTMLResponse)
def order_details(request: Request, oid: str) -> HTMLResponse:
    """One order's items, address, shipping and totals, with a cancel button while it is only placed."""
    with session(request, KEY) as run:
        order = _order(run.state, oid)
        run.record("view_order", {"orderId": oid})
        return SITE.render("order.html", run.state, title=f"Order {oid}", order=order, speed=SPEEDS[order["speed"]][0])


@router.post("/orders/{oid}/cancel")
def cancel_order(request: Request, oid: str) -> RedirectResponse:
    """Cancel an order that has not shipped yet."""
    with session(request, KEY) as run:
        order = _order(run.state, oid)
        if order["status"] != "placed":
            raise BadInput(SITE, f"Order {oid} is {order['status']} and can no longer be cancelled.", run.state)
        order["status"] = "cancelled"
        run.record("cancel_order", {"orderId": oid})
    return _see_other(f"{HOME}/orders/{oid}")
