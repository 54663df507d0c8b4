"""τ³'s banking_knowledge suite: its tasks, retrieval configurations, discoverable tools, and the oracle/null sweeps.

Every test needs τ³'s data beside the repository (``../shared/peers/tau2-bench/banking_knowledge``) and skips
without it.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any

import pytest

from simulator import Runner, RunSpec, ToolContext, get_domain
from simulator.agents import NullAgent, OracleAgent
from simulator.execution.build import build_runner
from simulator.users import scripted_user_factory
from simulator.world.domain import DomainError
from simulator.world.replay import prepare_trial
from tests._support.peers import TAU2

BANK = TAU2 / "banking_knowledge"
pytestmark = pytest.mark.skipif(not (BANK / "tasks.json").is_file(),
                                reason=f"tau2-bench banking_knowledge data absent ({BANK})")
OFFLINE = ["bm25", "bm25_grep", "grep_only", "full_kb", "golden_retrieval", "no_knowledge"]


@pytest.fixture(scope="module")
def raw_tasks() -> list[dict[str, Any]]:
    return json.loads((BANK / "tasks.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def domain():
    return get_domain("banking_knowledge")


def test_tasks_load_with_their_reward_bases(domain, raw_tasks):
    tasks = domain.load_tasks()
    assert [t.id for t in tasks] == [t["id"] for t in raw_tasks]
    assert len(tasks) == 97
    expected = Counter(tuple(t["evaluation_criteria"]["reward_basis"]) for t in raw_tasks)
    assert expected == Counter({("DB",): 88, ("ACTION",): 9})  # the peer file as read by hand
    got = Counter(tuple(sorted(c for c in t.grade if c)) for t in tasks)
    assert got == Counter({("state",): 88, ("actions",): 9})


def _sweep(agent: Any, retrieval: str) -> list[Any]:
    domain = get_domain("banking_knowledge")
    tasks = domain.load_tasks()
    cfg = RunSpec(domain="banking_knowledge", options={"retrieval": retrieval}, concurrency=1)
    return Runner(domain, domain.template(None, {"retrieval": retrieval}), tasks, agent, scripted_user_factory(),
                  cfg).run().trials


@pytest.mark.parametrize("retrieval", OFFLINE)
def test_oracle_passes_every_task_with_each_offline_configuration(retrieval):
    results = _sweep(OracleAgent, retrieval)
    assert len(results) == 97
    assert [r.task_id for r in results if not r.passed] == []


def test_the_oracle_and_scripted_user_make_the_gold_calls_in_the_gold_order(raw_tasks):
    """Both sides' calls together are the gold's, in order (task_081: the user's four transfer requests come two at
    the start and two before the agent's final transfer, which is made)."""
    gold = {t["id"]: [a["name"] for a in t["evaluation_criteria"]["actions"]] for t in raw_tasks}
    made = {r.task_id: [c.name for c in r.trajectory.tool_calls] for r in _sweep(OracleAgent, "no_knowledge")}
    assert {k for k in gold if made[k] != gold[k]} == set()


def test_the_do_nothing_agent_fails_every_task(raw_tasks):
    """Every task's basis needs an action: a DB task's gold changes the state (a write, a logged call), an ACTION
    task names the calls to make. So the null agent passes none."""
    writes = {"log_verification", "change_user_email", "call_discoverable_agent_tool", "give_discoverable_user_tool",
              "apply_for_credit_card", "submit_referral", "submit_transaction", "call_discoverable_user_tool",
              "request_human_agent_transfer"}
    for t in raw_tasks:
        names = {a["name"] for a in t["evaluation_criteria"]["actions"]}
        assert names & writes or t["evaluation_criteria"]["reward_basis"] == ["ACTION"], t["id"]
    results = _sweep(NullAgent, "bm25")
    assert [r.task_id for r in results if r.passed] == []


def test_refused_configurations_name_what_they_need(domain):
    from domains.banking_knowledge.knowledge import OFFLINE_REFUSED

    with pytest.raises(DomainError, match=r"retrieval=openai_embeddings: .*embeddings.*not available offline"):
        build_runner(RunSpec(domain="banking_knowledge", options={"retrieval": "openai_embeddings"}))
    with pytest.raises(DomainError, match=r"retrieval=bm25_reranker: .*reranks"):
        domain.toolbox_for({"retrieval": "bm25_reranker"})
    for name in OFFLINE_REFUSED:  # what it needs, said once: no "cannot be loaded offline, which cannot run offline"
        with pytest.raises(DomainError) as refused:
            domain.toolbox_for({"retrieval": name})
        needs = str(refused.value).split(";")[0]
        assert needs.count("offline") == 1 and needs.count("cannot") == 0, needs
    with pytest.raises(DomainError, match="allowed values"):
        domain.template(None, {"retrieval": "no_such"})


def test_each_configuration_offers_its_search_tools(domain):
    names = {r: {n for n in domain.toolbox_for({"retrieval": r}).specs if n in ("KB_search", "grep")}
             for r in OFFLINE}
    assert names == {"bm25": {"KB_search"}, "bm25_grep": {"KB_search", "grep"}, "grep_only": {"grep"},
                     "full_kb": set(), "golden_retrieval": set(), "no_knowledge": set()}


def _docs() -> list[dict[str, str]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((BANK / "documents").glob("*.json"))]


def test_bm25_ranks_as_okapi_bm25_by_hand():
    """The top documents and scores equal a direct computation of Okapi BM25 over whitespace tokens of the lower-cased
    contents (k1 = 1.5, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)), the factor (k1 + 1) kept, as τ³ scores);
    the query's words are each in fewer than half of the documents."""
    from domains.banking_knowledge.knowledge import knowledge_base

    docs = _docs()
    corpus = [d["content"].lower().split() for d in docs]
    n_docs, avg = len(corpus), sum(map(len, corpus)) / len(corpus)
    query = "close debit card lost stolen"
    scores = []
    for toks in corpus:
        tf = Counter(toks)
        s = 0.0
        for q in query.split():
            n = sum(1 for c in corpus if q in c)
            if n == 0 or q not in tf:
                continue
            idf = math.log((n_docs - n + 0.5) / (n + 0.5))
            s += idf * tf[q] * 2.5 / (tf[q] + 1.5 * (1 - 0.75 + 0.75 * len(toks) / avg))
        scores.append(s)
    top = sorted(range(n_docs), key=lambda i: -scores[i])[:3]
    text = knowledge_base(str(BANK)).bm25(query)
    ids = re.findall(r"^   ID: (.+)$", text, flags=re.M)
    got = [float(x) for x in re.findall(r"^   Score: (.+)$", text, flags=re.M)]
    assert ids[:3] == [docs[i]["id"] for i in top]
    assert got[:3] == pytest.approx([scores[i] for i in top], abs=1e-3)


def test_grep_counts_case_insensitive_matches():
    from domains.banking_knowledge.knowledge import knowledge_base

    docs = _docs()
    counts = sorted(((len(re.findall("overdraft", d["content"], flags=re.I)), d["id"]) for d in docs), reverse=True)
    text = knowledge_base(str(BANK)).grep("OVERDRAFT")
    first_id = re.findall(r"^   ID: (.+)$", text, flags=re.M)[0]
    first_score = float(re.findall(r"^   Score: (.+)$", text, flags=re.M)[0])
    assert first_score == counts[0][0] > 0
    assert first_id in {i for c, i in counts if c == counts[0][0]}
    assert knowledge_base(str(BANK)).grep("(unclosed").startswith(("1. ", "No matches"))  # searched literally


def test_prompts_hold_the_knowledge_they_promise(domain, raw_tasks):
    full = domain.policy_for(None, {"retrieval": "full_kb"})
    docs = _docs()
    assert all(f"## {d['title']}" in full for d in docs)
    runner = build_runner(RunSpec(domain="banking_knowledge", options={"retrieval": "golden_retrieval"},
                                  task_ids=["task_001"], preflight=False))
    task = runner.tasks[0]
    policy = runner.trial_context(task, 0).policy
    titles = {d["id"]: d["title"] for d in docs}
    required = raw_tasks[0]["required_documents"]
    assert required and all(f"## {titles[r]}" in policy for r in required)
    assert "{{required_documents}}" not in policy
    other = [d for d in docs if d["id"] not in required][0]
    assert f"## {other['title']}\n" not in policy
    none = domain.policy_for(None, {"retrieval": "no_knowledge"})
    assert "## " + docs[0]["title"] + "\n" not in none and "Rho-Bank" in none


def _trial(domain, task_id: str = "task_043"):
    task = next(t for t in domain.load_tasks() if t.id == task_id)
    template = domain.template()
    return task, template


def test_discoverable_tools_unlock_log_and_allowlist(domain):
    task, template = _trial(domain)  # its gold reads get_all_user_accounts_by_user_id_3847 (allowlisted), not
    # get_debit_cards_by_account_id_7823
    box = domain.toolbox_for(template.options)
    with template.trial() as db:
        prepare_trial(domain, db, task)
        ctx = ToolContext(db.session, db.options)

        def call(name: str, **args: Any) -> Any:
            return box.dispatch(ctx, name, args)

        def logged() -> list[str]:
            return sorted(json.loads(r[0])["tool_name"] for r in db.raw.execute(
                "SELECT doc FROM agent_discoverable_tools").fetchall())

        out = call("call_discoverable_agent_tool", agent_tool_name="get_debit_cards_by_account_id_7823",
                   arguments="{}")
        # τ³ answers its refusals as text, unflagged (probe_base_tools of the τ³ probe recording)
        assert out.status == "ok" and out.content.startswith(
            "Error: Tool 'get_debit_cards_by_account_id_7823' has not been unlocked.")
        unknown = call("unlock_discoverable_agent_tool", agent_tool_name="nope")
        assert (unknown.status, unknown.content) == (
            "ok", "Error: Unknown agent tool 'nope'. This tool is not available.")
        for name in ("get_debit_cards_by_account_id_7823", "get_all_user_accounts_by_user_id_3847",
                     "update_transaction_rewards_3847"):
            assert call("unlock_discoverable_agent_tool", agent_tool_name=name).status == "ok"
        assert logged() == []  # unlocking changes nothing compared
        user = next(a for a in task.gold_actions if a.name == "log_verification").arguments["user_id"]
        missing = call("call_discoverable_agent_tool", agent_tool_name="get_debit_cards_by_account_id_7823",
                       arguments=json.dumps({"account_id": "nope"}))
        assert missing.content.startswith("Error: Account 'nope' not found")  # answered, as τ³ answers
        assert logged() == []  # a read the gold does not make: not logged
        assert call("call_discoverable_agent_tool", agent_tool_name="get_all_user_accounts_by_user_id_3847",
                    arguments=json.dumps({"user_id": user})).status == "ok"
        assert logged() == ["get_all_user_accounts_by_user_id_3847"]  # a read the gold makes: logged
        bad = call("call_discoverable_agent_tool", agent_tool_name="update_transaction_rewards_3847",
                   arguments=json.dumps({"transaction_id": "x"}))
        # τ³ answers its method's TypeError as text, unflagged (its layout: task_083 of the τ³ reference data)
        assert (bad.status, bad.content) == ("ok", "Error: Invalid arguments: KnowledgeTools."
                                             "update_transaction_rewards_3847() missing 1 required positional "
                                             "argument: 'new_rewards_earned'")
        assert logged() == ["get_all_user_accounts_by_user_id_3847"]  # arguments that do not fit: not logged
        wrong = call("call_discoverable_agent_tool", agent_tool_name="update_transaction_rewards_3847",
                     arguments=json.dumps({"transaction_id": "nope", "new_rewards_earned": "5 points"}))
        assert wrong.content.startswith("Error: Transaction 'nope' not found")
        assert logged() == ["get_all_user_accounts_by_user_id_3847", "update_transaction_rewards_3847"]  # as τ³


CATASTROPHIC = r"((\w+\s?)+)*#"
"""Nested repetition that backtracks exponentially on every long run of words without a '#' (Python's re: hours)."""


def test_a_catastrophic_grep_pattern_is_a_tool_error_within_the_limit(domain, monkeypatch):
    from domains.banking_knowledge import knowledge

    monkeypatch.setattr(knowledge, "GREP_TIMEOUT", 0.2)
    task, template = _trial(domain)
    box = domain.toolbox_for(template.options)
    with template.trial() as db:
        prepare_trial(domain, db, task)
        ctx = ToolContext(db.session, db.options)
        out = box.dispatch(ctx, "grep", {"pattern": CATASTROPHIC})
        assert out.status == "tool_error"
        assert repr(CATASTROPHIC) in out.content and "0.2-second limit" in out.content
        after = box.dispatch(ctx, "grep", {"pattern": "overdraft"})  # the trial goes on: the next call answers
        assert after.status == "ok" and after.content.startswith("1. ")


@pytest.mark.parametrize("pattern", ["overdraft", "fee|charge", r"credit.*card", r"\d+\.\d+%", r"\bATM\b", "(unclosed",
                                     "x*", "^#+ ", r"(?:annual|monthly) fee", "$"])
def test_grep_counts_equal_python_re_counts(pattern):
    from domains.banking_knowledge.knowledge import knowledge_base

    try:  # τ³'s rule, done here by hand with re: a pattern re cannot compile is searched literally
        rx = re.compile(pattern, re.I)
    except re.error:
        rx = re.compile(re.escape(pattern), re.I)
    counts = [(len(rx.findall(d["content"])), d["id"]) for d in _docs()]
    want = [i for c, i in sorted((c, i) for c, i in counts if c)[::-1]]
    # the counts are compared here, not the time limit (test above): `x*` matches at every position, which takes
    # seconds on a loaded machine (past GREP_TIMEOUT while the suite runs in parallel); give it all the time it needs
    text = knowledge_base(str(BANK)).grep(pattern, timeout=600)
    got_ids = re.findall(r"^   ID: (.+)$", text, flags=re.M)
    got_scores = [float(s) for s in re.findall(r"^   Score: (.+)$", text, flags=re.M)]
    by_id = dict((i, c) for c, i in counts)
    assert got_scores == [by_id[i] for i in got_ids] == sorted((c for c, _ in counts if c), reverse=True)[:10]
    assert set(got_ids) <= set(want)
