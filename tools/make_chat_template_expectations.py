#!/usr/bin/env python3
"""Render the test chat templates of tests/fixtures/chat_templates/ with transformers, the
reference sieve's renderer must equal.

For each case of cases.json (a template file of our own, messages, tools, add_generation_prompt,
extra variables, special tokens) this writes what transformers' `render_jinja_template` (the
renderer behind `apply_chat_template`) returns, or the message of the error it raises, to
expected.json. No test runs Python; the output is committed.

Usage (from the repository root):
    /work/venv/bin/python tools/make_chat_template_expectations.py
"""

import json
from pathlib import Path

import jinja2
import transformers
from transformers.utils.chat_template_utils import render_jinja_template

DIR = Path("tests/fixtures/chat_templates")


def main():
    cases = json.loads((DIR / "cases.json").read_text())
    expected = {"transformers": transformers.__version__, "jinja2": jinja2.__version__, "cases": {}}
    for case in cases:
        template = (DIR / case["template"]).read_text()
        kwargs = dict(case.get("special_tokens", {}))
        kwargs.update(case.get("kwargs", {}))
        try:
            rendered, _ = render_jinja_template(
                conversations=[case["messages"]],
                tools=case.get("tools"),
                chat_template=template,
                add_generation_prompt=case["add_generation_prompt"],
                **kwargs,
            )
            expected["cases"][case["name"]] = {"text": rendered[0]}
        except jinja2.exceptions.TemplateError as e:
            expected["cases"][case["name"]] = {"error": str(e)}
    (DIR / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases")


if __name__ == "__main__":
    main()
