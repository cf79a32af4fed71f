"""Write default_state.json for ecommerce_orders: a fictional shop, deterministic (seeded).

Run from the repository root: python environments/ecommerce_orders/make_state.py
"""

from __future__ import annotations

import importlib.util
import json
import random
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
TODAY = date(2026, 3, 16)

FIRST = ["Maya", "Theo", "Priya", "Jonas", "Lucia", "Omar", "Hannah", "Diego", "Ingrid", "Kenji", "Amara",
         "Felix", "Sofia", "Rahul", "Elena", "Marcus", "Yuki", "Nadia", "Owen", "Leila", "Tomasz", "Grace",
         "Samuel", "Zara"]
LAST = ["Okafor", "Lindqvist", "Ramirez", "Chen", "Novak", "Haddad", "Brennan", "Costa", "Fischer", "Tanaka",
        "Mensah", "Dubois", "Rossi", "Iyer", "Petrova", "Walsh", "Sato", "Karimi", "Hughes", "Farouk",
        "Kowalski", "Adeyemi", "Park", "Moreau"]
STREETS = ["Alder Lane", "Birch Street", "Cedar Avenue", "Dockside Road", "Elm Court", "Fairview Drive",
           "Granite Way", "Harbor Street", "Ivy Terrace", "Juniper Road", "Kestrel Close", "Linden Place"]
CITIES = [("Portland", "OR", "97201"), ("Austin", "TX", "78704"), ("Denver", "CO", "80205"),
          ("Madison", "WI", "53703"), ("Raleigh", "NC", "27601"), ("Tucson", "AZ", "85701"),
          ("Burlington", "VT", "05401"), ("Boise", "ID", "83702")]

# name, category, price, returnable
PRODUCTS = [
    ("Cast Iron Skillet 10in", "kitchen", 34.99, True), ("Chef's Knife 8in", "kitchen", 49.5, True),
    ("Bamboo Cutting Board", "kitchen", 18.75, True), ("Pour-Over Coffee Kit", "kitchen", 42.0, True),
    ("Stainless Mixing Bowls (3)", "kitchen", 26.4, True), ("Silicone Spatula Set", "kitchen", 12.99, True),
    ("Enamel Dutch Oven 5qt", "kitchen", 89.0, True), ("Electric Kettle 1.7L", "kitchen", 39.95, True),
    ("Wireless Earbuds", "electronics", 79.99, True), ("USB-C Charging Hub", "electronics", 29.99, True),
    ("Bluetooth Speaker Mini", "electronics", 45.0, True), ("Noise-Cancelling Headphones", "electronics", 189.0, True),
    ("Smart Plug (2-pack)", "electronics", 24.99, True), ("E-Reader Paperlite", "electronics", 129.0, True),
    ("Portable Power Bank 20k", "electronics", 38.5, True), ("Merino Wool Beanie", "apparel", 22.0, True),
    ("Rain Shell Jacket", "apparel", 119.0, True), ("Trail Running Socks (3)", "apparel", 17.5, True),
    ("Organic Cotton Tee", "apparel", 19.99, True), ("Fleece Quarter-Zip", "apparel", 54.0, True),
    ("Swimsuit Classic", "apparel", 36.0, False), ("Linen Throw Pillow", "home", 28.0, True),
    ("Wool Area Rug 4x6", "home", 149.0, True), ("Scented Soy Candle", "home", 16.5, True),
    ("Ceramic Planter Medium", "home", 31.25, True), ("Blackout Curtains (pair)", "home", 58.0, True),
    ("Weighted Blanket 15lb", "home", 99.0, True), ("Insulated Water Bottle", "outdoor", 27.95, True),
    ("Camping Lantern LED", "outdoor", 33.0, True), ("Ultralight Tent 2P", "outdoor", 239.0, True),
    ("Trekking Poles (pair)", "outdoor", 64.0, True), ("Hammock with Straps", "outdoor", 47.5, True),
    ("Field Guide to Birds", "books", 24.0, True), ("Sourdough Baking Book", "books", 29.5, True),
    ("Pocket Atlas 2026", "books", 14.99, True), ("Mystery Box Set", "books", 44.0, True),
    ("Vitamin C Serum", "beauty", 32.0, False), ("Shea Body Butter", "beauty", 18.0, False),
    ("Bamboo Hairbrush", "beauty", 15.5, True), ("Gift Card $25", "gift cards", 25.0, False),
    ("Gift Card $50", "gift cards", 50.0, False), ("Gift Card $100", "gift cards", 100.0, False),
    ("Retro Alarm Clock", "home", 21.0, True), ("Desk Lamp Arc", "home", 68.0, True),
    ("Yoga Mat Pro", "outdoor", 72.0, True),
]
DISCONTINUED = {"P121", "P142"}
COUPONS = [
    {"code": "SPRING10", "percent_off": 10, "min_subtotal": 0.0, "expires": "2026-04-30", "active": True},
    {"code": "WELCOME15", "percent_off": 15, "min_subtotal": 40.0, "expires": "2026-12-31", "active": True},
    {"code": "BIGSPEND20", "percent_off": 20, "min_subtotal": 150.0, "expires": "2026-06-30", "active": True},
    {"code": "WINTER25", "percent_off": 25, "min_subtotal": 60.0, "expires": "2026-02-28", "active": True},
    {"code": "STAFF30", "percent_off": 30, "min_subtotal": 0.0, "expires": "2026-12-31", "active": False},
    {"code": "HOLIDAY5", "percent_off": 5, "min_subtotal": 0.0, "expires": "2026-01-15", "active": True},
]


def load_env_class():
    """Import environment.py from this folder (authoring script, trusted code)."""
    spec = importlib.util.spec_from_file_location("ecommerce_env", HERE / "environment.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EcommerceOrders


def build() -> dict:
    """Build the default state."""
    rng = random.Random(20260316)
    env = load_env_class()()
    env.today = TODAY.isoformat()
    for n in range(24):
        cid = f"C{n + 1:03d}"
        first, last = FIRST[n], LAST[(n * 7) % len(LAST)]
        city, st, zip_code = CITIES[n % len(CITIES)]
        env.customers[cid] = {
            "customer_id": cid, "name": f"{first} {last}",
            "email": f"{first.lower()}.{last.lower()}@example.com",
            "phone": f"+1-555-{rng.randint(200, 989):03d}-{rng.randint(1000, 9999)}",
            "tier": "gold" if n % 4 == 1 else "standard",
            "default_address": f"{rng.randint(3, 980)} {STREETS[n % len(STREETS)]}, {city}, {st} {zip_code}",
            "joined_date": (TODAY - timedelta(days=rng.randint(90, 1400))).isoformat(),
        }
    for n, (name, category, price, returnable) in enumerate(PRODUCTS):
        pid = f"P{101 + n}"
        stock = 0 if n % 11 == 5 else rng.randint(3, 60)
        env.products[pid] = {"product_id": pid, "name": name, "category": category, "price": price,
                             "stock": stock, "returnable": returnable, "active": pid not in DISCONTINUED}
    env.coupons = {c["code"]: dict(c) for c in COUPONS}
    pids = sorted(env.products)
    for n in range(56):
        oid = f"O-{10001 + n}"
        cid = f"C{rng.randint(1, 24):03d}"
        age = round(70 * ((55 - n) / 55) ** 1.7)  # oldest first, busier lately, the last few placed today
        placed = TODAY - timedelta(days=age)
        lines = []
        for pid in rng.sample(pids, rng.choice([1, 1, 2, 2, 3])):
            p = env.products[pid]
            lines.append({"product_id": pid, "name": p["name"], "quantity": rng.choice([1, 1, 1, 2, 3]),
                          "unit_price": p["price"]})
        coupon = None
        if n % 6 == 2:
            coupon = "WINTER25" if placed.isoformat() <= "2026-02-28" else "SPRING10"
        order = {
            "order_id": oid, "customer_id": cid, "status": "pending", "order_date": placed.isoformat(),
            "items": lines, "subtotal": 0.0, "coupon_code": coupon, "discount": 0.0,
            "shipping_method": "express" if n % 5 == 3 else "standard", "shipping_fee": 0.0, "total": 0.0,
            "shipping_address": env.customers[cid]["default_address"], "carrier": None, "tracking_number": None,
            "shipped_date": None, "delivered_date": None, "cancelled_date": None, "cancel_reason": None,
            "refunded_amount": 0.0,
        }
        env._reprice(order)
        if n % 13 == 4 or n == 55:
            order["status"] = "cancelled"
            order["cancelled_date"] = min(placed + timedelta(days=1), TODAY).isoformat()
            order["cancel_reason"] = rng.choice(["customer changed mind", "ordered by mistake", "found cheaper"])
        elif age >= 3 or (age == 2 and n % 2 == 0):
            carrier = rng.choice(["UPS", "FedEx", "USPS", "DHL"])
            shipped = placed + timedelta(days=rng.randint(1, 2))
            delivered = shipped + timedelta(days=rng.randint(2, 5))
            order.update(status="shipped", carrier=carrier, shipped_date=shipped.isoformat(),
                         tracking_number=f"{carrier[:2].upper()}{shipped.isoformat().replace('-', '')}{oid[2:]}")
            if delivered < TODAY:
                order.update(status="delivered", delivered_date=delivered.isoformat())
        env.orders[oid] = order
    _add_returns(env, rng)
    return {"today": env.today, "customers": env.customers, "products": env.products, "orders": env.orders,
            "returns": env.returns, "coupons": env.coupons}


def _add_returns(env, rng: random.Random) -> None:
    """Historic returns on delivered orders, in every status; refunded ones update the order."""
    delivered = [o for o in env.orders.values() if o["status"] == "delivered"]
    picks = delivered[2::4][:9]
    statuses = ["refunded", "rejected", "refunded", "approved", "requested", "refunded", "requested",
                "approved", "rejected"]
    reasons = ["damaged in transit", "wrong size", "not as described", "changed my mind", "arrived late",
               "defective", "duplicate gift", "color differs from photo", "missing parts"]
    for n, (order, status) in enumerate(zip(picks, statuses, strict=False)):
        line = next((ln for ln in order["items"] if env.products[ln["product_id"]]["returnable"]), None)
        if line is None:
            continue
        rid = f"R-{501 + n}"
        requested = date.fromisoformat(order["delivered_date"]) + timedelta(days=rng.randint(1, 6))
        if requested > TODAY:
            requested = TODAY
        record = {"return_id": rid, "order_id": order["order_id"], "customer_id": order["customer_id"],
                  "items": [{"product_id": line["product_id"], "quantity": 1}], "reason": reasons[n],
                  "status": status, "requested_date": requested.isoformat(), "resolution_note": None,
                  "refund_amount": None}
        if status in ("approved", "refunded"):
            record["resolution_note"] = "Approved: item received back in resellable condition."
        if status == "rejected":
            record["resolution_note"] = "Rejected: item shows signs of use."
        if status == "refunded":
            share = 1 - order["discount"] / order["subtotal"]
            record["refund_amount"] = round(line["unit_price"] * share, 2)
            order["refunded_amount"] = record["refund_amount"]
        env.returns[rid] = record


def main() -> None:
    """Write default_state.json next to this script."""
    state = build()
    (HERE / "default_state.json").write_text(json.dumps(state, indent=1, ensure_ascii=False) + "\n")
    counts = {k: len(v) for k, v in state.items() if isinstance(v, dict)}
    print(f"wrote {HERE / 'default_state.json'}: {counts}")


if __name__ == "__main__":
    main()
