"""A tau-bench-style booking desk: tools that change a database, and a verifier of the database they leave.

The agent serves one customer per episode. Its tools search flights, list the customer's bookings, book and
cancel; each changes (or reads) that episode's copy of the database. The episode ends when the agent answers
the customer, and what is scored is the database, not the words: it must equal the database the task's gold
actions produce from the same start (seats and who holds which flight; booking ids may differ).
docs/custom-envs.md walks through it::

    agentgym eval --import examples/booking_desk.py --env byo/BookingDesk-v0 --policy oracle
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import agentgym
from agentgym.core import EnvDefaults, TaskList
from agentgym.envs.functions import function_tool
from agentgym.errors import ToolError

# flight id -> its route, date, price and free seats; bookings: booking id -> who holds which flight
DATABASE: dict[str, Any] = {
    "flights": {
        "AG101": {"from": "SFO", "to": "JFK", "date": "2025-06-02", "departs": "08:00", "price": 420, "seats": 2},
        "AG102": {"from": "SFO", "to": "JFK", "date": "2025-06-02", "departs": "13:00", "price": 310, "seats": 0},
        "AG103": {"from": "SFO", "to": "JFK", "date": "2025-06-02", "departs": "19:00", "price": 350, "seats": 4},
        "AG201": {"from": "JFK", "to": "SFO", "date": "2025-06-05", "departs": "09:00", "price": 390, "seats": 5},
        "AG301": {"from": "SFO", "to": "SEA", "date": "2025-06-03", "departs": "07:00", "price": 150, "seats": 1},
        "AG302": {"from": "SFO", "to": "SEA", "date": "2025-06-03", "departs": "17:00", "price": 180, "seats": 6},
    },
    "bookings": {
        "BK1": {"customer": "ada", "flight": "AG201"},
        "BK2": {"customer": "grace", "flight": "AG301"},
        "BK3": {"customer": "alan", "flight": "AG101"},
    },
}

# Each task: the customer, their request, and the gold actions (tool calls) that fulfil it.
TASKS = [
    {"id": "ada-cheapest", "split": "test", "customer": "ada",
     "request": "Book me the cheapest flight from SFO to JFK on 2025-06-02 that still has a seat.",
     "actions": [("search_flights", "SFO JFK 2025-06-02"), ("book", "AG103")]},
    {"id": "grace-evening", "split": "test", "customer": "grace",
     "request": "Move my Seattle trip on 2025-06-03 to the evening flight, please.",
     "actions": [("my_bookings", ""), ("search_flights", "SFO SEA 2025-06-03"), ("cancel", "BK2"),
                 ("book", "AG302")]},
    {"id": "alan-cancel", "split": "test", "customer": "alan",
     "request": "I can't travel to New York any more; cancel that booking.",
     "actions": [("my_bookings", ""), ("cancel", "BK3")]},
    {"id": "ada-return", "split": "train", "customer": "ada",
     "request": "Cancel my return flight from JFK.", "actions": [("my_bookings", ""), ("cancel", "BK1")]},
    {"id": "linus-seattle", "split": "train", "customer": "linus",
     "request": "Put me on the first flight to Seattle on 2025-06-03.",
     "actions": [("search_flights", "SFO SEA 2025-06-03"), ("book", "AG301")]},
]


class Desk:
    """One episode's database and what the tools do to it, on behalf of ``customer``."""

    def __init__(self, customer: str) -> None:
        self.reset(customer)

    def reset(self, customer: str) -> None:
        """A fresh copy of the database, serving ``customer``."""
        self.customer = customer
        self.db = copy.deepcopy(DATABASE)
        self.next_booking = 100
        self.history: list[tuple[str, str]] = []  # the calls that succeeded, (tool, argument)

    def search_flights(self, query: str) -> str:
        """Find flights by origin, destination and date.

        Args:
            query: Airport codes and/or a date, e.g. "SFO JFK 2025-06-02".
        """
        words = query.upper().split()
        found = [f"{fid}: {f['from']}->{f['to']} {f['date']} {f['departs']}, ${f['price']}, free seats: {f['seats']}"
                 for fid, f in self.db["flights"].items()
                 if all(w in (f["from"], f["to"], f["date"]) for w in words)]
        self.history.append(("search_flights", query))
        return "\n".join(found) or "No flights match; search by airport codes (SFO) and a date (2025-06-02)."

    def my_bookings(self) -> str:
        """List the customer's bookings."""
        mine = [f"{bid}: flight {b['flight']}" for bid, b in self.db["bookings"].items()
                if b["customer"] == self.customer]
        self.history.append(("my_bookings", ""))
        return "\n".join(mine) or "No bookings."

    def book(self, flight_id: str) -> str:
        """Book a seat on a flight for the customer.

        Args:
            flight_id: The flight's id, e.g. AG101.
        """
        flight_id = flight_id.strip().upper()
        flight = self.db["flights"].get(flight_id)
        if flight is None:
            raise ToolError(f"no flight {flight_id!r}; search_flights lists the ids.")
        if flight["seats"] == 0:
            raise ToolError(f"flight {flight_id} is sold out.")
        flight["seats"] -= 1
        booking_id, self.next_booking = f"BK{self.next_booking}", self.next_booking + 1
        self.db["bookings"][booking_id] = {"customer": self.customer, "flight": flight_id}
        self.history.append(("book", flight_id))
        return f"Booked {flight_id}: booking {booking_id}."

    def cancel(self, booking_id: str) -> str:
        """Cancel one of the customer's bookings.

        Args:
            booking_id: The booking's id, e.g. BK1.
        """
        booking_id = booking_id.strip().upper()
        booking = self.db["bookings"].get(booking_id)
        if booking is None or booking["customer"] != self.customer:
            raise ToolError(f"{self.customer} has no booking {booking_id!r}; my_bookings lists them.")
        del self.db["bookings"][booking_id]
        self.db["flights"][booking["flight"]]["seats"] += 1
        self.history.append(("cancel", booking_id))
        return f"Cancelled {booking_id}."

    def state(self) -> dict[str, Any]:
        """What the verifier compares: free seats per flight, and who holds which flights (ids aside)."""
        holders = sorted((b["customer"], b["flight"]) for b in self.db["bookings"].values())
        return {"seats": {fid: f["seats"] for fid, f in self.db["flights"].items()}, "bookings": holders}


def verify_bookings(state: Mapping[str, Any] | None, task: Mapping[str, Any]) -> agentgym.Score:
    """1 if the final database ``state`` is the one the task's gold actions leave, else 0 (a pure function).

    >>> gold = {"customer": "alan", "actions": [("cancel", "BK3")]}
    >>> verify_bookings(Desk("alan").state(), gold).reward
    0.0
    """
    expected = Desk(task["customer"])
    for name, argument in task["actions"]:
        getattr(expected, name)(*([argument] if argument else []))
    wanted = expected.state()
    if state is None:
        return agentgym.Score(0.0, False, {"reason": "no final state"})
    wrong = sorted(key for key in wanted if wanted[key] != state.get(key))
    return agentgym.Score(float(not wrong), not wrong, {"differs": wrong})


class BookingDeskEnv(agentgym.AgentEnv[dict]):
    """A customer asks for a change to their flights; reward 1 if the database ends as the request needs."""

    defaults = EnvDefaults(max_turns=8)

    def __init__(self, **base: Any) -> None:
        tasks = TaskList(agentgym.Task(id=row["id"], prompt=row["request"], gold=row, split=row["split"])
                         for row in TASKS)
        self.desk = Desk("nobody")
        super().__init__(tasks=tasks, **base)

    # must: verify and oracle_action
    def verify(self, outcome: dict | None, task: agentgym.Task) -> agentgym.Score:
        return verify_bookings(outcome, task.gold)

    def oracle_action(self) -> str:
        # the gold actions in order, from where the desk's history of successful calls has got to
        actions = self.task.gold["actions"]
        done = len(self.desk.history)
        if done >= len(actions):
            return self.action_format.render_answer("Done: your bookings are updated.")
        name, argument = actions[done]
        arguments = {self.tools[name].primary_argument: argument} if argument else {}
        return self.action_format.render_call(agentgym.ToolCall(name, arguments), self.tools)

    # may: the rest
    def make_tools(self) -> Sequence[agentgym.Tool]:
        # the desk's bound methods: the schema comes from their hints and docstrings (as ToolEnv's tools)
        desk = self.desk
        return [function_tool(fn) for fn in (desk.search_flights, desk.my_bookings, desk.book, desk.cancel)]

    def on_reset(self, task: agentgym.Task) -> None:
        self.desk.reset(task.gold["customer"])  # a fresh copy of the database every episode

    def build_prompt(self, task: agentgym.Task) -> str:
        return (f"You are the booking desk of AgentGym Air, serving the customer {task.gold['customer']}. "
                f"Use the tools to do what they ask, then answer them.\n\nCustomer: {task.prompt}\n\n"
                f"{self.action_format.instructions(self.tools)}")

    def episode_outcome(self) -> dict | None:
        # the episode ends when the agent answers the customer; what is scored is the database it leaves
        return self.desk.state() if super().episode_outcome() is not None else None

    def default_outcome(self) -> dict | None:
        return self.desk.state()  # out of turns: the database as it is


agentgym.register("byo/BookingDesk-v0", BookingDeskEnv,
                  description="A tau-bench-style booking desk: search, book, cancel; reward = the final database.")
