"""An agent that asks a vLLM-style endpoint for training data through
the gateway, with the standard library only: token ids
(return_token_ids), logprobs with alternatives, and fields the gateway
does not interpret (seed, top_k, chat_template_kwargs), non-streamed and
streamed; then one plain call, and two requests the gateway refuses.
It writes what it saw to seen.json and its episode as its last line.
"""
import json
import os
import sys
import urllib.error
import urllib.request

BASE = os.environ["OPENAI_BASE_URL"].rstrip("/")
KEY = os.environ["OPENAI_API_KEY"]
MODEL = os.environ.get("OPENAI_MODEL", "default")
ASK = {"return_token_ids": True, "logprobs": True, "top_logprobs": 2, "seed": 7, "top_k": 5,
       "chat_template_kwargs": {"enable_thinking": False}}


def post(body):
    req = urllib.request.Request(
        BASE + "/chat/completions", data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def msgs(text):
    return [{"role": "user", "content": text}]


seen = {}
status, headers, body = post({"model": MODEL, "messages": msgs("first question"), **ASK})
seen["plain_status"] = status
seen["first"] = json.loads(body)
seen["first_trace"] = headers.get("X-Flock-Trace-Id")

status, headers, body = post({"model": MODEL, "messages": msgs("second question"), "stream": True, **ASK})
chunks = []
for line in body.splitlines():
    if line.startswith("data: ") and line != "data: [DONE]":
        chunks.append(json.loads(line[len("data: "):]))
seen["stream_status"] = status
seen["stream_prompt_token_ids"] = [c["prompt_token_ids"] for c in chunks if c.get("prompt_token_ids")]
seen["stream_token_ids"] = [i for c in chunks for ch in c["choices"] for i in (ch.get("token_ids") or [])]
seen["stream_logprobs"] = [lp["logprob"] for c in chunks for ch in c["choices"]
                           for lp in ((ch.get("logprobs") or {}).get("content") or [])]
seen["stream_trace"] = headers.get("X-Flock-Trace-Id")

status, _, body = post({"model": MODEL, "messages": msgs("third question")})
seen["third"] = json.loads(body)

status, _, body = post({"model": MODEL, "messages": msgs("refused"), "functions": [{"name": "f"}]})
seen["functions"] = [status, json.loads(body)]
status, _, body = post({"model": MODEL, "messages": msgs("refused"), "stream": True,
                        "stream_options": {"include_usage": True, "continuous_usage_stats": True}})
seen["stream_options"] = [status, json.loads(body)]

with open("seen.json", "w") as f:
    json.dump(seen, f)
print(json.dumps({"answer": seen["third"]["choices"][0]["message"]["content"]}))
