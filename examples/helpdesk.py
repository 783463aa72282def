"""The helpdesk environment: resolve a customer-support ticket for an electronics web shop.

Each task is one ticket. The agent reads the customer's message, looks the order up
(`search_orders`, `get_order`), takes the action the shop policies call for
(`issue_refund`, `update_shipping`, `cancel_order`, or none when the request must be
declined), replies to the customer (`send_reply`), escalates overdue VIP tickets
(`escalate`, offered on VIP tickets only) and ends the episode with `submit_resolution`,
which grades the session state against the task's `expected` block.

This is orlgen's "realistic" example: its tool schemas use nested models, str enums
(`Literal` and `enum.Enum`), constrained ints, lists of objects, optional parameters and
a no-argument tool, and its task specs carry nested objects, nullable fields and one
legacy field whose JSON type varies (`sla_hours` is an int, or the string "none").

Serve it with `python -m examples.helpdesk [PORT]`; the env key is `helpdesk`.
"""

import copy
import enum
import functools
import json
import random
import sys
from typing import Any, Literal

from openreward.environments import Environment, ListToolsOutput, TextBlock, ToolOutput, ToolSpec, tool
from pydantic import BaseModel, Field

# --------------------------------------------------------------------------------------
# The shop: catalog, places, people
# --------------------------------------------------------------------------------------

#: (sku, product name, unit price). No name is a substring of another, so a product name
#: is a usable `search_orders` query.
CATALOG: list[tuple[str, str, float]] = [
    ("KB-101", "mechanical keyboard", 89.0),
    ("MS-204", "wireless mouse", 29.5),
    ("HB-310", "USB-C hub", 45.0),
    ("MN-420", "27-inch monitor", 249.0),
    ("LP-515", "desk lamp", 34.99),
    ("HS-630", "noise-cancelling headset", 159.0),
    ("CB-712", "braided charging cable", 12.5),
    ("WC-808", "HD webcam", 69.0),
    ("SD-915", "portable SSD", 119.0),
    ("ST-120", "laptop stand", 39.0),
    ("MP-233", "felt desk mat", 19.99),
    ("SP-341", "bluetooth speaker", 59.0),
    ("PB-456", "power bank", 49.0),
    ("CH-567", "ergonomic chair", 329.0),
    ("TB-678", "drawing tablet", 89.99),
    ("RT-789", "wi-fi router", 129.0),
]


class Country(str, enum.Enum):
    """ISO 3166-1 alpha-2 code of a country the shop ships to."""

    GB = "GB"
    IE = "IE"
    FR = "FR"
    DE = "DE"
    NL = "NL"
    US = "US"


COUNTRY_NAMES = {
    "GB": "United Kingdom",
    "IE": "Ireland",
    "FR": "France",
    "DE": "Germany",
    "NL": "the Netherlands",
    "US": "the United States",
}
CITIES = {
    "GB": ["London", "Leeds", "Bristol"],
    "IE": ["Dublin", "Cork", "Galway"],
    "FR": ["Lyon", "Nantes", "Lille"],
    "DE": ["Berlin", "Hamburg", "Leipzig"],
    "NL": ["Utrecht", "Leiden", "Delft"],
    "US": ["Portland", "Austin", "Denver"],
}
STREETS = ["High Street", "Station Road", "Mill Lane", "Church Street", "Park Avenue", "Harbour Way"]
FIRST_NAMES = ["Ana", "Ben", "Chloe", "Dev", "Elif", "Farid", "Grace", "Hugo", "Iris", "Jonas", "Keiko", "Liam"]
LAST_NAMES = ["Lopez", "Okafor", "Martin", "Sharma", "Yilmaz", "Haddad", "Kim", "Berg", "Novak", "Walsh"]
CARRIERS = {"DHL": "JD", "UPS": "1Z", "DPD": "15", "Royal Mail": "RM"}

OrderStatus = Literal["processing", "shipped", "delivered", "cancelled"]
RefundReason = Literal["damaged", "wrong_item", "changed_mind", "not_delivered"]
CancelReason = Literal["customer_request", "duplicate_order", "payment_issue"]

#: Policy thresholds, shared by the policy text, the task generator and the grader.
CHANGED_MIND_WINDOW_DAYS = 30
VIP_URGENT_BREACH_HOURS = 24

POLICIES = f"""\
Shop policies (follow them exactly):

1. Refunds. Refund only delivered orders, and only the items and quantities the customer
   reports. Use the reason the customer gives: damaged, wrong_item, or changed_mind.
   "changed_mind" refunds are allowed only within {CHANGED_MIND_WINDOW_DAYS} days of the order date
   (placed_days_ago <= {CHANGED_MIND_WINDOW_DAYS}); later ones are declined.
2. Address changes. The shipping address can be changed only while the order is
   "processing". Once shipped, the request is declined.
3. Cancellations. An order can be cancelled only while it is "processing" (cancelled orders
   are refunded automatically, so never issue a separate refund). Once shipped, the request
   is declined. Use reason "duplicate_order" when the customer ordered twice by mistake,
   otherwise "customer_request".
4. Status queries. Look up the tracking number and send it with a "status_update" reply.
5. Replies. Every ticket gets a reply on the ticket's order with the matching template:
   refund_confirmation, address_confirmation, cancellation_confirmation, status_update, or
   policy_decline when the request is declined.
6. VIP escalation. Escalate a VIP ticket when its SLA is breached (opened_hours_ago greater
   than sla_hours): priority 1 when it is breached by more than {VIP_URGENT_BREACH_HOURS} hours, otherwise
   priority 2. Tickets whose SLA is "none" are never escalated; standard customers neither.
7. Finish with submit_resolution: resolved=true when the customer's request was fulfilled
   (including answering a status query), false when it was declined.
"""

# --------------------------------------------------------------------------------------
# Task generation
# --------------------------------------------------------------------------------------

SPLIT_SIZES = {"train": 300, "test": 60}
SPLIT_SEEDS = {"train": 1_000, "test": 2_000}
SPLIT_PREFIXES = {"train": "TR", "test": "TE"}

#: The variants of each issue kind; a variant ending in "_declined" must be declined.
SCENARIOS: dict[str, list[str]] = {
    "refund": ["damaged", "wrong_item", "changed_mind", "changed_mind_declined"],
    "address_change": ["ok", "ok", "shipped_declined"],
    "status_query": ["ok"],
    "cancellation": ["customer_request", "duplicate_order", "shipped_declined"],
}

#: Order status and age range (days) each scenario needs for the ticket's order.
ORDER_SETUP: dict[tuple[str, str], tuple[str, int, int]] = {
    ("refund", "damaged"): ("delivered", 3, 60),
    ("refund", "wrong_item"): ("delivered", 3, 60),
    ("refund", "changed_mind"): ("delivered", 3, CHANGED_MIND_WINDOW_DAYS),
    ("refund", "changed_mind_declined"): ("delivered", CHANGED_MIND_WINDOW_DAYS + 1, 80),
    ("address_change", "ok"): ("processing", 0, 2),
    ("address_change", "shipped_declined"): ("shipped", 2, 6),
    ("status_query", "ok"): ("shipped", 3, 9),
    ("cancellation", "customer_request"): ("processing", 0, 2),
    ("cancellation", "duplicate_order"): ("processing", 0, 2),
    ("cancellation", "shipped_declined"): ("shipped", 2, 6),
}


def _make_address(rng: random.Random) -> dict[str, str]:
    """A plausible street address in one of the shipping countries."""
    country = rng.choice([c.value for c in Country])
    digits = lambda n: "".join(str(rng.randint(0, 9)) for _ in range(n))  # noqa: E731
    letters = lambda n: "".join(rng.choice("ABDEFHJLNPRSTUWXY") for _ in range(n))  # noqa: E731
    postcode = {
        "GB": f"{letters(2)}{rng.randint(1, 20)} {digits(1)}{letters(2)}",
        "IE": f"D{digits(2)} {letters(1)}{digits(3)}",
        "NL": f"{rng.randint(1000, 9999)} {letters(2)}",
    }.get(country, digits(5))
    return {
        "street": f"{rng.randint(1, 240)} {rng.choice(STREETS)}",
        "city": rng.choice(CITIES[country]),
        "postcode": postcode,
        "country": country,
    }


def _make_customer(rng: random.Random) -> dict[str, Any]:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    return {
        "customer_id": f"C-{rng.randint(10000, 99999)}",
        "name": f"{first} {last}",
        "email": f"{first}.{last}{rng.randint(1, 99)}@example.com".lower(),
        "tier": "vip" if rng.random() < 0.3 else "standard",
    }


def _make_order(
    rng: random.Random, order_id: str, status: str, days: int, products: list, address: dict
) -> dict[str, Any]:
    """An order of the given products; shipped and delivered orders carry tracking."""
    tracking = None
    if status in ("shipped", "delivered"):
        carrier = rng.choice(sorted(CARRIERS))
        tracking = {"carrier": carrier, "number": f"{CARRIERS[carrier]}{rng.randint(10**9, 10**10 - 1)}"}
    return {
        "order_id": order_id,
        "status": status,
        "placed_days_ago": days,
        "items": [{"sku": s, "name": n, "quantity": rng.randint(1, 3), "price": p} for s, n, p in products],
        "shipping_address": dict(address),
        "tracking": tracking,
    }


def _make_orders(rng: random.Random, status: str, days: int, address: dict) -> tuple[dict, list[dict]]:
    """The ticket's order plus 1-3 other orders of the same customer.

    The other orders never contain the ticket order's products, so the ticket order is the
    only search hit for any of its product names.
    """
    ids = rng.sample(range(10000, 100000), 4)
    products = rng.sample(CATALOG, rng.randint(1, 3))
    order = _make_order(rng, f"ORD-{ids[0]}", status, days, products, address)
    others_pool = [p for p in CATALOG if p not in products]
    others = []
    for oid in ids[1 : 1 + rng.randint(1, 3)]:
        other_status = rng.choice(["processing", "shipped", "delivered", "delivered", "cancelled"])
        other_days = {"processing": rng.randint(0, 2), "shipped": rng.randint(2, 8)}.get(
            other_status, rng.randint(5, 120)
        )
        other_products = rng.sample(others_pool, rng.randint(1, 2))
        others.append(_make_order(rng, f"ORD-{oid}", other_status, other_days, other_products, address))
    return order, others


def _items_phrase(items: list[dict]) -> str:
    return " and ".join(f"{i['quantity']} x {i['name']}" for i in items)


def _scenario_message(
    issue: str, variant: str, order: dict, ref: str, refund_items: list[dict], new_address: dict | None
) -> str:
    """The customer's message; `ref` names the order (its id, or a product in it)."""
    if issue == "refund":
        phrase = _items_phrase(refund_items)
        if variant == "damaged":
            return f"Hi, {ref} arrived today but {phrase} came damaged. Could I get a refund for those?"
        if variant == "wrong_item":
            return f"Hello, in {ref} I was sent the wrong thing instead of {phrase}. Please refund me for it."
        return f"Hi, I've changed my mind about {phrase} from {ref}. It's unused; I'd like a refund please."
    if issue == "address_change":
        a = new_address or {}
        return (
            f"Hi, I've just moved. Could you send {ref} to {a['street']}, {a['postcode']} {a['city']}, "
            f"{COUNTRY_NAMES[a['country']]} instead?"
        )
    if issue == "status_query":
        return f"Hello, I placed {ref} {order['placed_days_ago']} days ago and it still hasn't arrived. Where is it?"
    if variant == "duplicate_order":
        return f"Hi, I accidentally ordered twice. Please cancel {ref}, I only need the other one."
    return f"Hi, please cancel {ref}, I no longer need it."


def _pick_refund_items(rng: random.Random, order: dict, variant: str) -> list[dict]:
    """The lines (and quantities) the customer wants refunded; several only for damage."""
    count = 2 if variant == "damaged" and len(order["items"]) > 1 and rng.random() < 0.5 else 1
    lines = rng.sample(order["items"], count)
    return [{"sku": l["sku"], "name": l["name"], "quantity": rng.randint(1, l["quantity"])} for l in lines]


def _escalation_priority(customer: dict, sla_hours: int | str, opened_hours_ago: int) -> int | None:
    """Policy 6: the escalation priority a ticket needs, or None."""
    if customer["tier"] != "vip" or not isinstance(sla_hours, int) or opened_hours_ago <= sla_hours:
        return None
    return 1 if opened_hours_ago - sla_hours > VIP_URGENT_BREACH_HOURS else 2


def _expected(
    issue: str,
    variant: str,
    order: dict,
    refund_items: list[dict],
    new_address: dict | None,
    escalation_priority: int | None,
) -> dict[str, Any]:
    """What a correct resolution does; `submit_resolution` grades against this."""
    declined = variant.endswith("_declined")
    action, template = {
        "refund": ("refund", "refund_confirmation"),
        "address_change": ("update_shipping", "address_confirmation"),
        "status_query": ("none", "status_update"),
        "cancellation": ("cancel", "cancellation_confirmation"),
    }[issue]
    if declined:
        action, template = "none", "policy_decline"
    return {
        "action": action,
        "order_id": order["order_id"],
        "refund": (
            None
            if action != "refund"
            else {
                "items": [{"sku": i["sku"], "quantity": i["quantity"]} for i in refund_items],
                "reason": "changed_mind" if variant.startswith("changed_mind") else variant,
                "amount": round(sum(i["quantity"] * _price(order, i["sku"]) for i in refund_items), 2),
            }
        ),
        "address": new_address if action == "update_shipping" else None,
        "cancel_reason": variant if action == "cancel" else None,
        "reply_template": template,
        "tracking_number": order["tracking"]["number"] if issue == "status_query" else None,
        "escalation_priority": escalation_priority,
        "resolved": not declined,
    }


def _price(order: dict, sku: str) -> float:
    return next(i["price"] for i in order["items"] if i["sku"] == sku)


def _difficulty(mentions_order_id: bool, expected: dict) -> str:
    """easy / medium / hard from how many complications the ticket stacks up."""
    points = (
        (not mentions_order_id)
        + (expected["reply_template"] == "policy_decline")
        + (expected["escalation_priority"] is not None)
        + (expected["refund"] is not None and len(expected["refund"]["items"]) > 1)
    )
    return ["easy", "medium", "hard"][min(points, 2)]


def make_task(split: str, index: int) -> dict[str, Any]:
    """Generate task `index` of `split`, deterministically from its own seeded RNG."""
    rng = random.Random(SPLIT_SEEDS[split] * 100_003 + index)
    customer = _make_customer(rng)
    issue = rng.choice(sorted(SCENARIOS))
    variant = rng.choice(SCENARIOS[issue])
    status, min_days, max_days = ORDER_SETUP[(issue, variant)]
    order, other_orders = _make_orders(rng, status, rng.randint(min_days, max_days), _make_address(rng))

    refund_items = _pick_refund_items(rng, order, variant) if issue == "refund" else []
    new_address = _make_address(rng) if issue == "address_change" else None
    mentions_order_id = rng.random() < 0.6
    if mentions_order_id:
        ref = f"order {order['order_id']}"
    elif issue == "refund":
        ref = "my recent order"  # the products the message names identify it
    else:
        ref = f"my order with the {order['items'][0]['name']}"
    message = _scenario_message(issue, variant, order, ref, refund_items, new_address)

    # Legacy accounts have no SLA: the field is then the string "none", not an int.
    sla_hours: int | str = "none" if rng.random() < 0.15 else rng.choice([4, 8, 24, 48])
    opened_hours_ago = rng.randint(1, 80)
    expected = _expected(
        issue, variant, order, refund_items, new_address, _escalation_priority(customer, sla_hours, opened_hours_ago)
    )
    return {
        "ticket_id": f"{SPLIT_PREFIXES[split]}-{index + 1:04d}",
        "customer": customer,
        "issue": issue,
        "message": f"{message}\n\nThanks,\n{customer['name'].split()[0]}",
        "order": order,
        "other_orders": other_orders,
        "sla_hours": sla_hours,
        "opened_hours_ago": opened_hours_ago,
        "difficulty": _difficulty(mentions_order_id, expected),
        "expected": expected,
    }


@functools.cache
def _tasks(split: str) -> tuple[dict[str, Any], ...]:
    """All tasks of a split, generated once. Treat them as read-only."""
    return tuple(make_task(split, i) for i in range(SPLIT_SIZES[split]))


# --------------------------------------------------------------------------------------
# Tool parameter models
# --------------------------------------------------------------------------------------


def _order_id_field() -> Any:
    """The `order_id` field every order-scoped tool shares."""
    return Field(min_length=1, description="The order id, e.g. 'ORD-12345'.")


class SearchOrdersParams(BaseModel):
    query: str = Field(
        description="Text matched (case-insensitively) against order ids, SKUs and product "
        "names. An empty string matches every order."
    )
    status: OrderStatus | None = Field(None, description="Only return orders in this status.")
    limit: int = Field(10, ge=1, le=50, description="Maximum number of orders to return.")


class OrderRef(BaseModel):
    order_id: str = _order_id_field()


class Address(BaseModel):
    """A postal address."""

    street: str = Field(min_length=1, description="House number and street, e.g. '12 Mill Lane'.")
    city: str = Field(min_length=1, description="City or town.")
    postcode: str = Field(min_length=1, description="Postal code, in the country's usual format.")
    country: Country = Field(description="Destination country code.")


class UpdateShippingParams(BaseModel):
    order_id: str = _order_id_field()
    address: Address = Field(description="The new shipping address.")


class RefundItem(BaseModel):
    """One order line to refund."""

    sku: str = Field(min_length=1, description="The SKU of the order line, e.g. 'KB-101'.")
    quantity: int = Field(ge=1, description="How many units of the line to refund.")


class IssueRefundParams(BaseModel):
    order_id: str = _order_id_field()
    items: list[RefundItem] = Field(min_length=1, description="The order lines and quantities to refund.")
    reason: RefundReason = Field(description="Why the items are refunded.")
    note: str | None = Field(None, description="Optional internal note stored with the refund.")


class CancelOrderParams(BaseModel):
    order_id: str = _order_id_field()
    reason: CancelReason = Field(description="Why the order is cancelled.")


class ReplyTemplate(str, enum.Enum):
    """The reply template, chosen by what happened to the customer's request."""

    refund_confirmation = "refund_confirmation"
    address_confirmation = "address_confirmation"
    cancellation_confirmation = "cancellation_confirmation"
    status_update = "status_update"
    policy_decline = "policy_decline"


class SendReplyParams(BaseModel):
    order_id: str = _order_id_field()
    template: ReplyTemplate = Field(description="The reply template to send.")
    tracking_number: str | None = Field(None, description="Tracking number to include (status updates).")
    body: str | None = Field(None, description="Optional personal text appended to the template.")


class EscalateParams(BaseModel):
    priority: int = Field(ge=1, le=3, description="1 = urgent, 2 = high, 3 = normal.")
    reason: str = Field(min_length=1, description="Why the ticket needs a senior agent.")


class SubmitResolutionParams(BaseModel):
    summary: str = Field(description="One or two sentences on what was done for the customer.")
    resolved: bool = Field(description="True if the customer's request was fulfilled, false if declined.")


# --------------------------------------------------------------------------------------
# The environment
# --------------------------------------------------------------------------------------

#: Grade weights: the action taken dominates; reply, escalation and the resolved flag refine.
WEIGHTS = {"action": 0.5, "reply": 0.2, "escalation": 0.15, "resolved": 0.15}


def _text(text: str) -> ToolOutput:
    return ToolOutput(blocks=[TextBlock(text=text)])


def _json(obj: Any) -> ToolOutput:
    return _text(json.dumps(obj, indent=2))


class Helpdesk(Environment):
    """Resolve a customer-support ticket for an electronics web shop by following its policies."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:
        super().__init__(task_spec, secrets)
        # The session's own copy of the customer's orders: tools mutate it, the task stays intact.
        orders = [task_spec["order"], *task_spec["other_orders"]] if task_spec else []
        self.orders: dict[str, dict[str, Any]] = {o["order_id"]: copy.deepcopy(o) for o in orders}
        for order in self.orders.values():
            order["refunded"] = {}
        self.refunds: list[dict[str, Any]] = []
        self.address_changes: list[dict[str, Any]] = []
        self.cancellations: list[dict[str, Any]] = []
        self.replies: list[dict[str, Any]] = []
        self.escalations: list[dict[str, Any]] = []

    # -- tasks ---------------------------------------------------------------------

    @classmethod
    def list_splits(cls):
        return list(SPLIT_SIZES)

    @classmethod
    def list_tasks(cls, split: str):
        return list(_tasks(split))

    def get_prompt(self):
        spec = self.task_spec
        customer = spec["customer"]
        sla = spec["sla_hours"]
        sla_text = f"{sla} hours" if isinstance(sla, int) else "none (legacy account)"
        text = (
            f"Support ticket {spec['ticket_id']} (opened {spec['opened_hours_ago']} hours ago; SLA: {sla_text})\n"
            f"Customer: {customer['name']} <{customer['email']}>, {customer['customer_id']}, "
            f"tier: {customer['tier'].upper()}\n\n"
            f"Message:\n{spec['message']}\n\n"
            "You are a support agent for an electronics web shop. Resolve the ticket with the tools, "
            "following the shop policies (call list_policies). Reply to the customer with send_reply, "
            "then finish with submit_resolution."
        )
        return [TextBlock(text=text)]

    def list_task_tools(self) -> ListToolsOutput:
        """Only VIP tickets may be escalated, so only they are offered `escalate`."""
        if self.task_spec.get("customer", {}).get("tier") != "vip":
            return ListToolsOutput(tools=[])
        spec = ToolSpec(
            name="escalate",
            description=(Helpdesk.escalate.__doc__ or "").strip(),
            input_schema=EscalateParams.model_json_schema(),
        )
        return ListToolsOutput(tools=[spec])

    # -- read-only tools -------------------------------------------------------------

    @tool
    def list_policies(self) -> ToolOutput:
        """Return the shop's support policies: refunds, address changes, cancellations, replies, escalation."""
        return _text(POLICIES)

    @tool
    def search_orders(self, params: SearchOrdersParams) -> ToolOutput:
        """Search the customer's orders.

        Args:
            query: Text matched against order ids, SKUs and product names ("" matches all).
            status: Only orders in this status, if given.
            limit: At most this many results.

        Returns:
            A JSON list of order summaries (id, status, age, product names), newest first.
        """
        needle = params.query.strip().casefold()
        hits = [
            o
            for o in sorted(self.orders.values(), key=lambda o: o["placed_days_ago"])
            if (params.status is None or o["status"] == params.status) and needle in _search_text(o)
        ]
        return _json([_summary(o) for o in hits[: params.limit]])

    @tool
    def get_order(self, params: OrderRef) -> ToolOutput:
        """Fetch one order in full: lines, refunds, status, age, shipping address and tracking.

        Args:
            order_id: The order to fetch.
        """
        order = self.orders.get(params.order_id)
        if order is None:
            return _text(f"error: no order {params.order_id!r} for this customer")
        return _json(order)

    # -- actions -------------------------------------------------------------------

    @tool
    def update_shipping(self, params: UpdateShippingParams) -> ToolOutput:
        """Change the shipping address of an order that has not shipped yet.

        Args:
            order_id: The order to re-route.
            address: The new address; the country is an ISO code such as "DE".
        """
        order = self.orders.get(params.order_id)
        if order is None:
            return _text(f"error: no order {params.order_id!r} for this customer")
        if order["status"] != "processing":
            return _text(f"error: order {order['order_id']} is {order['status']}; its address can no longer change")
        address = params.address.model_dump(mode="json")
        order["shipping_address"] = address
        self.address_changes.append({"order_id": order["order_id"], "address": address})
        return _text(f"Shipping address of {order['order_id']} updated.")

    @tool
    def issue_refund(self, params: IssueRefundParams) -> ToolOutput:
        """Refund some lines of a delivered order to the customer's original payment method.

        Each item names an order line by SKU and how many of its units to refund; a line can
        never be refunded beyond the quantity ordered, across all refunds of the order. The
        refund is recorded immediately and cannot be undone, so check the policies first.

        Args:
            order_id: The order to refund.
            items: The lines and quantities to refund.
            reason: Why; must match what the customer reported.
            note: Optional internal note.

        Returns:
            The refunded amount, or an error when the refund is impossible.
        """
        order = self.orders.get(params.order_id)
        if order is None:
            return _text(f"error: no order {params.order_id!r} for this customer")
        if order["status"] != "delivered":
            return _text(f"error: order {order['order_id']} is {order['status']}; only delivered orders are refunded")
        wanted: dict[str, int] = {}
        for item in params.items:
            wanted[item.sku] = wanted.get(item.sku, 0) + item.quantity
        lines = {line["sku"]: line for line in order["items"]}
        for sku, quantity in wanted.items():
            if sku not in lines:
                return _text(f"error: order {order['order_id']} has no line with SKU {sku!r}")
            left = lines[sku]["quantity"] - order["refunded"].get(sku, 0)
            if quantity > left:
                return _text(f"error: only {left} unit(s) of {sku} can still be refunded")
        for sku, quantity in wanted.items():
            order["refunded"][sku] = order["refunded"].get(sku, 0) + quantity
        amount = round(sum(q * lines[s]["price"] for s, q in wanted.items()), 2)
        self.refunds.append(
            {
                "order_id": order["order_id"],
                "items": wanted,
                "reason": params.reason,
                "amount": amount,
                "note": params.note,
            }
        )
        return _text(f"Refunded {amount:.2f} on {order['order_id']}.")

    @tool
    def cancel_order(self, params: CancelOrderParams) -> ToolOutput:
        """Cancel an order that has not shipped yet (the payment is released automatically).

        Args:
            order_id: The order to cancel.
            reason: Why it is cancelled.
        """
        order = self.orders.get(params.order_id)
        if order is None:
            return _text(f"error: no order {params.order_id!r} for this customer")
        if order["status"] != "processing":
            return _text(f"error: order {order['order_id']} is {order['status']}; it can no longer be cancelled")
        order["status"] = "cancelled"
        self.cancellations.append({"order_id": order["order_id"], "reason": params.reason})
        return _text(f"Order {order['order_id']} cancelled.")

    @tool
    def send_reply(self, params: SendReplyParams) -> ToolOutput:
        """Email the customer a templated reply about one of their orders.

        Args:
            order_id: The order the reply is about.
            template: Which template to send.
            tracking_number: Tracking number to quote, for status updates.
            body: Optional personal text.
        """
        if params.order_id not in self.orders:
            return _text(f"error: no order {params.order_id!r} for this customer")
        self.replies.append(
            {
                "order_id": params.order_id,
                "template": params.template.value,
                "tracking_number": params.tracking_number,
                "body": params.body,
            }
        )
        return _text(f"Reply '{params.template.value}' sent to {self.task_spec['customer']['email']}.")

    @tool(shared=False)
    def escalate(self, params: EscalateParams) -> ToolOutput:
        """Escalate the ticket to a senior agent (VIP tickets only).

        Args:
            priority: 1 (urgent) to 3 (normal).
            reason: Why the ticket is escalated.
        """
        if self.task_spec["customer"]["tier"] != "vip":
            return _text("error: only VIP tickets can be escalated")
        self.escalations.append({"priority": params.priority, "reason": params.reason})
        return _text(f"Ticket escalated with priority {params.priority}.")

    # -- grading -------------------------------------------------------------------

    @tool(exclusive=True)
    def submit_resolution(self, params: SubmitResolutionParams) -> ToolOutput:
        """Close the ticket and grade the session. Ends the episode.

        Args:
            summary: What was done for the customer.
            resolved: Whether the customer's request was fulfilled (false when declined).

        Returns:
            A reward in [0, 1]: 0.5 for the right action (and no wrong ones), 0.2 for the
            right reply, 0.15 for the right escalation decision, 0.15 for the resolved flag.
        """
        checks = grade(self.task_spec["expected"], self.state(), params.resolved)
        reward = round(sum(WEIGHTS[name] for name, ok in checks.items() if ok), 4)
        lines = [f"{name}: {'ok' if ok else 'wrong'}" for name, ok in checks.items()]
        return ToolOutput(
            blocks=[TextBlock(text=f"Ticket closed. Reward {reward}.\n" + "\n".join(lines))],
            metadata={"checks": checks, "summary": params.summary},
            reward=reward,
            finished=True,
        )

    def state(self) -> dict[str, list[dict[str, Any]]]:
        """What the session did so far, as the grader sees it."""
        return {
            "refunds": self.refunds,
            "address_changes": self.address_changes,
            "cancellations": self.cancellations,
            "replies": self.replies,
            "escalations": self.escalations,
        }


def _search_text(order: dict) -> str:
    parts = [order["order_id"]] + [f"{i['sku']} {i['name']}" for i in order["items"]]
    return " ".join(parts).casefold()


def _summary(order: dict) -> dict[str, Any]:
    return {
        "order_id": order["order_id"],
        "status": order["status"],
        "placed_days_ago": order["placed_days_ago"],
        "products": [i["name"] for i in order["items"]],
    }


# --------------------------------------------------------------------------------------
# Grading (pure functions of the expected block and the session state)
# --------------------------------------------------------------------------------------


def grade(expected: dict, state: dict, resolved: bool) -> dict[str, bool]:
    """Check each part of the resolution; the keys are those of `WEIGHTS`."""
    return {
        "action": _action_ok(expected, state),
        "reply": _reply_ok(expected, state["replies"]),
        "escalation": _escalation_ok(expected["escalation_priority"], state["escalations"]),
        "resolved": resolved == expected["resolved"],
    }


def _action_ok(expected: dict, state: dict) -> bool:
    """The expected action happened exactly (it may be split over calls), and nothing else."""
    oid = expected["order_id"]
    taken = {
        "refund": bool(state["refunds"]),
        "update_shipping": bool(state["address_changes"]),
        "cancel": bool(state["cancellations"]),
    }
    if any(done for action, done in taken.items() if action != expected["action"]):
        return False
    if expected["action"] == "refund":
        want = {oid: {i["sku"]: i["quantity"] for i in expected["refund"]["items"]}}
        return _refund_totals(state["refunds"]) == want and all(
            r["reason"] == expected["refund"]["reason"] for r in state["refunds"]
        )
    if expected["action"] == "update_shipping":
        changes = state["address_changes"]
        return (
            bool(changes)
            and all(c["order_id"] == oid for c in changes)
            and _same_address(changes[-1]["address"], expected["address"])
        )
    if expected["action"] == "cancel":
        return [(c["order_id"], c["reason"]) for c in state["cancellations"]] == [(oid, expected["cancel_reason"])]
    return True


def _refund_totals(refunds: list[dict]) -> dict[str, dict[str, int]]:
    totals: dict[str, dict[str, int]] = {}
    for refund in refunds:
        per_order = totals.setdefault(refund["order_id"], {})
        for sku, quantity in refund["items"].items():
            per_order[sku] = per_order.get(sku, 0) + quantity
    return totals


def _same_address(got: dict, want: dict) -> bool:
    norm = lambda s: " ".join(str(s).split()).casefold()  # noqa: E731
    return all(norm(got[k]) == norm(want[k]) for k in ("street", "city", "postcode", "country"))


def _reply_ok(expected: dict, replies: list[dict]) -> bool:
    """The last reply is about the ticket's order, uses the right template, quotes tracking if needed."""
    if not replies:
        return False
    last = replies[-1]
    tracking = expected["tracking_number"]
    return (
        last["order_id"] == expected["order_id"]
        and last["template"] == expected["reply_template"]
        and (tracking is None or (last["tracking_number"] or "").strip() == tracking)
    )


def _escalation_ok(priority: int | None, escalations: list[dict]) -> bool:
    if priority is None:
        return not escalations
    return bool(escalations) and escalations[-1]["priority"] == priority


# --------------------------------------------------------------------------------------
# Reference solution
# --------------------------------------------------------------------------------------


def scripted_solution(task_spec: dict) -> list[tuple[str, dict]]:
    """The tool calls (wire name, JSON arguments) that resolve the task perfectly (reward 1.0)."""
    expected = task_spec["expected"]
    oid = expected["order_id"]
    calls: list[tuple[str, dict]] = []
    if oid not in task_spec["message"]:  # the customer named a product, not the order
        calls.append(("search_orders", {"query": task_spec["order"]["items"][0]["name"]}))
    calls.append(("get_order", {"order_id": oid}))

    action = expected["action"]
    if action == "refund":
        refund = expected["refund"]
        calls.append(("issue_refund", {"order_id": oid, "items": refund["items"], "reason": refund["reason"]}))
    elif action == "update_shipping":
        calls.append(("update_shipping", {"order_id": oid, "address": expected["address"]}))
    elif action == "cancel":
        calls.append(("cancel_order", {"order_id": oid, "reason": expected["cancel_reason"]}))

    reply: dict[str, Any] = {"order_id": oid, "template": expected["reply_template"]}
    if expected["tracking_number"] is not None:
        reply["tracking_number"] = expected["tracking_number"]
    calls.append(("send_reply", reply))
    if expected["escalation_priority"] is not None:
        calls.append(("escalate", {"priority": expected["escalation_priority"], "reason": "VIP SLA breached"}))
    summary = f"{task_spec['issue']} on {oid}: {expected['reply_template']}"
    calls.append(("submit_resolution", {"summary": summary, "resolved": expected["resolved"]}))
    return calls


if __name__ == "__main__":
    from orlgen.serve import main

    main(["examples.helpdesk:Helpdesk", *sys.argv[1:]])
