"""Scenarios of ecommerce_orders: hand-authored online shop support tasks, each with a plausible wrong solution (WRONG).

`python environments/ecommerce_orders/make_scenarios.py [--check]` gates them through the environment's generated server
and writes scenarios/ecommerce_orders.jsonl only when all pass (envscaler_mcp.authoring.main; exit code 1 otherwise).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from envscaler_mcp import authoring
from envscaler_mcp.authoring import unchanged

HERE = Path(__file__).resolve().parent
ENV_ID = "ecommerce_orders"
STATE: dict[str, Any] = authoring.default_state(HERE)

# Helper lists a validator expression may use. `initial_state` is a global the runner provides.
NEW = {
    "new_orders": '[o for k, o in final_state["orders"].items() if k not in initial_state["orders"]]',
    "new_returns": '[r for k, r in final_state["returns"].items() if k not in initial_state["returns"]]',
}


def stock_delta(pid: str, delta: int) -> str:
    """Expression: product `pid` has `delta` more units than initially."""
    return (f'final_state["products"]["{pid}"]["stock"] == '
            f'initial_state["products"]["{pid}"]["stock"] + ({delta})')


def lines_are(expr: str, expected: dict[str, int]) -> str:
    """Expression: the order lines of `expr` are exactly `expected` {product_id: quantity}."""
    return f'{{ln["product_id"]: ln["quantity"] for ln in {expr}["items"]}} == {expected!r}'


SPECS: list[dict[str, Any]] = [
    {
        "title": "Cancel an order placed by mistake",
        "task": "Please cancel order O-10053. The customer, Maya Okafor, placed it by mistake.",
        "checklist": [
            ("Has order O-10053 been cancelled?", 'final_state["orders"]["O-10053"]["status"] == "cancelled"'),
            ("Has the stock of Yoga Mat Pro (P145) gone back up by the 3 units on the order?",
             stock_delta("P145", 3)),
            ("Has Maya Okafor's other pending order O-10051 been left pending?",
             'final_state["orders"]["O-10051"]["status"] == "pending"', False),
        ],
        "solution": [("cancel_order", {"order_id": "O-10053", "reason": "ordered by mistake"})],
    },
    {
        "title": "Upgrade an order to express shipping",
        "task": "Please switch order O-10052 to express shipping; the customer needs it sooner.",
        "checklist": [
            ("Has order O-10052's shipping method been changed to express?",
             'final_state["orders"]["O-10052"]["shipping_method"] == "express"'),
            ("Has order O-10052's shipping fee become 14.99?",
             'final_state["orders"]["O-10052"]["shipping_fee"] == 14.99'),
            ("Has order O-10052 kept its delivery address?", unchanged('["orders"]["O-10052"]["shipping_address"]'),
             False),
        ],
        "solution": [("update_shipping", {"order_id": "O-10052", "shipping_method": "express"})],
    },
    {
        "title": "New order with a welcome coupon",
        "task": "Hi, this is Grace Chen (grace.chen@example.com). I'd like to order two Camping Lantern LED "
                "and one Hammock with Straps, sent to my usual address with standard shipping. Please use my "
                "code WELCOME15.",
        "checklist": [
            ("Has a new pending order been placed for Grace Chen (C022)?",
             'len(new_orders) == 1 and new_orders[0]["customer_id"] == "C022" '
             'and new_orders[0]["status"] == "pending"'),
            ("Does the new order contain exactly two Camping Lantern LED (P129) and one Hammock with Straps (P132)?",
             "len(new_orders) == 1 and " + lines_are("new_orders[0]", {"P129": 2, "P132": 1})),
            ("Has coupon WELCOME15 been applied to the new order?",
             'len(new_orders) == 1 and new_orders[0]["coupon_code"] == "WELCOME15" '
             'and new_orders[0]["discount"] > 0'),
            ("Has the new order been sent to Grace's default address by standard shipping?",
             'len(new_orders) == 1 and new_orders[0]["shipping_address"] == "317 Juniper Road, Tucson, AZ 85701" '
             'and new_orders[0]["shipping_method"] == "standard"'),
            ("Has the stock of Camping Lantern LED (P129) dropped by 2?", stock_delta("P129", -2)),
        ],
        "solution": [
            ("find_customer", {"email": "grace.chen@example.com"}),
            ("search_products", {"query": "Camping Lantern"}),
            ("search_products", {"query": "Hammock"}),
            ("place_order", {"customer_id": "C022", "items": [{"product_id": "P129", "quantity": 2},
                                                              {"product_id": "P132", "quantity": 1}],
                             "shipping_method": "standard", "coupon_code": "WELCOME15"}),
        ],
    },
    {
        "title": "Returns inside and outside the window",
        "task": "This is Felix Haddad. I want to return the Field Guide to Birds from order O-10032 and the two "
                "hammocks from order O-10015 - I no longer need them. Your warehouse already has both parcels "
                "back in perfect condition, so please approve and refund right away whatever your return "
                "policy allows.",
        "checklist": [
            ("Has a return been opened for order O-10032 covering one Field Guide to Birds (P133)?",
             'any(r["order_id"] == "O-10032" and r["items"] == [{"product_id": "P133", "quantity": 1}] '
             "for r in new_returns)"),
            ("Has that return been refunded with 24.0?",
             'any(r["order_id"] == "O-10032" and r["status"] == "refunded" and r["refund_amount"] == 24.0 '
             "for r in new_returns)"),
            ("Has order O-10032's refunded amount become 24.0?",
             'final_state["orders"]["O-10032"]["refunded_amount"] == 24.0'),
            ("Has no return been opened for order O-10015 (delivered more than 30 days ago)?",
             'not any(r["order_id"] == "O-10015" for r in new_returns)', False),
            ("Has the Field Guide to Birds (P133) gone back into stock?", stock_delta("P133", 1)),
        ],
        "solution": [
            ("check_return_eligibility", {"order_id": "O-10032"}),
            ("check_return_eligibility", {"order_id": "O-10015"}),
            ("request_return", {"order_id": "O-10032", "items": [{"product_id": "P133", "quantity": 1}],
                                "reason": "no longer needed"}),
            ("decide_return", {"return_id": "R-510", "decision": "approve",
                               "note": "Item received back in perfect condition."}),
            ("issue_refund", {"return_id": "R-510"}),
        ],
    },
    {
        "title": "Clear the return queue",
        "task": "Please work through our open returns: approve and refund every return that is still waiting "
                "for a decision, and refund every return that has already been approved. Leave rejected "
                "returns alone.",
        "checklist": [
            ("Has return R-507 been approved and refunded with 17.5?",
             'final_state["returns"]["R-507"]["status"] == "refunded" '
             'and final_state["returns"]["R-507"]["refund_amount"] == 17.5'),
            ("Has return R-508 been refunded with 16.5?",
             'final_state["returns"]["R-508"]["status"] == "refunded" '
             'and final_state["returns"]["R-508"]["refund_amount"] == 16.5'),
            ("Has order O-10029's refunded amount become 17.5?",
             'final_state["orders"]["O-10029"]["refunded_amount"] == 17.5'),
            ("Has order O-10034's refunded amount become 16.5?",
             'final_state["orders"]["O-10034"]["refunded_amount"] == 16.5'),
            ("Have the rejected returns R-502 and R-509 stayed rejected?",
             'final_state["returns"]["R-502"]["status"] == "rejected" '
             'and final_state["returns"]["R-509"]["status"] == "rejected"', False),
        ],
        "solution": [
            ("list_returns", {"status": "requested"}),
            ("list_returns", {"status": "approved"}),
            ("decide_return", {"return_id": "R-507", "decision": "approve", "note": "Approved after inspection."}),
            ("issue_refund", {"return_id": "R-507"}),
            ("issue_refund", {"return_id": "R-508"}),
        ],
    },
    {
        "title": "Edit a pending order and move address",
        "task": "I'm Tomasz Kowalski (customer C021). On my order O-10055 please add two Scented Soy Candles "
                "and use the code SPRING10. I've also moved: send the order to 14 Quarry Road, Raleigh, NC "
                "27603, and make that my default address from now on.",
        "checklist": [
            ("Has order O-10055 got two Scented Soy Candles (P124) next to its Bamboo Cutting Board (P103)?",
             lines_are('final_state["orders"]["O-10055"]', {"P103": 1, "P124": 2})),
            ("Has coupon SPRING10 been applied to order O-10055?",
             'final_state["orders"]["O-10055"]["coupon_code"] == "SPRING10"'),
            ("Has order O-10055's shipping address been changed to 14 Quarry Road, Raleigh, NC 27603?",
             'final_state["orders"]["O-10055"]["shipping_address"] == "14 Quarry Road, Raleigh, NC 27603"'),
            ("Has Tomasz Kowalski's default address been changed to 14 Quarry Road, Raleigh, NC 27603?",
             'final_state["customers"]["C021"]["default_address"] == "14 Quarry Road, Raleigh, NC 27603"'),
            ("Has order O-10055's standard shipping become free now that its subtotal reaches 50?",
             'final_state["orders"]["O-10055"]["shipping_fee"] == 0.0'),
        ],
        "solution": [
            ("search_products", {"query": "Scented Soy Candle"}),
            ("update_order_items", {"order_id": "O-10055", "product_id": "P124", "quantity": 2}),
            ("apply_coupon", {"order_id": "O-10055", "code": "SPRING10"}),
            ("update_shipping", {"order_id": "O-10055", "shipping_address": "14 Quarry Road, Raleigh, NC 27603"}),
            ("update_customer_contact", {"customer_id": "C021",
                                         "default_address": "14 Quarry Road, Raleigh, NC 27603"}),
        ],
    },
    {
        "title": "Reinstate a cancelled order, smaller and faster",
        "task": "This is Hannah Hughes. I cancelled my order O-10056 earlier today but I've changed my mind: "
                "please bring it back, but with just one E-Reader Paperlite instead of three, and send it "
                "express.",
        "checklist": [
            ("Is order O-10056 pending again?", 'final_state["orders"]["O-10056"]["status"] == "pending"'),
            ("Does order O-10056 now hold one Wireless Earbuds (P109) and one E-Reader Paperlite (P114)?",
             lines_are('final_state["orders"]["O-10056"]', {"P109": 1, "P114": 1})),
            ("Has order O-10056 been switched to express shipping?",
             'final_state["orders"]["O-10056"]["shipping_method"] == "express"'),
            ("Has exactly one E-Reader Paperlite (P114) been taken from stock?", stock_delta("P114", -1)),
            ("Has exactly one Wireless Earbuds (P109) been taken from stock?", stock_delta("P109", -1)),
        ],
        "solution": [
            ("restore_cancelled_order", {"order_id": "O-10056"}),
            ("update_order_items", {"order_id": "O-10056", "product_id": "P114", "quantity": 1}),
            ("update_shipping", {"order_id": "O-10056", "shipping_method": "express"}),
        ],
    },
    {
        "title": "Ship yesterday's orders with one exception",
        "task": "Warehouse here. Please hand every pending order that was placed before today to UPS, except "
                "Felix Haddad's - we are still verifying his address.",
        "checklist": [
            ("Has order O-10051 been shipped with UPS?",
             'final_state["orders"]["O-10051"]["status"] == "shipped" '
             'and final_state["orders"]["O-10051"]["carrier"] == "UPS"'),
            ("Has order O-10052 been shipped with UPS?",
             'final_state["orders"]["O-10052"]["status"] == "shipped" '
             'and final_state["orders"]["O-10052"]["carrier"] == "UPS"'),
            ("Has Felix Haddad's order O-10050 been left pending?",
             'final_state["orders"]["O-10050"]["status"] == "pending"', False),
            ("Have the orders placed today (O-10053, O-10054, O-10055) been left pending?",
             'all(final_state["orders"][k]["status"] == "pending" for k in ("O-10053", "O-10054", "O-10055"))',
             False),
        ],
        "solution": [
            ("find_customer", {"name": "Felix Haddad"}),
            ("list_orders", {"status": "pending"}),
            ("mark_shipped", {"order_ids": ["O-10051", "O-10052"], "carrier": "UPS"}),
        ],
    },
    {
        "title": "Cancel open orders and change email",
        "task": "I'm Marcus Tanaka (marcus.tanaka@example.com) and I'm moving abroad. Please cancel all of my "
                "orders that are still open, and change my email to marcus.tanaka@fastmail.example.",
        "checklist": [
            ("Has order O-10054 been cancelled?", 'final_state["orders"]["O-10054"]["status"] == "cancelled"'),
            ("Has the USB-C Charging Hub (P110) from O-10054 gone back into stock?", stock_delta("P110", 1)),
            ("Has the already shipped order O-10049 been left as shipped?",
             'final_state["orders"]["O-10049"]["status"] == "shipped"', False),
            ("Has Marcus Tanaka's email been changed to marcus.tanaka@fastmail.example?",
             'final_state["customers"]["C016"]["email"] == "marcus.tanaka@fastmail.example"'),
        ],
        "solution": [
            ("find_customer", {"email": "marcus.tanaka@example.com"}),
            ("list_orders", {"customer_id": "C016"}),
            ("cancel_order", {"order_id": "O-10054", "reason": "customer moving abroad"}),
            ("update_customer_contact", {"customer_id": "C016", "email": "marcus.tanaka@fastmail.example"}),
        ],
    },
    {
        "title": "Order around stock and an expired code",
        "task": "Please place an order for Owen Brennan: one Insulated Water Bottle and two Organic Cotton "
                "Tees, standard shipping, with his code WINTER25. If an item can't be ordered or the code can't "
                "be used, leave that part out and place the rest.",
        "checklist": [
            ("Has a new pending order been placed for Owen Brennan (C019)?",
             'len(new_orders) == 1 and new_orders[0]["customer_id"] == "C019" '
             'and new_orders[0]["status"] == "pending"'),
            ("Does the new order contain exactly two Organic Cotton Tees (P119) and nothing else?",
             "len(new_orders) == 1 and " + lines_are("new_orders[0]", {"P119": 2})),
            ("Has the new order been placed without a coupon?",
             'len(new_orders) == 1 and new_orders[0]["coupon_code"] is None'),
            ("Has the stock of Organic Cotton Tee (P119) dropped by 2?", stock_delta("P119", -2)),
        ],
        "solution": [
            ("find_customer", {"name": "Owen Brennan"}),
            ("search_products", {"query": "Water Bottle"}),
            ("search_products", {"query": "Cotton Tee"}),
            ("get_coupon", {"code": "WINTER25"}),
            ("place_order", {"customer_id": "C019", "items": [{"product_id": "P119", "quantity": 2}],
                             "shipping_method": "standard"}),
        ],
    },
    {
        "title": "Receive stock and fill a backorder",
        "task": "Our supplier delivery just arrived: add 20 units to every active product that is currently sold "
                "out. Then place Yuki Sato's order (yuki.sato@example.com) for one Rain Shell Jacket with "
                "express shipping.",
        "checklist": [
            ("Have the sold-out products P106, P128 and P139 each received 20 units?",
             'all(final_state["products"][p]["stock"] == 20 for p in ("P106", "P128", "P139"))'),
            ("Have products that were not sold out (e.g. P110, P121, P142) kept their stock?",
             " and ".join(unchanged(f'["products"]["{p}"]["stock"]') for p in ("P110", "P121", "P142")), False),
            ("Has a new pending express order for one Rain Shell Jacket (P117) been placed for Yuki Sato (C017)?",
             'len(new_orders) == 1 and new_orders[0]["customer_id"] == "C017" '
             'and new_orders[0]["status"] == "pending" and new_orders[0]["shipping_method"] == "express" and '
             + lines_are("new_orders[0]", {"P117": 1})),
            ("Is the Rain Shell Jacket (P117) left with 19 units in stock?",
             'final_state["products"]["P117"]["stock"] == 19'),
        ],
        "solution": [
            ("search_products", {}),
            ("restock_products", {"product_ids": ["P106", "P117", "P128", "P139"], "quantity": 20}),
            ("find_customer", {"email": "yuki.sato@example.com"}),
            ("place_order", {"customer_id": "C017", "items": [{"product_id": "P117", "quantity": 1}],
                             "shipping_method": "express"}),
        ],
    },
]


# A plausible wrong solution per scenario title: replayed (failed calls ignored), it must leave at least
# one validator False, so the checklist is strict enough to tell it from the reference solution.
WRONG: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "Cancel an order placed by mistake": [("cancel_order", {"order_id": "O-10051", "reason": "ordered by mistake"})],
    "Upgrade an order to express shipping": [
        ("update_shipping", {"order_id": "O-10052", "shipping_method": "express",
                             "shipping_address": "14 Quarry Road, Raleigh, NC 27603"}),
    ],
    "New order with a welcome coupon": [
        ("place_order", {"customer_id": "C022", "items": [{"product_id": "P129", "quantity": 2},
                                                          {"product_id": "P132", "quantity": 1}]}),
    ],
    "Returns inside and outside the window": [
        ("request_return", {"order_id": "O-10032", "items": [{"product_id": "P133", "quantity": 1}],
                            "reason": "no longer needed"}),
        ("decide_return", {"return_id": "R-510", "decision": "approve", "note": "ok"}),
    ],
    "Clear the return queue": [("issue_refund", {"return_id": "R-508"})],
    "Edit a pending order and move address": [
        ("update_order_items", {"order_id": "O-10055", "product_id": "P124", "quantity": 2}),
        ("apply_coupon", {"order_id": "O-10055", "code": "SPRING10"}),
        ("update_shipping", {"order_id": "O-10055", "shipping_address": "14 Quarry Road, Raleigh, NC 27603"}),
    ],
    "Reinstate a cancelled order, smaller and faster": [
        ("place_order", {"customer_id": "C007", "items": [{"product_id": "P109", "quantity": 1},
                                                          {"product_id": "P114", "quantity": 1}],
                         "shipping_method": "express"}),
    ],
    "Ship yesterday's orders with one exception": [
        ("mark_shipped", {"order_ids": ["O-10050", "O-10051", "O-10052"], "carrier": "UPS"}),
    ],
    "Cancel open orders and change email": [("cancel_order", {"order_id": "O-10054", "reason": "moving abroad"})],
    "Order around stock and an expired code": [
        ("place_order", {"customer_id": "C019", "items": [{"product_id": "P119", "quantity": 1}]}),
    ],
    "Receive stock and fill a backorder": [
        ("restock_products", {"product_ids": ["P106", "P117", "P128", "P139"], "quantity": 20}),
        ("place_order", {"customer_id": "C017", "items": [{"product_id": "P117", "quantity": 1}]}),
    ],
}


# Questions answered by looking things up; checked on what the agent did and said (authoring.read_only).
READ_ONLY: list[dict[str, Any]] = [
    {
        "title": "Where is my kettle order?",
        "task": "Hi, this is Amara Park (amara.park@example.com). I ordered electric kettles last week. Has that "
                "order shipped yet? Please tell me the order number, the carrier, the tracking number, the date "
                "it shipped and what I paid in total.",
        "solution": [("find_customer", {"email": "amara.park@example.com"}),
                     ("list_orders", {"customer_id": "C011"})],
        "answer": "Yes: your order O-10046 shipped with FedEx on 2026-03-14, tracking number FE2026031410046. "
                  "You paid $119.85 in total.",
        "checks": [
            ("Has the agent told Amara that order O-10046 has shipped with FedEx?",
             "says(transcript, 'O-10046', 'shipped', 'FedEx')"),
            ("Has the agent given the tracking number FE2026031410046?", "says(transcript, 'FE2026031410046')"),
            ("Has the agent given the ship date, 2026-03-14?", "says(transcript, '2026-03-14')"),
            ("Has the agent given the total paid, 119.85?", "says(transcript, 119.85)"),
            ("Has the agent looked up Amara's orders?",
             "called(transcript, 'list_orders', customer_id='C011') "
             "or called(transcript, 'get_order', order_id='O-10046')"),
        ],
    },
    {
        "title": "Which of my coupon codes still work?",
        "task": "I'm about to place an order with a subtotal of $50. I have three codes: WINTER25, WELCOME15 and "
                "SPRING10. Which of them can I still use on that order today, which one saves me the most, and "
                "how much would each usable one save?",
        "solution": [("get_coupon", {"code": "WINTER25"}), ("get_coupon", {"code": "WELCOME15"}),
                     ("get_coupon", {"code": "SPRING10"})],
        "answer": "WINTER25 expired on 2026-02-28, so it no longer works. WELCOME15 and SPRING10 are both valid "
                  "for this order: WELCOME15 saves the most, $7.50, and SPRING10 would save $5.00.",
        "checks": [
            ("Has the agent said that WINTER25 expired on 2026-02-28?",
             "says(transcript, 'WINTER25', 'expired', '2026-02-28')"),
            ("Has the agent named WELCOME15 as the best code, saving 7.50?", "says(transcript, 'WELCOME15', 7.5)"),
            ("Has the agent said SPRING10 also works, saving 5.00?", "says(transcript, 'SPRING10', 5)"),
            ("Has the agent checked all three codes?",
             "all(called(transcript, 'get_coupon', code=c) for c in ('WINTER25', 'WELCOME15', 'SPRING10'))"),
        ],
    },
]


if __name__ == "__main__":
    sys.exit(authoring.main(HERE, authoring.from_specs(ENV_ID, SPECS, STATE, NEW) + authoring.read_only(ENV_ID, READ_ONLY, STATE), WRONG))
