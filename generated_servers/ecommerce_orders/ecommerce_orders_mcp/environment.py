"""Online shop back office: customers, products, orders, shipping, returns and refunds."""

from datetime import date
from typing import Any, Dict, List, Literal, Optional, TypedDict


class CustomerInfo(TypedDict):
    customer_id: str
    name: str
    email: str
    phone: str
    tier: str  # "standard" or "gold"
    default_address: str
    joined_date: str


class ProductInfo(TypedDict):
    product_id: str
    name: str
    category: str
    price: float
    stock: int
    returnable: bool
    active: bool


class OrderLine(TypedDict):
    product_id: str
    name: str
    quantity: int
    unit_price: float


class OrderInfo(TypedDict):
    order_id: str
    customer_id: str
    status: str  # "pending", "shipped", "delivered" or "cancelled"
    order_date: str
    items: List[OrderLine]
    subtotal: float
    coupon_code: Optional[str]
    discount: float
    shipping_method: str  # "standard" or "express"
    shipping_fee: float
    total: float
    shipping_address: str
    carrier: Optional[str]
    tracking_number: Optional[str]
    shipped_date: Optional[str]
    delivered_date: Optional[str]
    cancelled_date: Optional[str]
    cancel_reason: Optional[str]
    refunded_amount: float


class ReturnLine(TypedDict):
    product_id: str
    quantity: int


class ReturnInfo(TypedDict):
    return_id: str
    order_id: str
    customer_id: str
    items: List[ReturnLine]
    reason: str
    status: str  # "requested", "approved", "rejected" or "refunded"
    requested_date: str
    resolution_note: Optional[str]
    refund_amount: Optional[float]


class ItemRequest(TypedDict):
    """A product and how many units of it."""

    product_id: str
    quantity: int


class CouponInfo(TypedDict):
    code: str
    percent_off: int
    min_subtotal: float
    expires: str
    active: bool


RETURN_WINDOW_DAYS = 30
STANDARD_FEE = 4.99
EXPRESS_FEE = 14.99
FREE_SHIPPING_THRESHOLD = 50.0
MAX_LINE_QUANTITY = 10


class EcommerceOrders:
    """Order management for a small online shop, as a support agent sees it."""

    def __init__(self) -> None:
        # The shop's calendar date ("YYYY-MM-DD"); every date rule is measured from it.
        self.today: str = "2026-03-16"
        # Customers by customer id.
        self.customers: Dict[str, CustomerInfo] = {}
        # Catalog products by product id.
        self.products: Dict[str, ProductInfo] = {}
        # Orders by order id.
        self.orders: Dict[str, OrderInfo] = {}
        # Return requests by return id.
        self.returns: Dict[str, ReturnInfo] = {}
        # Discount coupons by code.
        self.coupons: Dict[str, CouponInfo] = {}

    # ----------------------------------------------------------------- helpers

    def _days_since(self, day: str) -> int:
        return (date.fromisoformat(self.today) - date.fromisoformat(day)).days

    def _next_id(self, prefix: str, existing: Dict[str, Any], start: int) -> str:
        numbers = [int(key[len(prefix):]) for key in existing if key[len(prefix):].isdigit()]
        return f"{prefix}{max([*numbers, start - 1]) + 1}"

    def _shipping_fee(self, customer_id: str, method: str, subtotal: float) -> float:
        if method == "express":
            return EXPRESS_FEE
        customer = self.customers.get(customer_id)
        if subtotal >= FREE_SHIPPING_THRESHOLD or (customer is not None and customer["tier"] == "gold"):
            return 0.0
        return STANDARD_FEE

    def _coupon_problem(self, code: str, subtotal: float) -> Optional[str]:
        coupon = self.coupons.get(code)
        if coupon is None:
            return f"Coupon '{code}' does not exist."
        if not coupon["active"]:
            return f"Coupon '{code}' is no longer active."
        if coupon["expires"] < self.today:
            return f"Coupon '{code}' expired on {coupon['expires']}."
        if subtotal < coupon["min_subtotal"]:
            return f"Coupon '{code}' needs a subtotal of at least {coupon['min_subtotal']:.2f} (order has {subtotal:.2f})."
        return None

    def _reprice(self, order: OrderInfo) -> None:
        """Recompute subtotal, discount, shipping fee and total of an order in place."""
        subtotal = round(sum(line["unit_price"] * line["quantity"] for line in order["items"]), 2)
        order["subtotal"] = subtotal
        discount = 0.0
        code = order["coupon_code"]
        if code is not None:
            # A coupon already on an order stays while its minimum subtotal is still met (expiry is
            # only checked when it is applied).
            coupon = self.coupons.get(code)
            if coupon is not None and subtotal >= coupon["min_subtotal"]:
                discount = round(subtotal * coupon["percent_off"] / 100, 2)
            else:
                order["coupon_code"] = None
        order["discount"] = discount
        order["shipping_fee"] = self._shipping_fee(order["customer_id"], order["shipping_method"], subtotal)
        order["total"] = round(subtotal - discount + order["shipping_fee"], 2)

    def _returned_quantity(self, order_id: str, product_id: str) -> int:
        return sum(
            line["quantity"]
            for ret in self.returns.values()
            if ret["order_id"] == order_id and ret["status"] != "rejected"
            for line in ret["items"]
            if line["product_id"] == product_id
        )

    def _return_window_problem(self, order: OrderInfo) -> Optional[str]:
        if order["status"] != "delivered" or order["delivered_date"] is None:
            return f"Order {order['order_id']} is {order['status']}; only delivered orders can be returned."
        age = self._days_since(order["delivered_date"])
        if age > RETURN_WINDOW_DAYS:
            return (f"Order {order['order_id']} was delivered {age} days ago; returns are accepted "
                    f"within {RETURN_WINDOW_DAYS} days of delivery.")
        return None

    # ----------------------------------------------------------------- queries

    def get_customer(self, customer_id: str) -> Dict[str, Any]:
        """Get a customer's profile.

        Args:
            customer_id: Customer id, e.g. "C007".

        Returns:
            {"success": True, "data": customer record} or {"success": False, "error": ...}.

        Constraints:
            Read-only; the id must exist.
        """
        customer = self.customers.get(customer_id)
        if customer is None:
            return {"success": False, "error": f"No customer with id '{customer_id}'."}
        return {"success": True, "data": customer}

    def find_customer(self, email: Optional[str] = None, name: Optional[str] = None) -> Dict[str, Any]:
        """Find customers by exact email (case-insensitive) or by part of their name.

        Args:
            email: Email address to match exactly, ignoring case.
            name: Text that must appear in the customer's name, ignoring case.

        Returns:
            {"success": True, "data": [customer records]} (possibly empty).

        Constraints:
            At least one of email or name must be given.
        """
        if not email and not name:
            return {"success": False, "error": "Give an email or a name to search for."}
        found = [
            c for c in self.customers.values()
            if (not email or c["email"].lower() == email.lower())
            and (not name or name.lower() in c["name"].lower())
        ]
        return {"success": True, "data": found}

    def get_product(self, product_id: str) -> Dict[str, Any]:
        """Get a product with its price, stock and return policy.

        Args:
            product_id: Product id, e.g. "P112".

        Returns:
            {"success": True, "data": product record} or {"success": False, "error": ...}.

        Constraints:
            Read-only; discontinued products are still returned (see "active").
        """
        product = self.products.get(product_id)
        if product is None:
            return {"success": False, "error": f"No product with id '{product_id}'."}
        return {"success": True, "data": product}

    def search_products(self, query: Optional[str] = None, category: Optional[str] = None,
                        max_price: Optional[float] = None, in_stock_only: bool = False) -> Dict[str, Any]:
        """Search the active catalog by name text, category, price ceiling and stock.

        Args:
            query: Text that must appear in the product name, ignoring case.
            category: Exact category, e.g. "kitchen", ignoring case.
            max_price: Highest unit price to include.
            in_stock_only: Only include products with stock above zero.

        Returns:
            {"success": True, "data": [product records]} sorted by product id.

        Constraints:
            Discontinued (inactive) products are never listed.
        """
        found = [
            p for p in self.products.values()
            if p["active"]
            and (not query or query.lower() in p["name"].lower())
            and (not category or p["category"].lower() == category.lower())
            and (max_price is None or p["price"] <= max_price)
            and (not in_stock_only or p["stock"] > 0)
        ]
        return {"success": True, "data": sorted(found, key=lambda p: p["product_id"])}

    def get_order(self, order_id: str) -> Dict[str, Any]:
        """Get an order with its lines, totals, shipping and tracking details.

        Args:
            order_id: Order id, e.g. "O-10023".

        Returns:
            {"success": True, "data": order record} or {"success": False, "error": ...}.

        Constraints:
            Read-only; the id must exist.
        """
        order = self.orders.get(order_id)
        if order is None:
            return {"success": False, "error": f"No order with id '{order_id}'."}
        return {"success": True, "data": order}

    def list_orders(self, customer_id: Optional[str] = None,
                    status: Optional[Literal["pending", "shipped", "delivered", "cancelled"]] = None,
                    placed_since: Optional[str] = None) -> Dict[str, Any]:
        """List orders, filtered by customer, status and order date.

        Args:
            customer_id: Only orders of this customer.
            status: Only orders with this status.
            placed_since: Only orders placed on or after this date (YYYY-MM-DD).

        Returns:
            {"success": True, "data": [order records]} sorted by order date, then id.

        Constraints:
            Read-only; an unknown customer id is an error.
        """
        if customer_id is not None and customer_id not in self.customers:
            return {"success": False, "error": f"No customer with id '{customer_id}'."}
        found = [
            o for o in self.orders.values()
            if (customer_id is None or o["customer_id"] == customer_id)
            and (status is None or o["status"] == status)
            and (placed_since is None or o["order_date"] >= placed_since)
        ]
        return {"success": True, "data": sorted(found, key=lambda o: (o["order_date"], o["order_id"]))}

    def count_orders_by_status(self, customer_id: Optional[str] = None) -> Dict[str, Any]:
        """Count orders per status, for the whole shop or one customer.

        Args:
            customer_id: Only count this customer's orders.

        Returns:
            {"success": True, "data": {"pending": n, "shipped": n, "delivered": n, "cancelled": n}}.

        Constraints:
            Read-only; an unknown customer id is an error.
        """
        if customer_id is not None and customer_id not in self.customers:
            return {"success": False, "error": f"No customer with id '{customer_id}'."}
        counts = {"pending": 0, "shipped": 0, "delivered": 0, "cancelled": 0}
        for order in self.orders.values():
            if customer_id is None or order["customer_id"] == customer_id:
                counts[order["status"]] = counts.get(order["status"], 0) + 1
        return {"success": True, "data": counts}

    def check_return_eligibility(self, order_id: str) -> Dict[str, Any]:
        """Tell whether an order can still be returned, and which quantities of each line.

        Args:
            order_id: Order id.

        Returns:
            {"success": True, "data": {"eligible": bool, "reason": str, "days_since_delivery": int | None,
            "returnable_lines": [{"product_id", "name", "returnable_quantity"}]}}.

        Constraints:
            Only delivered orders, within 30 days of delivery; final-sale products are never returnable;
            quantities already in a non-rejected return are subtracted.
        """
        order = self.orders.get(order_id)
        if order is None:
            return {"success": False, "error": f"No order with id '{order_id}'."}
        problem = self._return_window_problem(order)
        lines = []
        for line in order["items"]:
            product = self.products.get(line["product_id"])
            if product is not None and product["returnable"]:
                left = line["quantity"] - self._returned_quantity(order_id, line["product_id"])
                if left > 0:
                    lines.append({"product_id": line["product_id"], "name": line["name"],
                                  "returnable_quantity": left})
        days = self._days_since(order["delivered_date"]) if order["delivered_date"] else None
        eligible = problem is None and bool(lines)
        reason = problem or ("Eligible for return." if lines else "Nothing left on this order that can be returned.")
        return {"success": True, "data": {"eligible": eligible, "reason": reason, "days_since_delivery": days,
                                          "returnable_lines": lines if problem is None else []}}

    def list_returns(self, order_id: Optional[str] = None, customer_id: Optional[str] = None,
                     status: Optional[Literal["requested", "approved", "rejected", "refunded"]] = None
                     ) -> Dict[str, Any]:
        """List return requests, filtered by order, customer and status.

        Args:
            order_id: Only returns of this order.
            customer_id: Only returns of this customer.
            status: Only returns with this status.

        Returns:
            {"success": True, "data": [return records]} sorted by return id.

        Constraints:
            Read-only.
        """
        found = [
            r for r in self.returns.values()
            if (order_id is None or r["order_id"] == order_id)
            and (customer_id is None or r["customer_id"] == customer_id)
            and (status is None or r["status"] == status)
        ]
        return {"success": True, "data": sorted(found, key=lambda r: r["return_id"])}

    def get_coupon(self, code: str) -> Dict[str, Any]:
        """Get a coupon and whether it can be used today.

        Args:
            code: Coupon code, e.g. "SPRING10".

        Returns:
            {"success": True, "data": coupon record plus "usable_today": bool}.

        Constraints:
            Read-only; usable_today is False for expired or withdrawn coupons.
        """
        coupon = self.coupons.get(code)
        if coupon is None:
            return {"success": False, "error": f"Coupon '{code}' does not exist."}
        usable = coupon["active"] and coupon["expires"] >= self.today
        return {"success": True, "data": dict(coupon, usable_today=usable)}

    # ----------------------------------------------------------- state changes

    def place_order(self, customer_id: str, items: List[ItemRequest],
                    shipping_method: Literal["standard", "express"] = "standard",
                    shipping_address: Optional[str] = None,
                    coupon_code: Optional[str] = None) -> Dict[str, Any]:
        """Place a new order for a customer; stock is reserved immediately.

        Args:
            customer_id: Customer placing the order.
            items: Lines to order, each {"product_id": str, "quantity": int}.
            shipping_method: "standard" (4.99, free from 50.00 or for gold customers) or "express" (14.99).
            shipping_address: Delivery address; the customer's default address when omitted.
            coupon_code: Optional coupon to apply.

        Returns:
            {"success": True, "message": ..., "data": new order record}.

        Constraints:
            Products must be active and in stock; 1-10 units per line; each product once per order;
            the coupon must be active, unexpired and its minimum subtotal met.
        """
        customer = self.customers.get(customer_id)
        if customer is None:
            return {"success": False, "error": f"No customer with id '{customer_id}'."}
        if not items:
            return {"success": False, "error": "An order needs at least one item."}
        lines: List[OrderLine] = []
        for item in items:
            pid, qty = item.get("product_id"), item.get("quantity")
            product = self.products.get(pid) if isinstance(pid, str) else None
            if product is None or not product["active"]:
                return {"success": False, "error": f"Product '{pid}' does not exist or is discontinued."}
            if not isinstance(qty, int) or not 1 <= qty <= MAX_LINE_QUANTITY:
                return {"success": False, "error": f"Quantity for {pid} must be a whole number from 1 to 10."}
            if any(line["product_id"] == pid for line in lines):
                return {"success": False, "error": f"Product {pid} is listed twice; combine the quantities."}
            if product["stock"] < qty:
                return {"success": False, "error": f"Only {product['stock']} of {pid} in stock, {qty} requested."}
            lines.append({"product_id": pid, "name": product["name"], "quantity": qty,
                          "unit_price": product["price"]})
        subtotal = round(sum(line["unit_price"] * line["quantity"] for line in lines), 2)
        if coupon_code is not None:
            problem = self._coupon_problem(coupon_code, subtotal)
            if problem:
                return {"success": False, "error": problem}
        order_id = self._next_id("O-", self.orders, 10001)
        order: OrderInfo = {
            "order_id": order_id, "customer_id": customer_id, "status": "pending", "order_date": self.today,
            "items": lines, "subtotal": subtotal, "coupon_code": coupon_code, "discount": 0.0,
            "shipping_method": shipping_method, "shipping_fee": 0.0, "total": 0.0,
            "shipping_address": shipping_address or customer["default_address"], "carrier": None,
            "tracking_number": None, "shipped_date": None, "delivered_date": None, "cancelled_date": None,
            "cancel_reason": None, "refunded_amount": 0.0,
        }
        self._reprice(order)
        for line in lines:
            self.products[line["product_id"]]["stock"] -= line["quantity"]
        self.orders[order_id] = order
        return {"success": True, "message": f"Order {order_id} placed, total {order['total']:.2f}.", "data": order}

    def cancel_order(self, order_id: str, reason: str) -> Dict[str, Any]:
        """Cancel a pending order and put its items back in stock.

        Args:
            order_id: Order to cancel.
            reason: Why the order is cancelled (kept on the order).

        Returns:
            {"success": True, "message": ...}.

        Constraints:
            Only pending orders; shipped or delivered orders must go through a return instead.
        """
        order = self.orders.get(order_id)
        if order is None:
            return {"success": False, "error": f"No order with id '{order_id}'."}
        if order["status"] != "pending":
            return {"success": False, "error": f"Order {order_id} is {order['status']}; only pending orders can be "
                                               "cancelled (shipped or delivered orders need a return)."}
        for line in order["items"]:
            if line["product_id"] in self.products:
                self.products[line["product_id"]]["stock"] += line["quantity"]
        order["status"] = "cancelled"
        order["cancelled_date"] = self.today
        order["cancel_reason"] = reason
        return {"success": True, "message": f"Order {order_id} cancelled; {order['total']:.2f} will be released."}

    def restore_cancelled_order(self, order_id: str) -> Dict[str, Any]:
        """Undo a cancellation made today: the order becomes pending again and its stock is re-reserved.

        Args:
            order_id: The cancelled order.

        Returns:
            {"success": True, "message": ...}.

        Constraints:
            Only orders cancelled today, and only when every item is still in stock.
        """
        order = self.orders.get(order_id)
        if order is None:
            return {"success": False, "error": f"No order with id '{order_id}'."}
        if order["status"] != "cancelled":
            return {"success": False, "error": f"Order {order_id} is {order['status']}, not cancelled."}
        if order["cancelled_date"] != self.today:
            return {"success": False, "error": f"Order {order_id} was cancelled on {order['cancelled_date']}; only "
                                               "cancellations made today can be undone. Place a new order instead."}
        for line in order["items"]:
            product = self.products.get(line["product_id"])
            if product is None or product["stock"] < line["quantity"]:
                return {"success": False, "error": f"Not enough stock of {line['product_id']} to restore the order."}
        for line in order["items"]:
            self.products[line["product_id"]]["stock"] -= line["quantity"]
        order["status"] = "pending"
        order["cancelled_date"] = None
        order["cancel_reason"] = None
        return {"success": True, "message": f"Order {order_id} restored to pending."}

    def update_order_items(self, order_id: str, product_id: str, quantity: int) -> Dict[str, Any]:
        """Add a product to a pending order, change its quantity, or remove it (quantity 0).

        Args:
            order_id: Pending order to change.
            product_id: Product to add, change or remove.
            quantity: New quantity of that product on the order (0 removes the line).

        Returns:
            {"success": True, "message": ..., "data": updated order}.

        Constraints:
            Only pending orders; at most 10 units per line; stock must cover any increase; an order keeps
            at least one line (cancel it instead); totals, coupon and shipping fee are recomputed.
        """
        order = self.orders.get(order_id)
        if order is None:
            return {"success": False, "error": f"No order with id '{order_id}'."}
        if order["status"] != "pending":
            return {"success": False, "error": f"Order {order_id} is {order['status']}; only pending orders can change."}
        if quantity < 0 or quantity > MAX_LINE_QUANTITY:
            return {"success": False, "error": "Quantity must be from 0 to 10."}
        product = self.products.get(product_id)
        line = next((ln for ln in order["items"] if ln["product_id"] == product_id), None)
        current = line["quantity"] if line else 0
        if line is None and (product is None or not product["active"]):
            return {"success": False, "error": f"Product '{product_id}' does not exist or is discontinued."}
        if line is None and quantity == 0:
            return {"success": False, "error": f"Product {product_id} is not on order {order_id}."}
        if quantity == 0 and len(order["items"]) == 1:
            return {"success": False, "error": "That would leave the order empty; cancel the order instead."}
        increase = quantity - current
        if increase > 0 and (product is None or not product["active"]):
            return {"success": False, "error": f"Product {product_id} is discontinued; its quantity cannot grow."}
        if product is not None and increase > product["stock"]:
            return {"success": False, "error": f"Only {product['stock']} more of {product_id} in stock."}
        if product is not None:
            product["stock"] -= increase
        if quantity == 0:
            order["items"] = [ln for ln in order["items"] if ln["product_id"] != product_id]
        elif line is None and product is not None:
            order["items"].append({"product_id": product_id, "name": product["name"], "quantity": quantity,
                                   "unit_price": product["price"]})
        elif line is not None:
            line["quantity"] = quantity
        old_coupon = order["coupon_code"]
        self._reprice(order)
        note = f" Coupon {old_coupon} no longer applies and was removed." if old_coupon and not order["coupon_code"] else ""
        return {"success": True, "message": f"Order {order_id} updated, new total {order['total']:.2f}.{note}",
                "data": order}

    def apply_coupon(self, order_id: str, code: str) -> Dict[str, Any]:
        """Apply a coupon to a pending order (replaces any coupon already on it).

        Args:
            order_id: Pending order.
            code: Coupon code.

        Returns:
            {"success": True, "message": ..., "data": {"discount": float, "total": float}}.

        Constraints:
            Only pending orders; the coupon must be active, unexpired and its minimum subtotal met.
        """
        order = self.orders.get(order_id)
        if order is None:
            return {"success": False, "error": f"No order with id '{order_id}'."}
        if order["status"] != "pending":
            return {"success": False, "error": f"Order {order_id} is {order['status']}; coupons only apply to "
                                               "pending orders."}
        problem = self._coupon_problem(code, order["subtotal"])
        if problem:
            return {"success": False, "error": problem}
        order["coupon_code"] = code
        self._reprice(order)
        return {"success": True, "message": f"Coupon {code} applied to {order_id}.",
                "data": {"discount": order["discount"], "total": order["total"]}}

    def update_shipping(self, order_id: str, shipping_address: Optional[str] = None,
                        shipping_method: Optional[Literal["standard", "express"]] = None) -> Dict[str, Any]:
        """Change the delivery address and/or shipping method of a pending order.

        Args:
            order_id: Pending order.
            shipping_address: New full delivery address.
            shipping_method: New shipping method; the fee is recomputed.

        Returns:
            {"success": True, "message": ..., "data": updated order}.

        Constraints:
            Only pending orders (not yet shipped); give at least one change.
        """
        order = self.orders.get(order_id)
        if order is None:
            return {"success": False, "error": f"No order with id '{order_id}'."}
        if order["status"] != "pending":
            return {"success": False, "error": f"Order {order_id} is already {order['status']}; shipping details "
                                               "can only change before it ships."}
        if not shipping_address and shipping_method is None:
            return {"success": False, "error": "Give a new shipping_address or shipping_method."}
        if shipping_address:
            order["shipping_address"] = shipping_address
        if shipping_method is not None:
            order["shipping_method"] = shipping_method
        self._reprice(order)
        return {"success": True, "message": f"Shipping of {order_id} updated, total {order['total']:.2f}.",
                "data": order}

    def mark_shipped(self, order_ids: List[str], carrier: Literal["UPS", "FedEx", "USPS", "DHL"]) -> Dict[str, Any]:
        """Hand one or more pending orders to a carrier (bulk); tracking numbers are assigned.

        Args:
            order_ids: Pending orders to ship.
            carrier: Carrier taking the parcels.

        Returns:
            {"success": True, "message": ..., "data": {order_id: tracking_number}}.

        Constraints:
            All-or-nothing: every order must exist and be pending, otherwise nothing ships.
        """
        if not order_ids:
            return {"success": False, "error": "Give at least one order id."}
        for oid in order_ids:
            order = self.orders.get(oid)
            if order is None:
                return {"success": False, "error": f"No order with id '{oid}'; nothing was shipped."}
            if order["status"] != "pending":
                return {"success": False, "error": f"Order {oid} is {order['status']}; nothing was shipped."}
        tracking = {}
        for oid in dict.fromkeys(order_ids):
            order = self.orders[oid]
            order["status"] = "shipped"
            order["carrier"] = carrier
            order["shipped_date"] = self.today
            order["tracking_number"] = f"{carrier[:2].upper()}{self.today.replace('-', '')}{oid[2:]}"
            tracking[oid] = order["tracking_number"]
        return {"success": True, "message": f"{len(tracking)} order(s) shipped with {carrier}.", "data": tracking}

    def request_return(self, order_id: str, items: List[ItemRequest], reason: str) -> Dict[str, Any]:
        """Open a return request for some or all items of a delivered order.

        Args:
            order_id: Delivered order.
            items: Lines to return, each {"product_id": str, "quantity": int}.
            reason: The customer's reason, e.g. "damaged" or "wrong size".

        Returns:
            {"success": True, "message": ..., "data": new return record (status "requested")}.

        Constraints:
            Delivered orders only, within 30 days of delivery; final-sale products cannot be returned;
            quantities cannot exceed what was bought minus what is already in non-rejected returns.
        """
        order = self.orders.get(order_id)
        if order is None:
            return {"success": False, "error": f"No order with id '{order_id}'."}
        problem = self._return_window_problem(order)
        if problem:
            return {"success": False, "error": problem}
        if not items:
            return {"success": False, "error": "Name at least one item to return."}
        lines: List[ReturnLine] = []
        for item in items:
            pid, qty = item.get("product_id"), item.get("quantity")
            bought = next((ln for ln in order["items"] if ln["product_id"] == pid), None)
            if bought is None:
                return {"success": False, "error": f"Product '{pid}' is not on order {order_id}."}
            product = self.products.get(bought["product_id"])
            if product is not None and not product["returnable"]:
                return {"success": False, "error": f"{bought['name']} ({pid}) is final sale and cannot be returned."}
            left = bought["quantity"] - self._returned_quantity(order_id, bought["product_id"])
            if not isinstance(qty, int) or qty < 1 or qty > left:
                return {"success": False, "error": f"Quantity for {pid} must be from 1 to {left}."}
            lines.append({"product_id": bought["product_id"], "quantity": qty})
        return_id = self._next_id("R-", self.returns, 501)
        record: ReturnInfo = {
            "return_id": return_id, "order_id": order_id, "customer_id": order["customer_id"], "items": lines,
            "reason": reason, "status": "requested", "requested_date": self.today, "resolution_note": None,
            "refund_amount": None,
        }
        self.returns[return_id] = record
        return {"success": True, "message": f"Return {return_id} opened for order {order_id}.", "data": record}

    def decide_return(self, return_id: str, decision: Literal["approve", "reject"], note: str) -> Dict[str, Any]:
        """Approve or reject a requested return.

        Args:
            return_id: Return in status "requested".
            decision: "approve" or "reject".
            note: Explanation kept on the return (shown to the customer).

        Returns:
            {"success": True, "message": ...}.

        Constraints:
            Only returns in status "requested" can be decided.
        """
        record = self.returns.get(return_id)
        if record is None:
            return {"success": False, "error": f"No return with id '{return_id}'."}
        if record["status"] != "requested":
            return {"success": False, "error": f"Return {return_id} is already {record['status']}."}
        record["status"] = "approved" if decision == "approve" else "rejected"
        record["resolution_note"] = note
        return {"success": True, "message": f"Return {return_id} {record['status']}."}

    def issue_refund(self, return_id: str) -> Dict[str, Any]:
        """Refund an approved return and put its items back in stock.

        Args:
            return_id: Return in status "approved".

        Returns:
            {"success": True, "message": ..., "data": {"refund_amount": float}}.

        Constraints:
            Only approved returns; the refund is the items' price less the order's coupon discount share;
            shipping fees are not refunded.
        """
        record = self.returns.get(return_id)
        if record is None:
            return {"success": False, "error": f"No return with id '{return_id}'."}
        if record["status"] != "approved":
            return {"success": False, "error": f"Return {return_id} is {record['status']}; only approved returns "
                                               "can be refunded."}
        order = self.orders.get(record["order_id"])
        if order is None:
            return {"success": False, "error": f"Order {record['order_id']} of this return no longer exists."}
        prices = {ln["product_id"]: ln["unit_price"] for ln in order["items"]}
        gross = sum(prices.get(ln["product_id"], 0.0) * ln["quantity"] for ln in record["items"])
        share = 1 - (order["discount"] / order["subtotal"] if order["subtotal"] else 0.0)
        amount = round(gross * share, 2)
        for ln in record["items"]:
            if ln["product_id"] in self.products:
                self.products[ln["product_id"]]["stock"] += ln["quantity"]
        record["status"] = "refunded"
        record["refund_amount"] = amount
        order["refunded_amount"] = round(order["refunded_amount"] + amount, 2)
        return {"success": True, "message": f"Refunded {amount:.2f} for return {return_id}.",
                "data": {"refund_amount": amount}}

    def update_customer_contact(self, customer_id: str, email: Optional[str] = None, phone: Optional[str] = None,
                                default_address: Optional[str] = None) -> Dict[str, Any]:
        """Update a customer's email, phone and/or default address.

        Args:
            customer_id: Customer to update.
            email: New email address; must contain "@" and not belong to another customer.
            phone: New phone number.
            default_address: New default shipping address (existing orders keep their address).

        Returns:
            {"success": True, "message": ..., "data": updated customer}.

        Constraints:
            Give at least one field; emails are unique across customers.
        """
        customer = self.customers.get(customer_id)
        if customer is None:
            return {"success": False, "error": f"No customer with id '{customer_id}'."}
        if not email and not phone and not default_address:
            return {"success": False, "error": "Give an email, phone or default_address to change."}
        if email:
            if "@" not in email or "." not in email.split("@")[-1]:
                return {"success": False, "error": f"'{email}' is not a valid email address."}
            clash = [c["customer_id"] for c in self.customers.values()
                     if c["email"].lower() == email.lower() and c["customer_id"] != customer_id]
            if clash:
                return {"success": False, "error": f"Email {email} already belongs to customer {clash[0]}."}
            customer["email"] = email
        if phone:
            customer["phone"] = phone
        if default_address:
            customer["default_address"] = default_address
        return {"success": True, "message": f"Customer {customer_id} updated.", "data": customer}

    def restock_products(self, product_ids: List[str], quantity: int) -> Dict[str, Any]:
        """Add the same number of units to the stock of several products (bulk receiving).

        Args:
            product_ids: Products that received stock.
            quantity: Units added to each product (1-500).

        Returns:
            {"success": True, "message": ..., "data": {product_id: new stock}}.

        Constraints:
            All-or-nothing: every product id must exist.
        """
        if not product_ids:
            return {"success": False, "error": "Give at least one product id."}
        if quantity < 1 or quantity > 500:
            return {"success": False, "error": "Quantity must be from 1 to 500."}
        missing = [pid for pid in product_ids if pid not in self.products]
        if missing:
            return {"success": False, "error": f"Unknown product id(s): {', '.join(missing)}; nothing restocked."}
        result = {}
        for pid in dict.fromkeys(product_ids):
            self.products[pid]["stock"] += quantity
            result[pid] = self.products[pid]["stock"]
        return {"success": True, "message": f"Restocked {len(result)} product(s).", "data": result}
