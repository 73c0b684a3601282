"""OR, AND, NOT and parentheses: in the Python condition (``{"or": [...]}``), in the
``--where`` grammar (precedence not > and > or, backquoted names), on SQLite and PostgreSQL
with the Python semantics as the reference, and never a silent change of meaning."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.runs import write_run
from trainledger.cli.main import cli
from trainledger.errors import LineageSearchConditionParamError
from trainledger.query import LineageIndex, filter_summary_lineage, parse_where
from trainledger.query.conditions import validate_condition
from trainledger.query.semantics import evaluate
from trainledger.server.condition_merge import merge_conditions

ADAM, LR = {"optimizer": {"eq": "Adam"}}, {"learning_rate": {"lt": 0.01}}


@pytest.mark.parametrize(
    ("where", "condition"),
    [
        ("optimizer = Adam or learning_rate < 0.01", {"or": [ADAM, LR]}),
        ("optimizer = Adam OR learning_rate<0.01", {"or": [ADAM, LR]}),
        ("not optimizer = Adam", {"not": ADAM}),
        ("optimizer not in [Adam]", {"optimizer": {"not_in": ["Adam"]}}),
        ("not optimizer in [Adam]", {"not": {"optimizer": {"in": ["Adam"]}}}),
        (  # and binds tighter than or
            "optimizer = Adam or learning_rate < 0.01 and epoch = 2",
            {"or": [ADAM, {"learning_rate": {"lt": 0.01}, "epoch": {"eq": 2}}]},
        ),
        (  # parentheses first, then not before and
            "not (optimizer = Adam or learning_rate < 0.01) and epoch = 2",
            {"not": {"or": [ADAM, LR]}, "epoch": {"eq": 2}},
        ),
        (
            "(optimizer = Adam or epoch = 1) and (learning_rate < 0.01 or epoch = 2)",
            {"or": [ADAM, {"epoch": {"eq": 1}}], "and": [{"or": [LR, {"epoch": {"eq": 2}}]}]},
        ),
        ("optimizer = 'or'", {"optimizer": {"eq": "or"}}),  # a keyword, quoted, is a value
        ("`user_defined/my key` = 'a b'", {"user_defined/my key": {"eq": "a b"}}),
        (
            "max(eval/acc) > 0.9 or (min(loss) < 0.1)",
            {"or": [{"max(eval/acc)": {"gt": 0.9}}, {"min(loss)": {"lt": 0.1}}]},
        ),
        ("`max(top-1 (val))` >= 0.5", {"max(top-1 (val))": {"ge": 0.5}}),
        ("epoch >= 2 and epoch < 5", {"epoch": {"ge": 2, "lt": 5}}),  # one field, combined
    ],
)
def test_the_grammar(where: str, condition: dict[str, Any]) -> None:
    assert parse_where(where) == condition


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("team = a or b", "expected an operator after 'b'"),  # never "a or b" as one value
        ("optimizer = Adam SGD", "quote a value holding spaces: 'Adam SGD'"),
        ("optimizer = or", "quote a value that is a keyword"),
        ("(optimizer = Adam", "expected ')'"),
        ("optimizer = Adam)", "expected and, or or the end"),
        ("not", "expected a field name"),
        ("optimizer = Adam or", "expected a field name"),
        ("learning_rate >> 0.1", "unknown operator '>>'"),
        ("`user_defined/x = 1", "unterminated quote"),
        ("epoch = 1 and epoch = 2", "operator 'eq' given twice"),
        ("epoch ] 2", "unexpected ']'"),  # (a character no token starts with)
    ],
)
def test_grammar_errors_say_what_was_expected(where: str, says: str) -> None:
    with pytest.raises(LineageSearchConditionParamError, match=re.escape(says)):
        parse_where(where)


@pytest.mark.parametrize(
    ("condition", "says"),
    [
        ({"or": {"optimizer": {"eq": "Adam"}}}, "The or expected a non-empty list"),
        ({"or": []}, "The or expected a non-empty list"),
        ({"not": [ADAM]}, "The not expected a condition"),
        ({"or": [ADAM, "epoch = 2"]}, "Each condition of or should be a dict"),
        ({"or": [ADAM, {}]}, "A condition of or is empty"),
        ({"or": [{"limit": 3}]}, "limit belongs to the top level"),
        ({"and": [{"epoch": {"eq": "two"}}]}, "The parameter epoch is invalid"),
        ({"or": [{"bogus": {"eq": 1}}]}, "The search attribute not supported"),
    ],
)
def test_bad_logic_is_refused_naming_the_problem(condition: Any, says: str) -> None:
    with pytest.raises(LineageSearchConditionParamError, match=says):
        validate_condition(condition)


def test_nesting_is_bounded() -> None:
    deep: dict[str, Any] = ADAM
    for _ in range(40):
        deep = {"not": deep}
    with pytest.raises(LineageSearchConditionParamError, match="nest at most 32"):
        validate_condition(deep)


def _base(tmp_path: Path) -> Path:
    for i, (optimizer, lr, epoch) in enumerate(
        [("Adam", 0.1, 1), ("SGD", 0.001, 2), ("SGD", 0.1, 3), ("Adam", 0.005, 2)]
    ):
        write_run(
            tmp_path, f"r{i}", optimizer=optimizer, learning_rate=lr, epoch=epoch, ts=1_800 + i
        )
    return tmp_path


@pytest.mark.parametrize(
    ("where", "runs"),
    [
        ("optimizer = Adam or learning_rate < 0.01", ["./r0", "./r1", "./r3"]),
        ("not (optimizer = Adam or learning_rate < 0.01)", ["./r2"]),
        ("(optimizer = SGD and epoch = 2) or epoch = 1", ["./r0", "./r1"]),
        ("not epoch in [1, 2] or summary_dir = r0", ["./r0", "./r2"]),
    ],
)
def test_answers_on_both_engines_agree_with_the_python_semantics(
    tmp_path: Path, index_url: str | None, where: str, runs: list[str]
) -> None:
    cond = parse_where(where, sort="summary_dir")
    with LineageIndex(_base(tmp_path), index=index_url) as index:
        answer = index.query(cond)
        assert [o["summary_dir"] for o in answer["object"]] == runs
        assert answer == evaluate(index.records(), index._resolve_all(validate_condition(cond)))


def test_the_cli_and_the_api(tmp_path: Path) -> None:
    base = _base(tmp_path)
    found = filter_summary_lineage(str(base), {"or": [ADAM, LR], "sorted_name": "summary_dir"})
    assert [o["summary_dir"] for o in found["object"]] == ["./r0", "./r1", "./r3"]
    result = CliRunner().invoke(
        cli,
        ["lineage", str(base), "-w", "optimizer = Adam or learning_rate < 0.01", "-f", "json"],
    )
    assert result.exit_code == 0, result.output
    assert '"count": 3' in result.output
    bad = CliRunner().invoke(cli, ["lineage", str(base), "-w", "optimizer = Adam or SGD"])
    assert bad.exit_code != 0 and "expected an operator after 'SGD'" in bad.output


def test_the_ui_merges_two_ors_as_and() -> None:
    merged = merge_conditions({"or": [ADAM, LR]}, {"or": [{"epoch": {"eq": 2}}]})
    assert merged == {"or": [ADAM, LR], "and": [{"or": [{"epoch": {"eq": 2}}]}]}


# -- issue 49 item 7: conditions of any shape --------------------------------------------------

DEEP = 10_000


@pytest.mark.parametrize(
    "where",
    [
        "(" * DEEP + "epoch = 1" + ")" * DEEP,
        "not " * DEEP + "epoch = 1",
        "not (" * DEEP + "epoch = 1" + ")" * DEEP,
        "(" * 20 + "not " * 13 + "epoch = 1" + ")" * 20,  # 33 levels, of both kinds
    ],
)
def test_deep_parentheses_are_refused_naming_the_limit(tmp_path: Path, where: str) -> None:
    with pytest.raises(LineageSearchConditionParamError, match="nest at most 32 levels"):
        parse_where(where)
    result = CliRunner().invoke(cli, ["lineage", str(_base(tmp_path)), "-w", where])
    assert result.exit_code != 0 and "nest at most 32 levels" in result.output
    assert not isinstance(result.exception, RecursionError) and "Traceback" not in result.output


def test_32_levels_of_parentheses_and_not_are_still_answered(tmp_path: Path) -> None:
    where = "(" * 16 + "not " * 16 + "epoch = 1" + ")" * 16
    assert parse_where(where) == _nots(16, {"epoch": {"eq": 1}})
    side_by_side = " and ".join(["not epoch = 1"] * 40)  # 40 nots, each one level deep
    found = filter_summary_lineage(str(_base(tmp_path)), parse_where(side_by_side))
    assert sorted(o["summary_dir"] for o in found["object"]) == ["./r1", "./r2", "./r3"]


def _nots(n: int, cond: dict[str, Any]) -> dict[str, Any]:
    for _ in range(n):
        cond = {"not": cond}
    return cond


def test_a_deeply_nested_python_condition_is_refused_before_any_recursion(tmp_path: Path) -> None:
    deep = _nots(DEEP, dict(ADAM))
    with pytest.raises(LineageSearchConditionParamError, match="nest at most 32 levels"):
        filter_summary_lineage(str(_base(tmp_path)), deep)
    lists: Any = 1
    for _ in range(DEEP):
        lists = [lists]
    with pytest.raises(LineageSearchConditionParamError, match="nest at most"):
        validate_condition({"epoch": {"in": lists}})


def _wide_base(tmp_path: Path) -> Path:
    for i in range(12):
        user = {f"k{j}": (i * j) % 7 for j in range(0, 80, 1 + i % 3)}
        write_run(tmp_path, f"r{i:02d}", epoch=i, learning_rate=0.001 * i, user=user, ts=1_800 + i)
    return tmp_path


def _agree(index: LineageIndex, cond: dict[str, Any]) -> list[str]:
    """The runs ``cond`` matches, checked against the Python reference evaluator."""
    cond = {**cond, "sorted_name": "summary_dir"}
    answer = index.query(cond)
    assert answer == evaluate(index.records(), index._resolve_all(validate_condition(cond)))
    return [o["summary_dir"] for o in answer["object"]]


def test_long_ors_wide_ands_and_long_lists_answer_as_the_python_semantics(
    tmp_path: Path, index_url: str | None
) -> None:
    with LineageIndex(_wide_base(tmp_path), index=index_url) as index:
        # a 1,000-term or ("Expression tree is too large" on SQLite)
        where = " or ".join(f"epoch = {i}" for i in range(3, 1003))
        assert _agree(index, parse_where(where)) == [f"./r{i:02d}" for i in range(3, 12)]
        # 1,000 terms of custom values inside an or, and a 2,000-term and
        terms = [{f"user_defined/k{j % 80}": {"eq": j % 7}} for j in range(1000)]
        assert _agree(index, {"or": terms})
        assert _agree(index, {"and": [{"epoch": {"ge": j % 5}} for j in range(2000)]})
        # 80 custom fields ANDed at the top level ("at most 64 tables in a join" on SQLite)
        wide = {f"user_defined/k{j}": {"ge": 0} for j in range(80)}
        assert _agree(index, wide) == ["./r00", "./r03", "./r06", "./r09"]
        # the longest in list accepted, on a run column and on a custom value
        values: list[Any] = [*range(10_000 - 2), "r", None]
        assert len(_agree(index, {"epoch": {"in": values}})) == 12
        assert _agree(index, {"user_defined/k3": {"not_in": values}}) == []


@pytest.mark.parametrize(
    "condition",
    [
        {"epoch": {"in": list(range(40_000))}},  # SQLite's bind limit
        {"summary_dir": {"in": [f"./r{i}" for i in range(70_000)]}},  # PostgreSQL's
        {"or": [{"user_defined/k1": {"in": list(range(100))}} for _ in range(101)]},
    ],
)
def test_more_values_than_the_limit_are_refused_alike_on_both_engines(
    tmp_path: Path, index_url: str | None, condition: dict[str, Any]
) -> None:
    with LineageIndex(_base(tmp_path), index=index_url) as index:
        with pytest.raises(LineageSearchConditionParamError, match="at most 10000 values"):
            index.query(condition)
