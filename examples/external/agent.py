"""A plain AgentFlow-style agent: the standard library only, any
OpenAI-compatible endpoint. flock runs it with OPENAI_BASE_URL and
OPENAI_API_KEY naming a gateway session; the task arrives on stdin.

It offers the model one tool (calculator), runs the calls it makes,
and prints its answer as the last JSON line of stdout.

Environment knobs (for tests): MAX_TURNS (default 4), LOGPROBS=1 asks
for logprobs; with PAUSE_DIR holding a file named "armed", the first
attempt of each run writes PAUSE_DIR/<FLOCK_RUN_ID> after its first
model call and waits until its parent (flock) is gone.
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

BASE = os.environ["OPENAI_BASE_URL"].rstrip("/")
KEY = os.environ["OPENAI_API_KEY"]
MODEL = os.environ.get("OPENAI_MODEL", "default")

TOOLS = [{
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
}]


def chat(messages, **kw):
    body = json.dumps({"model": MODEL, "messages": messages, **kw}).encode()
    req = urllib.request.Request(
        BASE + "/chat/completions", data=body,
        headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        sys.stderr.write("model call failed: %d %s\n" % (e.code, e.read().decode()))
        raise


def calculator(expression):
    allowed = set("0123456789+-*/(). ")
    if not set(expression) <= allowed:
        return "error: only arithmetic"
    return str(eval(expression, {"__builtins__": {}}))  # noqa: S307 - arithmetic only


def main():
    task = sys.stdin.read().strip()
    messages = [
        {"role": "system", "content": "Solve the task. Use the calculator for arithmetic. Reply with the final answer only."},
        {"role": "user", "content": task},
    ]
    extra = {"tools": TOOLS}
    if os.environ.get("LOGPROBS") == "1":
        extra["logprobs"] = True
    pause_dir = os.environ.get("PAUSE_DIR")
    marker = pause_dir and os.path.join(pause_dir, os.environ.get("FLOCK_RUN_ID", "run"))
    first_attempt = bool(pause_dir) and os.path.exists(os.path.join(pause_dir, "armed")) and not os.path.exists(marker)
    parent = os.getppid()
    answer = ""
    for turn in range(int(os.environ.get("MAX_TURNS", "4"))):
        resp = chat(messages, **extra)
        if first_attempt and turn == 0:
            with open(marker, "w") as f:
                f.write(resp["id"])
            while os.getppid() == parent:  # until flock is killed
                time.sleep(0.05)
            sys.exit(3)
        msg = resp["choices"][0]["message"]
        calls = msg.get("tool_calls") or []
        messages.append({"role": "assistant", "content": msg.get("content") or "", **({"tool_calls": calls} if calls else {})})
        if not calls:
            answer = (msg.get("content") or "").strip()
            break
        for c in calls:
            args = json.loads(c["function"]["arguments"] or "{}")
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": calculator(args.get("expression", ""))})
    print(json.dumps({"answer": answer}))


if __name__ == "__main__":
    main()
