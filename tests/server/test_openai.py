"""`sieve serve` called with the official `openai` Python client: completions and chat,
whole and streamed, `extra_body={"sampler": ...}`, logprobs, tool calls, and bad requests.
Every text is compared with what `sieve generate` prints for the same seed.

Run by tests/server/run.sh (which installs the client and builds the grammar plugin); by hand:
    python tests/server/test_openai.py --sieve target/debug/sieve \
        --grammar-plugin target/debug/libsieve_grammar.so
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import unittest

import openai

SIEVE = "target/debug/sieve"
GRAMMAR_PLUGIN = None
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHAT_MODEL = os.path.join(ROOT, "tests", "fixtures", "models", "qwen3-headdim")
PROMPT = "Once upon a time"


class Server:
    """`sieve serve --port 0 ARGS`, stopped on exit."""

    def __init__(self, *args):
        env = dict(os.environ)
        env.pop("SIEVE_PLUGIN_PATH", None)
        self.proc = subprocess.Popen(
            [SIEVE, "serve", "--port", "0", *args],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        line = self.proc.stderr.readline()
        match = re.search(r"listening on (http://\S+)", line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"sieve serve did not start: {line}{self.proc.stderr.read()}")
        self.url = match.group(1)
        self.stderr = []
        self.drain = threading.Thread(target=self._drain, daemon=True)
        self.drain.start()

    def _drain(self):
        for line in self.proc.stderr:
            self.stderr.append(line)

    def client(self, api_key="none"):
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, max_retries=0)

    def wait_ready(self):
        import urllib.request

        for _ in range(600):
            try:
                with urllib.request.urlopen(self.url + "/health") as r:
                    if r.status == 200:
                        return
            except Exception:
                pass
            time.sleep(0.1)
        raise RuntimeError("the model did not load")

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.drain.join(timeout=10)
        self.proc.stderr.close()
        panics = [line for line in self.stderr if "panicked" in line]
        if panics:
            raise AssertionError("sieve serve panicked: " + "".join(panics))


def generate(*args):
    """What `sieve generate ARGS` prints, without its final newline."""
    env = dict(os.environ)
    env.pop("SIEVE_PLUGIN_PATH", None)
    out = subprocess.run(
        [SIEVE, "generate", *args], capture_output=True, text=True, check=True, env=env
    )
    return out.stdout[:-1] if out.stdout.endswith("\n") else out.stdout


def error_body(e):
    """The `error` object of an API error, whichever way the client version exposes it."""
    body = e.body if isinstance(e.body, dict) else {}
    return body.get("error", body)


class Completions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--model", "embedded")
        cls.server.wait_ready()
        cls.client = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_models(self):
        ids = [m.id for m in self.client.models.list().data]
        self.assertEqual(ids, ["embedded"])

    def test_text_equals_sieve_generate(self):
        want = generate("--prompt", PROMPT, "-n", "20", "--seed", "11")
        r = self.client.completions.create(
            model="embedded", prompt=PROMPT, max_tokens=20, seed=11
        )
        self.assertEqual(r.choices[0].text, want)
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertEqual(r.usage.completion_tokens, 20)
        self.assertEqual(r.model_extra["seed"], 11)

    def test_streamed_text_and_usage(self):
        want = generate("--prompt", PROMPT, "-n", "20", "--seed", "12")
        stream = self.client.completions.create(
            model="embedded",
            prompt=PROMPT,
            max_tokens=20,
            seed=12,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        text = "".join(c.choices[0].text for c in chunks if c.choices)
        self.assertEqual(text, want)
        self.assertGreater(len(chunks), 10)
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.completion_tokens, 20)
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
        self.assertEqual(finishes[-1], "length")

    def test_sampler_in_extra_body(self):
        sampler = "penalty(1.2) | top_k(8) | temp(1.3)"
        want = generate("--prompt", PROMPT, "-n", "16", "--seed", "5", "--sampler", sampler)
        r = self.client.completions.create(
            model="embedded",
            prompt=PROMPT,
            max_tokens=16,
            seed=5,
            extra_body={"sampler": sampler},
        )
        self.assertEqual(r.choices[0].text, want)
        self.assertTrue(r.model_extra["sampler"].startswith("penalty(repeat=1.2"))

    def test_n_choices_use_seed_plus_i(self):
        r = self.client.completions.create(
            model="embedded", prompt=PROMPT, max_tokens=10, seed=30, n=3
        )
        for i, choice in enumerate(r.choices):
            want = generate("--prompt", PROMPT, "-n", "10", "--seed", str(30 + i))
            self.assertEqual(choice.index, i)
            self.assertEqual(choice.text, want)

    def test_a_list_of_prompts(self):
        prompts = [PROMPT, "The cat"]
        r = self.client.completions.create(
            model="embedded", prompt=prompts, max_tokens=8, seed=5, n=2
        )
        self.assertEqual(len(r.choices), 4)
        for choice in r.choices:
            prompt, j = prompts[choice.index // 2], choice.index % 2
            want = generate("--prompt", prompt, "-n", "8", "--seed", str(5 + j))
            self.assertEqual(choice.text, want)

    def test_logprobs(self):
        r = self.client.completions.create(
            model="embedded",
            prompt=PROMPT,
            max_tokens=5,
            seed=1,
            logprobs=3,
            extra_body={"logprobs_mode": "raw"},
        )
        lp = r.choices[0].logprobs
        self.assertEqual(len(lp.tokens), 5)
        self.assertEqual("".join(lp.tokens), r.choices[0].text)
        for value, top in zip(lp.token_logprobs, lp.top_logprobs):
            self.assertLessEqual(value, 0.0)
            self.assertEqual(len(top), 3)
            self.assertGreaterEqual(max(top.values()), value)

    def test_bad_requests(self):
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.completions.create(
                model="embedded", prompt="x", extra_body={"sampler": "top_k(40) | top_q(0.9)"}
            )
        self.assertEqual(cm.exception.status_code, 400)
        err = error_body(cm.exception)
        self.assertEqual(err["param"], "sampler")
        self.assertIn("^", err["message"])
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.completions.create(model="embedded", prompt="x", temperature=-1)
        self.assertEqual(error_body(cm.exception)["param"], "temperature")
        with self.assertRaises(openai.NotFoundError):
            self.client.completions.create(model="gpt-4o", prompt="x")
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.completions.create(model="embedded", prompt=[1] * 2000, max_tokens=1)
        self.assertEqual(error_body(cm.exception)["code"], "context_length_exceeded")


class Chat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--model", CHAT_MODEL, "--served-model-name", "tiny")
        cls.server.wait_ready()
        cls.client = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def want(self, seed, n):
        return generate(
            "--model", CHAT_MODEL, "--chat", "--prompt", "Hello!", "-n", str(n), "--seed", str(seed)
        )

    def test_chat_equals_generate_chat(self):
        r = self.client.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "Hello!"}], max_tokens=12, seed=4
        )
        self.assertEqual(r.choices[0].message.role, "assistant")
        self.assertEqual(r.choices[0].message.content, self.want(4, 12))

    def test_streamed_chat_with_logprobs(self):
        stream = self.client.chat.completions.create(
            model="tiny",
            messages=[{"role": "user", "content": "Hello!"}],
            max_tokens=12,
            seed=6,
            stream=True,
            logprobs=True,
            top_logprobs=2,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        self.assertEqual(text, self.want(6, 12))
        entries = [
            e
            for c in chunks
            if c.choices and c.choices[0].logprobs
            for e in c.choices[0].logprobs.content
        ]
        self.assertEqual(len(entries), chunks[-1].usage.completion_tokens)
        for e in entries:
            self.assertLessEqual(len(e.top_logprobs), 2)

    def test_chat_sampler(self):
        r = self.client.chat.completions.create(
            model="tiny",
            messages=[{"role": "user", "content": "Hello!"}],
            max_tokens=8,
            extra_body={"sampler": "greedy"},
        )
        want = generate(
            "--model", CHAT_MODEL, "--chat", "--prompt", "Hello!", "-n", "8", "--sampler", "greedy"
        )
        self.assertEqual(r.choices[0].message.content, want)
        self.assertEqual(r.model_extra["sampler"], "greedy")


class ToolCalls(unittest.TestCase):
    """A tool call the model writes (under a JSON-schema grammar, as the fixture model is
    random) reaches the client as `tool_calls`, whole and streamed."""

    TOOLS = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    SCHEMA = {
        "type": "object",
        "properties": {
            "name": {"const": "get_weather"},
            "arguments": {
                "type": "object",
                "properties": {"city": {"const": "Lima"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
        "x-guidance": {"whitespace_flexible": False},
    }

    @classmethod
    def setUpClass(cls):
        if not GRAMMAR_PLUGIN:
            raise unittest.SkipTest("no --grammar-plugin given")
        cls.server = Server("--model", CHAT_MODEL, "--plugin", GRAMMAR_PLUGIN)
        cls.server.wait_ready()
        cls.client = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def ask(self, **extra):
        return self.client.chat.completions.create(
            model=CHAT_MODEL,
            messages=[{"role": "user", "content": "Weather in Lima?"}],
            tools=self.TOOLS,
            temperature=0,
            max_tokens=120,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "call", "schema": self.SCHEMA},
            },
            **extra,
        )

    def test_a_call_comes_back_as_tool_calls(self):
        r = self.ask()
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls")
        self.assertIsNone(choice.message.content)
        (call,) = choice.message.tool_calls
        self.assertEqual(call.type, "function")
        self.assertEqual(call.function.name, "get_weather")
        self.assertEqual(json.loads(call.function.arguments), {"city": "Lima"})

    def test_a_streamed_call_is_assembled_by_the_client(self):
        calls, finish = {}, None
        for chunk in self.ask(stream=True):
            for choice in chunk.choices:
                for d in choice.delta.tool_calls or []:
                    entry = calls.setdefault(d.index, {"name": "", "arguments": ""})
                    entry["name"] += d.function.name or ""
                    entry["arguments"] += d.function.arguments or ""
                finish = choice.finish_reason or finish
        self.assertEqual(finish, "tool_calls")
        self.assertEqual(list(calls), [0])
        self.assertEqual(calls[0]["name"], "get_weather")
        self.assertEqual(json.loads(calls[0]["arguments"]), {"city": "Lima"})

    def test_a_named_tool_choice_forces_the_call(self):
        tools = [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"enum": ["Lima", "Quito"]}},
                        "required": ["city"],
                        "additionalProperties": False,
                    },
                },
            }
        ]
        r = self.client.chat.completions.create(
            model=CHAT_MODEL,
            messages=[{"role": "user", "content": "Weather in Lima?"}],
            tools=tools,
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
            max_tokens=150,
            seed=5,
        )
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls")
        (call,) = choice.message.tool_calls
        self.assertEqual(call.function.name, "get_weather")
        self.assertIn(json.loads(call.function.arguments)["city"], ["Lima", "Quito"])


class ApiKey(unittest.TestCase):
    def test_key_is_required(self):
        server = Server("--api-key", "k3y")
        try:
            server.wait_ready()
            with self.assertRaises(openai.AuthenticationError):
                server.client("wrong").models.list()
            self.assertEqual(len(server.client("k3y").models.list().data), 1)
        finally:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sieve", default=SIEVE)
    parser.add_argument("--grammar-plugin", default=None)
    args, rest = parser.parse_known_args()
    SIEVE = os.path.abspath(args.sieve)
    GRAMMAR_PLUGIN = args.grammar_plugin and os.path.abspath(args.grammar_plugin)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
