"""Transaction mixes: which transactions a virtual user runs, and how often.

A transaction only issues statements, through the user's `Execute` (which keeps a prepared
statement per SQL text); the user opens and commits it, so that timing, error handling and the
ledger are the same for every kind. Write transactions receive the ledger id they must insert
in the same transaction.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from workloads.oltp.dialect import Statements
from workloads.oltp.schema import Scale

Execute = Callable[..., Any]  # (sql, *parameters) -> the cursor that ran it
Body = Callable[[Execute, Statements, random.Random, Scale, int], None]


@dataclass(frozen=True)
class TransactionKind:
    name: str
    writes: bool
    body: Body


@dataclass(frozen=True)
class Mix:
    name: str
    kinds: tuple[tuple[TransactionKind, float], ...]

    def __post_init__(self) -> None:
        if not self.kinds or any(weight <= 0 for _, weight in self.kinds):
            raise ValueError(f"mix {self.name}: needs kinds with positive weights")

    def picker(self) -> Callable[[random.Random], TransactionKind]:
        kinds = [kind for kind, _ in self.kinds]
        cumulative = list(accumulate(weight for _, weight in self.kinds))
        if len(kinds) == 1:
            return lambda rng: kinds[0]
        return lambda rng: rng.choices(kinds, cum_weights=cumulative)[0]


# pgbench's built-in TPC-B-like transaction, as (statement, parameter names); the history insert
# also writes the ledger row. Kept as data so a pgbench script can be rendered from the same steps.
TPCB_STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("update_account", ("delta", "aid")),
    ("select_account", ("aid",)),
    ("update_teller", ("delta", "tid")),
    ("update_branch", ("delta", "bid")),
    ("insert_history_and_ledger", ("ledger_id", "tid", "bid", "aid", "delta")),
)


_NAMES = ("aid", "bid", "tid", "delta", "ledger_id")
# TPCB_STEPS compiled once: (statement, positions of its parameters in _NAMES, returns rows)
_TPCB_PLAN = tuple((statement, tuple(_NAMES.index(n) for n in names), statement.startswith("select"))
                   for statement, names in TPCB_STEPS)


def tpcb(execute: Execute, sql: Statements, rng: random.Random, scale: Scale, ledger_id: int) -> None:
    randint = rng.randint
    values = (randint(1, scale.accounts), randint(1, scale.branches), randint(1, scale.tellers),
              randint(-5000, 5000), ledger_id)
    for statement, positions, returns_rows in _TPCB_PLAN:
        cursor = execute(getattr(sql, statement), *[values[i] for i in positions])
        if returns_rows:
            cursor.fetchall()


def customer_position(execute: Execute, sql: Statements, rng: random.Random, scale: Scale, ledger_id: int) -> None:
    """Read a customer's holdings: ten neighbouring accounts and their branch."""
    low = rng.randint(1, max(1, scale.accounts - 9))
    execute(sql.select_account_range, low, low + 9).fetchall()
    execute(sql.select_branch, (low - 1) // scale.accounts_per_branch + 1).fetchall()


def market_watch(execute: Execute, sql: Statements, rng: random.Random, scale: Scale, ledger_id: int) -> None:
    """An aggregate over a hundred accounts of one branch."""
    bid = rng.randint(1, scale.branches)
    first = (bid - 1) * scale.accounts_per_branch + 1
    low = rng.randint(first, first + max(0, scale.accounts_per_branch - 100))
    execute(sql.sum_branch_accounts, bid, low, low + 99).fetchall()


TPCB_KIND = TransactionKind("tpcb", True, tpcb)
TRADE_ORDER = TransactionKind("trade-order", True, tpcb)
TPCB = Mix("tpcb", ((TPCB_KIND, 1.0),))
TPCE_LIKE = Mix("tpce-like", (
    (TransactionKind("customer-position", False, customer_position), 45.0),
    (TransactionKind("market-watch", False, market_watch), 45.0),
    (TRADE_ORDER, 10.0),
))
MIXES = {mix.name: mix for mix in (TPCB, TPCE_LIKE)}
