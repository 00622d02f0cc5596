"""Action formats: parsing, rendering round trips, and malformed input as errors (never exceptions)."""

import json

import pytest

from agentgym.core.formats import (DictFormat, HermesFormat, TagsFormat, ToolResult, check_calls, format_of,
                                   get_format)
from agentgym.core.tools import Tool, ToolCall
from agentgym.errors import ConfigError

SEARCH = Tool("search", "Search.", {"type": "object", "properties": {"query": {"type": "string"}},
                                     "required": ["query"]}, lambda query: f"results for {query}")
CALC = Tool("calc", "Calculate.", {"type": "object", "properties": {"expr": {"type": "string"},
                                                                     "digits": {"type": "integer"}},
                                    "required": ["expr"]}, lambda expr, digits=2: expr)
TOOLS = {"search": SEARCH, "calc": CALC}


def test_tags_parses_first_action_and_ignores_think():
    text = "<think>maybe <answer>no</answer></think> I will <search> capital of Peru </search><answer>Lima</answer>"
    parsed = TagsFormat().parse(text, TOOLS)
    assert parsed.error is None
    assert parsed.tool_calls == (ToolCall("search", {"query": "capital of Peru"}),)
    assert not parsed.is_final


def test_tags_answer_is_final_and_stripped():
    parsed = TagsFormat().parse("<think>easy</think><answer>  Lima </answer>", TOOLS)
    assert parsed.is_final and parsed.answer == "Lima"


@pytest.mark.parametrize("text", ["", "just prose", "<search>unclosed", "<unknown>x</unknown>",
                                  "<Search>x</Search>", "<search></search>"])
def test_tags_malformed_is_error_with_help(text):
    parsed = TagsFormat().parse(text, TOOLS)
    assert parsed.error and not parsed.tool_calls and parsed.answer is None
    assert "<search>" in parsed.error


def test_tags_non_string_action_is_error():
    assert "text" in TagsFormat().parse(123, TOOLS).error


def test_hermes_parses_several_calls_and_string_arguments():
    text = ('<tool_call>\n{"name": "search", "arguments": {"query": "Lima"}}\n</tool_call>'
            '<tool_call>{"name": "calc", "arguments": "{\\"expr\\": \\"1+1\\"}"}</tool_call>')
    parsed = HermesFormat().parse(text, TOOLS)
    assert parsed.error is None
    assert [c.name for c in parsed.tool_calls] == ["search", "calc"]
    assert parsed.tool_calls[1].arguments == {"expr": "1+1"}


def test_hermes_without_call_is_final_answer():
    assert HermesFormat().parse("<think>x</think>The answer is <answer>Lima</answer>", TOOLS).answer == "Lima"
    assert HermesFormat().parse("Lima", TOOLS).answer == "Lima"


@pytest.mark.parametrize("text, fragment", [
    ("<tool_call>{not json}</tool_call>", "not valid JSON"),
    ("<tool_call>[1, 2]</tool_call>", "JSON object"),
    ('<tool_call>{"arguments": {}}</tool_call>', "name"),
    ('<tool_call>{"name": "search", "arguments": 5}</tool_call>', "JSON object"),
    ('<tool_call>{"name": "search"', "Unclosed"),
])
def test_hermes_malformed(text, fragment):
    parsed = HermesFormat().parse(text, TOOLS)
    assert parsed.error and fragment in parsed.error


def test_plain_reads_the_line_after_the_last_action_marker():
    fmt = get_format("plain")
    text = "<think>Action: answer no</think>Thought: Peru.\nAction: answer wrong\nAction:\n  Search  capital,  of Peru \nx"
    assert fmt.parse(text, TOOLS).tool_calls == (ToolCall("search", {"query": "capital, of Peru"}),)
    assert fmt.parse("answer Lima", TOOLS).answer == "Lima"  # the marker is optional
    assert fmt.parse(fmt.render_answer(""), TOOLS).is_final  # an empty answer is an answer (it scores 0)
    assert fmt.render_call(ToolCall("search", {"query": "a\nb"}), TOOLS) == "Action: search a b"
    assert "text" in fmt.parse(7, TOOLS).error


@pytest.mark.parametrize("text", ["", "Action:", "just prose", "<search>Lima</search>", "Action: look around",
                                  "Action: search"])
def test_plain_malformed_is_error_with_help(text):
    parsed = get_format("plain").parse(text, TOOLS)
    assert parsed.error and not parsed.tool_calls and parsed.answer is None
    assert "search" in parsed.error


def test_check_calls_unknown_tool_and_bad_arguments():
    fmt = DictFormat()
    assert "Unknown tool 'browse'" in check_calls(fmt.parse({"name": "browse", "arguments": {}}, TOOLS), TOOLS).error
    bad = check_calls(fmt.parse({"name": "calc", "arguments": {"expr": "1", "digits": "2"}}, TOOLS), TOOLS)
    assert "must be of type integer" in bad.error
    missing = check_calls(fmt.parse({"name": "search", "arguments": {}}, TOOLS), TOOLS)
    assert "missing required argument 'query'" in missing.error
    extra = check_calls(fmt.parse({"name": "search", "arguments": {"query": "a", "k": 1}}, TOOLS), TOOLS)
    assert "unknown argument 'k'" in extra.error
    boolean = check_calls(fmt.parse({"name": "calc", "arguments": {"expr": "1", "digits": True}}, TOOLS), TOOLS)
    assert "must be of type integer" in boolean.error


def test_dict_format_answer_list_and_errors():
    fmt = DictFormat()
    assert fmt.parse({"answer": " x "}, TOOLS).answer == "x"
    assert len(fmt.parse([{"name": "search", "arguments": {"query": "a"}}] * 2, TOOLS).tool_calls) == 2
    assert fmt.parse([], TOOLS).error
    assert fmt.parse({"answer": 3}, TOOLS).error
    assert fmt.parse("text", TOOLS).error


@pytest.mark.parametrize("name", ["tags", "hermes", "json", "plain", "dict"])
def test_render_parse_round_trip(name):
    fmt = get_format(name)
    call = ToolCall("search", {"query": "capital of Peru"})
    rendered = fmt.render_call(call, TOOLS)
    action = json.loads(rendered) if name == "dict" else rendered
    parsed = fmt.parse(action, TOOLS)
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("search", {"query": "capital of Peru"})]
    answer = fmt.render_answer("Lima")
    assert fmt.parse(json.loads(answer) if name == "dict" else answer, TOOLS).answer == "Lima"


def test_render_results_styles():
    result = ToolResult(ToolCall("search", {"query": "q"}), "Doc 1", "information")
    assert TagsFormat().render_results([result]) == "\n\n<information>Doc 1</information>\n\n"
    assert HermesFormat().render_results([result]) == "<tool_response>\nDoc 1\n</tool_response>"


def test_instructions_name_every_tool():
    for name in ("tags", "hermes", "plain", "dict"):
        text = get_format(name).instructions(TOOLS)
        assert "search" in text and "calc" in text


def test_unknown_format():
    with pytest.raises(ConfigError, match="Unknown action format"):
        get_format("xml")


def test_each_format_says_where_a_turn_stops_and_which_role_answers_it():
    tags, hermes, plain = get_format("tags"), get_format("hermes"), get_format("dict")
    assert tags.stop_strings(["search"]) == ("</search>", "</answer>")
    assert TagsFormat(answer_tag="final").stop_strings([]) == ("</final>",)
    assert hermes.stop_strings(["search"]) == () and plain.stop_strings(["search"]) == ()
    assert hermes.observation_role(made_tool_calls=True) == "tool"
    assert hermes.observation_role(made_tool_calls=False) == "user"
    assert tags.observation_role(made_tool_calls=True) == "user"
    assert get_format("json").function_calling and not tags.function_calling


def test_format_of_prefers_the_envs_own_format_to_the_name_in_info():
    class Env:
        action_format = TagsFormat(answer_tag="final")

    assert format_of({"format": "tags"}, Env()).stop_strings([]) == ("</final>",)
    assert isinstance(format_of({"format": "hermes"}), HermesFormat)  # a RemoteEnv: only the name
    assert format_of({}).stop_strings(["x"]) == ()  # not an agentgym env's info: no stop strings
