import pytest

from simulator.world.tools import Toolbox, ToolContext, ToolError, tool
from tests._support.toy import BankDomain, write_data


@pytest.fixture()
def bank(tmp_path):
    dom = BankDomain()
    return dom, dom.template(write_data(tmp_path / "data"))


def balances(trial):
    return dict(trial.raw.execute("SELECT id, balance FROM accounts").fetchall())


def test_schema_from_signature_and_docstring():
    schema = {s["function"]["name"]: s["function"] for s in BankDomain().toolbox().schemas()}
    t = schema["transfer"]
    assert t["description"] == "Move money between two accounts."
    assert t["parameters"]["required"] == ["src", "dst", "amount"]
    assert t["parameters"]["properties"]["amount"] == {"type": "number", "description": "amount in USD, positive."}
    assert t["parameters"]["additionalProperties"] is False


def test_undocumented_parameter_is_refused():
    with pytest.raises(TypeError, match="not documented"):
        @tool("read")
        def f(ctx: ToolContext, x: int) -> str:
            """Do something."""
            return ""


def test_missing_docstring_is_refused():
    with pytest.raises(TypeError, match="docstring"):
        @tool("read")
        def f(ctx: ToolContext) -> str:
            return ""


def test_dispatch_statuses_and_rollback(bank):
    dom, tpl = bank
    tb = dom.toolbox()
    with tpl.trial() as t:
        ctx = ToolContext(t.session)
        ok = tb.dispatch(ctx, "transfer", {"src": "A1", "dst": "B2", "amount": 10})
        assert (ok.status, ok.content, ok.kind) == ("ok", "ok", "write")
        assert balances(t) == {"A1": 90.0, "B2": 35.0}
        # ToolError raised after a change: the change is rolled back
        err = tb.dispatch(ctx, "transfer", {"src": "A1", "dst": "B2", "amount": 1000})
        assert err.status == "tool_error" and err.content == "Error: insufficient funds"
        assert balances(t) == {"A1": 90.0, "B2": 35.0}
        bug = tb.dispatch(ctx, "explode", {"account_id": "A1"})
        assert bug.status == "tool_bug" and "KeyError" in (bug.bug or "")
        assert balances(t) == {"A1": 90.0, "B2": 35.0}
        unknown = tb.dispatch(ctx, "rob_bank", {})
        assert unknown.status == "unknown_tool" and unknown.content.startswith("Error:")
        bad = tb.dispatch(ctx, "transfer", {"src": "A1", "dst": "B2", "amount": "lots"})
        assert bad.status == "invalid_arguments" and "amount" in bad.content
        extra = tb.dispatch(ctx, "transfer", {"src": "A1", "dst": "B2", "amount": 1, "memo": "x"})
        assert extra.status == "invalid_arguments" and "memo" in extra.content
        missing = tb.dispatch(ctx, "transfer", {"src": "A1"})
        assert missing.status == "invalid_arguments" and "dst" in missing.content
        unparsable = tb.dispatch(ctx, "transfer", None)
        assert unparsable.status == "invalid_arguments"
        assert balances(t) == {"A1": 90.0, "B2": 35.0}
        assert tb.dispatch(ctx, "get_balance", {"account_id": "B2"}).content == '{"id": "B2", "balance": 35.0}'


def test_duplicate_tool_names_refused():
    from tests._support.toy import get_balance

    with pytest.raises(ValueError, match="duplicate"):
        Toolbox([get_balance, get_balance])


def _connection_toolbox():
    """Tools that use only ctx.conn (the DB-API connection), as the built-in domains' tools do."""

    @tool("write")
    def pay(ctx: ToolContext, account_id: str, amount: float) -> str:
        """Take money from an account, refusing to go below zero (after writing).

        Args:
            account_id: the account.
            amount: the amount taken.
        """
        ctx.conn.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, account_id))
        (left,) = ctx.conn.execute("SELECT balance FROM accounts WHERE id = ?", (account_id,)).fetchone()
        if left < 0:
            raise ToolError("insufficient funds")
        if amount == 13:
            raise KeyError("unlucky")
        return f"{left}"

    return Toolbox([pay], uses_session=False)


def test_dispatch_on_the_connection_commits_and_rolls_back(bank):
    _, tpl = bank
    tb = _connection_toolbox()
    with tpl.trial() as t:
        ctx = ToolContext(t.session)
        assert ctx.conn is t.raw
        assert tb.dispatch(ctx, "pay", {"account_id": "A1", "amount": 10}).content == "90.0"
        assert not t.raw.in_transaction  # committed
        err = tb.dispatch(ctx, "pay", {"account_id": "A1", "amount": 1000})
        assert (err.status, err.content) == ("tool_error", "Error: insufficient funds")
        bug = tb.dispatch(ctx, "pay", {"account_id": "A1", "amount": 13})
        assert bug.status == "tool_bug" and "KeyError" in (bug.bug or "")
        assert balances(t) == {"A1": 90.0, "B2": 25.0}
        bad = tb.dispatch(ctx, "pay", {"account_id": "A1", "amount": "x"})
        assert bad.status == "invalid_arguments"
        # inside a transaction the caller opened, a refused call rolls back to its savepoint only
        t.raw.execute("BEGIN")
        t.raw.execute("UPDATE accounts SET balance = 0 WHERE id = 'B2'")
        assert tb.dispatch(ctx, "pay", {"account_id": "A1", "amount": 1000}).status == "tool_error"
        assert tb.dispatch(ctx, "pay", {"account_id": "A1", "amount": 5}).status == "ok"
        assert t.raw.in_transaction
        t.raw.execute("COMMIT")
        assert balances(t) == {"A1": 85.0, "B2": 0.0}
