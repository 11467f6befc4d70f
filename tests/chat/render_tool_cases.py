#!/usr/bin/env python3
"""Writes tests/chat/testdata/tool-cases.jsonl: chat templates rendered with tools, assistant
tool_calls and tool results exactly as Hugging Face transformers' apply_chat_template renders them
(jinja2's ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and loopcontrols; tojson
as json.dumps with ensure_ascii=False; raise_exception; strftime_now pinned to 2024-07-26 so the
output is stable). test_tool_chat_cases.cpp renders the same cases with EdgeLLM's Jinja engine and
compares byte for byte.

    python3 tests/chat/render_tool_cases.py [SHARED_DIR]      (needs python3-jinja2)

Templates: tests/chat/templates/*.jinja (Qwen2.5, Llama 3.1, Llama 3.2 from their Hugging Face
repositories, via llama.cpp's models/templates) and, when SHARED_DIR is given or ../shared exists,
the Qwen3 template of shared/testdata/tokenizers/qwen3/tokenizer_config.json (referenced by name,
not copied).
"""
import json
import os
import sys
from datetime import datetime

from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather of a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. 北京"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "add_event", "description": "Adds a calendar event.",
        "parameters": {"type": "object", "properties": {
            "title": {"type": "string"}, "day": {"type": "string", "format": "date"},
            "minutes": {"type": "integer", "minimum": 5, "maximum": 480}},
            "required": ["title", "day"]}}},
]

CALL_1 = {"id": "call_a1", "type": "function",
          "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}
CALL_2 = {"id": "call_b2", "type": "function",
          "function": {"name": "add_event", "arguments": {"title": "Dentist", "day": "2025-03-04", "minutes": 30}}}

CONVERSATIONS = {
    "ask": [{"role": "user", "content": "What is the weather in Paris?"}],
    "ask-system": [{"role": "system", "content": "You are a helpful assistant."},
                   {"role": "user", "content": "明天北京天气怎么样？"}],
    "one-call": [{"role": "user", "content": "What is the weather in Paris?"},
                 {"role": "assistant", "content": "", "tool_calls": [CALL_1]},
                 {"role": "tool", "tool_call_id": "call_a1", "content": "{\"temp\": 18, \"sky\": \"clear\"}"}],
    "call-and-answer": [{"role": "system", "content": "Be brief."},
                        {"role": "user", "content": "Weather in Paris?"},
                        {"role": "assistant", "content": "", "tool_calls": [CALL_1]},
                        {"role": "tool", "tool_call_id": "call_a1", "content": "18 C, clear"},
                        {"role": "assistant", "content": "It is 18 °C and clear."},
                        {"role": "user", "content": "Thanks!"}],
    "parallel-calls": [{"role": "user", "content": "Weather in Paris, and book the dentist on 4 March."},
                       {"role": "assistant", "content": "Let me do both.", "tool_calls": [CALL_1, CALL_2]},
                       {"role": "tool", "tool_call_id": "call_a1", "content": "18 C"},
                       {"role": "tool", "tool_call_id": "call_b2", "content": "booked"}],
}

# (template name, file or shared reference, conversations, render with tools?)
def templates(shared):
    out = [("qwen2.5", os.path.join(HERE, "templates", "qwen2.5-instruct.jinja"), "", "<|im_end|>"),
           ("llama3.1", os.path.join(HERE, "templates", "llama-3.1-instruct.jinja"), "<|begin_of_text|>", "<|eot_id|>"),
           ("llama3.2", os.path.join(HERE, "templates", "llama-3.2-instruct.jinja"), "<|begin_of_text|>", "<|eot_id|>")]
    if shared:
        out.append(("shared:qwen3", os.path.join(shared, "testdata", "tokenizers", "qwen3", "tokenizer_config.json"), "", "<|im_end|>"))
    return out


def load_source(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".json"):
        return json.loads(text)["chat_template"]
    return text


class TemplateError(Exception):
    pass


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def render(source, messages, tools, add_generation_prompt, bos, eos):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime(2024, 7, 26).strftime(fmt)
    kwargs = {"messages": messages, "add_generation_prompt": add_generation_prompt, "bos_token": bos, "eos_token": eos}
    if tools is not None:
        kwargs["tools"] = tools
    return env.from_string(source).render(**kwargs)


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", "shared")
    shared = shared if os.path.isdir(shared) else None
    out_path = os.path.join(HERE, "testdata", "tool-cases.jsonl")
    n = 0
    with open(out_path, "w", encoding="utf-8") as out:
        for name, path, bos, eos in templates(shared):
            source = load_source(path)
            for conv_name, messages in CONVERSATIONS.items():
                for with_tools in (True, False):
                    gen = messages[-1]["role"] != "assistant"
                    try:
                        rendered = render(source, messages, TOOLS if with_tools else None, gen, bos, eos)
                        error = None
                    except TemplateError as e:
                        rendered, error = None, str(e)
                    case = {"template": name, "conversation": conv_name, "messages": messages,
                            "tools": TOOLS if with_tools else None, "add_generation_prompt": gen,
                            "bos_token": bos, "eos_token": eos}
                    if error is not None:
                        case["error"] = error
                    else:
                        case["rendered"] = rendered
                    out.write(json.dumps(case, ensure_ascii=False) + "\n")
                    n += 1
    print(f"wrote {n} cases to {out_path}")


if __name__ == "__main__":
    main()
