#!/usr/bin/env python3
"""Writes the inputs of triframe's golden cases (testdata/golden/*.json).

Run it, then `go test ./phases/triframe -run TestGolden -update` fills in
the expected outputs; review the diff before committing.
"""
import json, os

OUT = os.path.join(os.path.dirname(__file__), "..", "golden")
TASK = "Create hello.txt containing flock, then submit its byte count."

def settings(**kw):
    s = {"advisors": [{"model": "adv"}], "actors": [{"model": "act"}], "raters": [{"model": "rat"}],
         "limit_type": "action"}
    s.update(kw)
    return {k: v for k, v in s.items() if v is not None}

def call(name, args, id="call_1"):
    return {"id": id, "name": name, "arguments": args}

def choice(name, args, content="Next step.", id="call_1", **extra):
    d = {"summary": "x", "option": {"content": content, "call": call(name, args, id)}, "index": 0}
    d.update(extra)
    return {"type": "choice", "data": d}

def tool_output(tool, output, id="call_1", notice="Usage: 1 of 10 actions used (10%)."):
    return {"type": "tool_output", "data": {"summary": "x", "tool": tool, "call_id": id, "output": output, "notice": notice}}

def advice(text):
    return {"type": "advice", "data": {"summary": "x", "advice": text, "advisor": 0, "sample": 0}}

def warning(msg):
    return {"type": "warning", "data": {"summary": msg, "message": msg}}

def options(opts):
    return {"type": "options", "data": {"summary": "x", "options": opts, "dropped": 0, "merged": 0}}

def opt(name, args, content="c", id="call_1"):
    return {"content": content, "call": call(name, args, id)}

def gen(outputs, **meta):
    return {"type": "generate", "meta": meta, "data": {"outputs": outputs, "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cost": 0}}}

def out(content="", calls=()):
    o = {"content": content}
    if calls:
        o["tool_calls"] = [{"id": c[0], "name": c[1], "arguments": c[2]} for c in calls]
    return o

def vars(timeout=60, retries=0, bracket=None):
    v = {"timeout": timeout, "retries": retries}
    if bracket:
        v["bracket"] = bracket
    return {"triframe": v}

HIST = [
    {"type": "task", "data": {"summary": "task", "task": TASK, "tools": ["bash"], "mode": "tools"}},
    advice("Start by listing the directory."),
    choice("bash", {"command": "ls -la"}, "I will look around.", id="call_a"),
    tool_output("bash", "total 0", id="call_a"),
]

cases = {}
def case(name, phase, **kw):
    c = {"phase": phase, "task": TASK, "settings": settings(), "usage": {"tokens": 100, "actions": 1, "seconds": 5, "cost": 0},
         "limits": {"tokens": 100000, "actions": 10, "seconds": 600}}
    c.update(kw)
    cases[name] = c

# init
case("init_defaults", "init", vars=None)
case("init_text_xml_scoring", "init", settings=settings(enable_tool_use=False, enable_xml=True, intermediate_scoring=True))
case("init_flock_keys", "init", settings=settings(workflow_type="triframe", generator={"model": "gen"}, require_function_call=True,
     advisors=[{"model": "adv", "temp": 0.2, "n": 1, "max_tokens": 500, "stop": [], "logprobs": 2, "priority": "high", "max_reasoning_tokens": 100}]))
case("init_no_actors", "init", settings=settings(actors=[]))
case("init_bad_limit_type", "init", settings=settings(limit_type="tokenz"))

# advisor
case("advisor_on", "advisor", entries=HIST, vars=vars())
case("advisor_required_call", "advisor", entries=HIST, vars=vars(), settings=settings(require_function_call=True))
case("advisor_off", "advisor", entries=HIST, vars=vars(), settings=settings(enable_advising=False))
case("advisor_none_configured", "advisor", entries=HIST, vars=vars(), settings=settings(advisors=[]))
case("advisor_text_xml", "advisor", entries=HIST, vars=vars(), settings=settings(enable_tool_use=False, enable_xml=True))

# actor
two_actors = [{"model": "act-a"}, {"model": "act-b", "n": 2, "temp": 1}]
case("actor_with_advice", "actor", entries=HIST, vars=vars(), settings=settings(actors=two_actors),
     results=[gen([out("", [("c9", "advise", json.dumps({"advice": "Now create hello.txt with printf."}))])], role="advisor", index="0")])
case("actor_advising_off", "actor", entries=HIST[:1] + HIST[2:], vars=vars(), settings=settings(actors=two_actors, enable_advising=False))
case("actor_invalid_advice", "actor", entries=HIST, vars=vars(), settings=settings(advisors=[{"model": "adv"}, {"model": "adv2"}]),
     results=[gen([out("I think you should create the file."), out("", [("c9", "advise", "{\"advice\": ")])], role="advisor", index="0"),
              {"type": "generate", "meta": {"role": "advisor", "index": "1"}, "error": "adv2: endpoint unreachable"}])
case("actor_text_fenced", "actor", entries=HIST, vars=vars(), settings=settings(enable_tool_use=False),
     results=[gen([out("Good progress.\n```advise\nCreate the file:\n```bash\nprintf flock > hello.txt\n```\nthen count.\n```")], role="advisor", index="0")])
case("actor_text_xml", "actor", entries=HIST + [warning("The chosen action had no valid tool call.")], vars=vars(), settings=settings(enable_tool_use=False, enable_xml=True),
     results=[gen([out("<advise>Create the file with printf.</advise>")], role="advisor", index="0")])
case("actor_required_call", "actor", entries=HIST, vars=vars(), settings=settings(require_function_call=True, enable_advising=False))

# history trimming: many actions, small budget and output limit
long_hist = [HIST[0]]
for i in range(12):
    long_hist.append(choice("bash", {"command": f"echo step {i}"}, f"Step {i}.", id=f"call_{i}"))
    long_hist.append(tool_output("bash", f"step {i} " + "x" * 300, id=f"call_{i}"))
case("actor_history_trimmed", "actor", entries=long_hist, vars=vars(),
     settings=settings(enable_advising=False, context_trimming_threshold=2600, output_limit=120))
case("advisor_history_trimmed", "advisor", entries=long_hist, vars=vars(),
     settings=settings(context_trimming_threshold=2600, output_limit=120))

# advisor_ratings
bash_ls = ("c1", "bash", json.dumps({"command": "ls"}))
case("options_collect_and_rate", "advisor_ratings", entries=HIST, vars=vars(),
     settings=settings(actors=two_actors, raters=[{"model": "rat-a"}, {"model": "rat-b", "n": 2}]),
     results=[
         gen([out("List files.", [bash_ls])], role="actor", index="0", advice="with"),
         gen([out("List files.", [("c2", "bash", json.dumps({"command": "ls"}))])], role="actor", index="0", advice="without"),
         gen([out("Create it.", [("c3", "bash", json.dumps({"command": "printf flock > hello.txt"}))]),
              out("", [("c4", "bash", "{not json")]), out("")], role="actor", index="1", advice="with"),
         gen([out("Look first.", [("c5", "rm_rf", "{}")]), out("Submit now.", [("c6", "submit", json.dumps({"answer": 5}))])], role="actor", index="1", advice="without"),
     ])
case("options_single_skips_rating", "advisor_ratings", entries=HIST, vars=vars(retries=1),
     results=[gen([out("Create it.", [("c1", "bash", json.dumps({"command": "printf flock > hello.txt"}))])], role="actor", index="0", advice="with"),
              gen([out("Create it.", [("c2", "bash", json.dumps({"command": "printf flock > hello.txt"}))])], role="actor", index="0", advice="without")])
case("options_none_retry", "advisor_ratings", entries=HIST, vars=vars(),
     results=[gen([out("", [("c1", "set_timeout", json.dumps({"timeout": "soon"}))])], role="actor", index="0", advice="with"),
              gen([out("")], role="actor", index="0", advice="without")])
case("options_none_generate_error", "advisor_ratings", entries=HIST, vars=vars(retries=2),
     results=[{"type": "generate", "meta": {"role": "actor", "index": "0", "advice": "with"}, "error": "scripted model act: script exhausted"}])
case("options_none_exhausted", "advisor_ratings", entries=HIST, vars=vars(retries=3),
     results=[gen([out("I am not sure what to do.")], role="actor", index="0", advice="without")])
case("options_no_raters_first", "advisor_ratings", entries=HIST, vars=vars(), settings=settings(raters=[]),
     results=[gen([out("A", [bash_ls]), out("B", [("c2", "bash", json.dumps({"command": "pwd"}))])], role="actor", index="0", advice="without")])
case("options_text_fenced", "advisor_ratings", entries=HIST, vars=vars(), settings=settings(enable_tool_use=False),
     results=[gen([out("Create it.\n\n```bash\nprintf flock > hello.txt\n```"), out("```set_timeout\n30\n```"),
                   out("Done:\n```submit\n5\n```\nand more text")], role="actor", index="0", advice="with")])
case("options_text_xml", "advisor_ratings", entries=HIST, vars=vars(), settings=settings(enable_tool_use=False, enable_xml=True),
     results=[gen([out("Create it.\n<bash>printf flock > hello.txt</bash>"), out("<python>\nprint(len('flock'))\n</python>")], role="actor", index="0", advice="with")])

# aggregate_ratings
three = options([opt("bash", {"command": "ls"}, "A", "c1"), opt("bash", {"command": "printf flock > hello.txt"}, "B", "c2"), opt("submit", {"answer": "5"}, "C", "c3")])
def rate(*rs, id="r1"):
    return out("", [(id, "rate_options", json.dumps({"ratings": [{"option_index": i, "rating": r, "comment": f"option {i}"} for i, r in rs]}))])
case("aggregate_mean_best", "aggregate_ratings", entries=HIST + [three], vars=vars(retries=1),
     results=[gen([rate((0, 1), (1, 2), (2, -1)), rate((0, 0.5), (1, 1), (2, -2))], role="rater", index="0"),
              gen([rate((0, 1), (1, 1.5), (2, 9))], role="rater", index="1")])
case("aggregate_tie_first", "aggregate_ratings", entries=HIST + [three], vars=vars(),
     results=[gen([rate((0, 1), (1, 1), (2, 1))], role="rater", index="0")])
case("aggregate_low_retry", "aggregate_ratings", entries=HIST + [three], vars=vars(),
     results=[gen([rate((0, -1), (1, -0.5), (2, -2))], role="rater", index="0")])
case("aggregate_low_exhausted", "aggregate_ratings", entries=HIST + [three], vars=vars(retries=3),
     results=[gen([rate((0, -1), (1, -0.5), (2, -2))], role="rater", index="0")])
case("aggregate_unparseable_first", "aggregate_ratings", entries=HIST + [three], vars=vars(),
     results=[gen([out("Option 1 looks best."), out("", [("r", "rate_options", "{\"ratings\": \"many\"}")])], role="rater", index="0"),
              {"type": "generate", "meta": {"role": "rater", "index": "1"}, "error": "timeout"}])
case("aggregate_out_of_range_ignored", "aggregate_ratings", entries=HIST + [three], vars=vars(),
     results=[gen([rate((5, 2), (2, 0.5), (0, 0))], role="rater", index="0")])
case("aggregate_text_json", "aggregate_ratings", entries=HIST + [three], vars=vars(), settings=settings(enable_tool_use=False),
     results=[gen([out("My ratings:\n```json\n{\"ratings\": [{\"option_index\": 0, \"rating\": 0}, {\"option_index\": 1, \"rating\": 1.5}, {\"option_index\": 2, \"rating\": -1}]}\n```")], role="rater", index="0")])

# process
case("process_bash", "process", entries=HIST + [choice("bash", {"command": "printf flock > hello.txt"}, id="c7")], vars=vars(timeout=120))
case("process_python", "process", entries=HIST + [choice("python", {"code": "print(1)"}, id="c7")], vars=vars())
case("process_set_timeout", "process", entries=HIST + [choice("set_timeout", {"timeout": 300}, id="c7")], vars=vars())
case("process_set_timeout_invalid", "process", entries=HIST + [choice("set_timeout", {"timeout": 0}, id="c7")], vars=vars(timeout=90))
case("process_submit", "process", entries=HIST + [choice("submit", {"answer": "6"}, id="c7")], vars=vars(retries=2))
case("process_score", "process", entries=HIST + [choice("score", {}, id="c7")], vars=vars(), settings=settings(intermediate_scoring=True))
case("process_score_log", "process", entries=HIST + [choice("score_log", {}, id="c7")], vars=vars(), settings=settings(intermediate_scoring=True))
case("process_no_call", "process", entries=HIST + [{"type": "choice", "data": {"summary": "x", "option": {"content": "hmm", "invalid": "bash: empty"}, "index": 0}}], vars=vars())
agents = {"agents": [{"task": "Count bytes of hello.txt", "approach": "use wc", "include_task_description": True},
                     {"task": "Count bytes of hello.txt", "approach": "use python"},
                     {"task": "Check the file exists", "approach": "ls"}]}
case("process_launch_subagents", "process", entries=HIST + [choice("launch_subagents", agents, id="c7")], vars=vars(), step=40,
     settings=settings(enable_subagents=True, limits={"tokens": 100000, "actions": 10, "seconds": 600}),
     usage={"tokens": 40000, "actions": 4, "seconds": 120, "cost": 0})
case("process_launch_too_many", "process", entries=HIST + [choice("launch_subagents", agents, id="c7")], vars=vars(),
     settings=settings(enable_subagents=True, subagents={"max_agents": 2}))
case("process_launch_disabled", "process", entries=HIST + [choice("launch_subagents", agents, id="c7")], vars=vars())
case("process_conclude", "process", entries=HIST + [choice("conclude", {"result": "hello.txt has 5 bytes"}, id="c7")], vars=vars(),
     settings=settings(subagent=True))

# tool_output
def bash_res(stdout="", stderr="", code=0, timed_out=False):
    return {"type": "bash", "data": {"stdout": stdout, "stderr": stderr, "exit_code": code, "timed_out": timed_out, "truncated": False}}
after_bash = HIST + [choice("bash", {"command": "wc -c < hello.txt"}, id="c7")]
case("tool_output_bash", "tool_output", entries=after_bash, vars=vars(), results=[bash_res("5\n")])
case("tool_output_bash_error_80pct", "tool_output", entries=after_bash, vars=vars(), results=[bash_res("", "wc: hello.txt: No such file", 1)],
     usage={"tokens": 100, "actions": 8, "seconds": 5, "cost": 0})
case("tool_output_95pct_tokens", "tool_output", entries=after_bash, vars=vars(), results=[bash_res("5\n")], settings=settings(limit_type="token"),
     usage={"tokens": 96000, "actions": 8, "seconds": 5, "cost": 0})
case("tool_output_timeout", "tool_output", entries=after_bash, vars=vars(), results=[bash_res("partial\n", "", 124, True)], settings=settings(limit_type="time"))
case("tool_output_trimmed", "tool_output", entries=after_bash, vars=vars(), results=[bash_res("".join(f"line {i}\n" for i in range(200)))], settings=settings(output_limit=200))
case("tool_output_python", "tool_output", entries=HIST + [choice("python", {"code": "1/0"}, id="c7")], vars=vars(),
     results=[{"type": "python", "data": {"output": "", "error": "ZeroDivisionError: division by zero", "timed_out": False}}])
case("tool_output_score", "tool_output", entries=HIST + [choice("score", {}, id="c7")], vars=vars(),
     results=[{"type": "score", "data": {"score": 0.75, "message": "3 of 4 checks pass"}}])
case("tool_output_score_log", "tool_output", entries=HIST + [choice("score_log", {}, id="c7")], vars=vars(),
     results=[{"type": "score_log", "data": {"entries": [{"elapsed_seconds": 12.5, "score": 0.5, "message": "half"}]}}])
case("tool_output_op_error", "tool_output", entries=after_bash, vars=vars(), results=[{"type": "bash", "error": "no handler for operation kind \"bash\""}])

# subagents and tournament
launch = HIST + [choice("launch_subagents", agents, id="c7")]
def spawn(agent, index, status, conclusion=None, reason="concluded"):
    d = {"run_id": "golden-child-" + index, "status": status, "end_reason": reason, "usage": {"tokens": 1000, "actions": 2, "seconds": 3, "cost": 0}}
    if conclusion is not None:
        d["result"] = {"conclusion": conclusion, "report": "Action: bash: wc -c < ../../hello.txt\nOutput: 5"}
    return {"type": "spawn", "meta": {"agent": agent, "index": index}, "data": d}
sub_settings = settings(enable_subagents=True)
case("subagents_judge_pair", "subagents", entries=launch, vars=vars(), settings=sub_settings, results=[
    spawn("agent_40_0", "0", "succeeded", "5 bytes"), spawn("agent_40_1", "1", "succeeded", "hello.txt is 5 bytes long"),
    spawn("agent_40_2", "2", "succeeded", "it exists")])
case("subagents_walkover", "subagents", entries=launch, vars=vars(), settings=sub_settings, results=[
    spawn("agent_40_0", "0", "failed", None, "limit_actions"), spawn("agent_40_1", "1", "succeeded", "5 bytes"),
    {"type": "spawn", "meta": {"agent": "agent_40_2", "index": "2"}, "error": "spawn triframe: settings rejected"}])
four = {"agents": [{"task": "T", "approach": f"way {i}"} for i in range(3)]}
case("subagents_three_way", "subagents", entries=HIST + [choice("launch_subagents", four, id="c7")], vars=vars(), settings=sub_settings, results=[
    spawn("agent_9_0", "0", "succeeded", "A"), spawn("agent_9_1", "1", "succeeded", "B"), spawn("agent_9_2", "2", "succeeded", "C")])
sub_entry = {"type": "subagents", "data": {"summary": "x", "call_id": "c7", "agents": [
    {"id": f"agent_9_{i}", "task": "T", "approach": f"way {i}", "status": "succeeded", "conclusion": c, "report": f"Action: bash: echo {c}"}
    for i, c in enumerate("ABC")]}}
def judge(a, b, winner):
    return gen([out("", [("j", "select_winner", json.dumps({"winner_id": winner, "reasoning": f"{winner} verified its answer"}))])], role="judge", group="0", a=a, b=b)
case("tournament_next_round", "tournament", entries=HIST + [choice("launch_subagents", four, id="c7"), sub_entry], settings=sub_settings,
     vars=vars(bracket={"round": 1, "groups": [{"task": "T", "alive": ["agent_9_0", "agent_9_1", "agent_9_2"]}]}),
     results=[judge("agent_9_0", "agent_9_1", "agent_9_1")])
case("tournament_final", "tournament", entries=HIST + [choice("launch_subagents", four, id="c7"), sub_entry], settings=sub_settings,
     vars=vars(bracket={"round": 2, "groups": [{"task": "T", "alive": ["agent_9_1", "agent_9_2"]}]}),
     results=[judge("agent_9_1", "agent_9_2", "agent_9_2")])
case("tournament_bad_verdict_fallback", "tournament", entries=HIST + [choice("launch_subagents", four, id="c7"), sub_entry], settings=sub_settings,
     vars=vars(bracket={"round": 2, "groups": [{"task": "T", "alive": ["agent_9_1", "agent_9_2"]}]}),
     results=[judge("agent_9_1", "agent_9_2", "agent_7_7")])
case("tournament_text_mode", "tournament", entries=HIST + [choice("launch_subagents", four, id="c7"), sub_entry],
     settings=settings(enable_subagents=True, enable_tool_use=False),
     vars=vars(bracket={"round": 2, "groups": [{"task": "T", "alive": ["agent_9_1", "agent_9_2"]}]}),
     results=[gen([out("```json\n{\"winner_id\": \"agent_9_2\", \"reasoning\": \"checked\"}\n```")], role="judge", group="0", a="agent_9_1", b="agent_9_2")])

# issue 9 point 10: the newest action's 30,000-character output stays in the
# next prompts (clipped head and tail) under a 20,000-character budget
big = "".join(f"output line {i:05d} of the listing\n" for i in range(1000))[:30000]
big_hist = HIST + [advice("Now list it."), choice("bash", {"command": "ls -R /big"}, "Listing it.", id="call_big"),
                   tool_output("bash", big, id="call_big"), advice("Count the files.")]
case("actor_newest_output_clipped", "actor", entries=big_hist, vars=vars(),
     settings=settings(context_trimming_threshold=20000, output_limit=20000))
case("advisor_newest_output_clipped", "advisor", entries=big_hist, vars=vars(),
     settings=settings(context_trimming_threshold=20000, output_limit=20000))
case("init_output_limit_over_budget", "init", settings=settings(context_trimming_threshold=20000, output_limit=100000))

for f in os.listdir(OUT):
    if f.endswith(".json"):
        os.remove(os.path.join(OUT, f))
for i, (name, c) in enumerate(cases.items(), 1):
    c = {k: v for k, v in c.items() if v is not None}
    c["want"] = {"next": ""}
    with open(os.path.join(OUT, f"{i:02d}_{name}.json"), "w") as fh:
        json.dump(c, fh, indent=2)
        fh.write("\n")
print(len(cases), "cases")
