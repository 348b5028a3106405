# Writes the inputs of the seed workflow's golden cases; `go test
# ./phases/synthesis -run TestGolden -update` fills in their "want".
import json, os

cfg = {"output_dir": "/out", "available_tools": ["rag:search", "text2sql:*"], "model_name": "m",
       "max_depth": 5, "branching_factor": 2, "depth_threshold": 3, "min_depth": 2, "max_selected_traj": 3,
       "path_similarity_threshold": 0.7, "selection_weights": {"depth": 40, "richness": 30, "diversity": 30},
       "max_concurrency": 16, "max_retries": 3, "max_reasks": 2, "proposal_format": "tools", "temperature": 0.7,
       "observation_chars": 500, "min_hops": 3, "sandbox_timeout": 120, "closed_book_model": "m",
       "seed_description": "a topic of the concert catalogue"}
tools = {"rag:search": {"description": "Search the documents.", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
         "text2sql:execute": {"description": "Run one SQL query.", "parameters": {"type": "object", "properties": {"db_id": {"type": "string"}, "query": {"type": "string"}}, "required": ["db_id", "query"]}}}
seed = {"source_id": "src_0000_abcd1234", "index": 0, "content": "The concert database and its singers.", "kwargs": {"seed_path": "/data"}}

def settings(**over):
    c = dict(cfg); c.update(over)
    return {"config": c, "seed": seed, "sandbox_tools": tools}

def node(id, parent, depth, tool=None, params=None, obs="", intent="", failed=False):
    n = {"node_id": id, "depth": depth, "observation": obs}
    if parent: n["parent_id"] = parent
    if tool: n["tool"] = tool; n["parameters"] = params; n["intent"] = intent
    if failed: n["failed"] = True
    return n

def entry(typ, data): return {"type": typ, "data": data}

root = node("0", "", 0, obs="Starting point: " + seed["content"])
n00 = node("0.0", "0", 1, "rag:search", {"query": "singers"}, "[Singers]\nAna Duarte is a fado singer from Lisbon.", "Find the singers.")
n01 = node("0.1", "0", 1, "text2sql:execute", {"db_id": "concert", "query": "SELECT name FROM singer"}, "name\nAna Duarte\nKari Lunde", "List singer names.")

def gen(out, outputs, usage=(10, 5)):
    return {"type": "generate", "data": {"outputs": outputs, "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "cost": 0}, "duration_ms": 1}}

def sandbox(data, code=0, msg="success"):
    return {"type": "sandbox", "data": {"code": code, "message": msg, "data": data}}

def state(stage, inflight, queue=None, stats=None):
    return {"version": 1, "stage": stage, "inflight": inflight, "queue": queue or [], "stats": stats or {"nodes": 0}}

cases = {}
cases["start.json"] = {"phase": "start", "settings": settings()}
cases["start_xml.json"] = {"phase": "start", "settings": settings(proposal_format="xml", branching_factor=3)}
# Two proposals: a native tool call (model name) and AgentFlow's XML tags.
cases["step_proposals.json"] = {"phase": "step", "settings": settings(),
    "vars": {"seed": state("sample", [{"kind": "propose", "parent": "0", "child": 0}, {"kind": "propose", "parent": "0", "child": 1}])},
    "entries": [entry("node", root)],
    "results": [gen(None, [{"content": "Find the singers.", "tool_calls": [{"id": "c1", "name": "rag-search", "arguments": "{\"query\": \"singers\"}"}]}]),
                gen(None, [{"content": "<response><intent>List the tables.</intent><tool_name>text2sql:execute</tool_name><parameters>```json\n{\"query\": \"SELECT name FROM sqlite_master\", \"db_id\": \"concert\"}\n```</parameters></response>"}])]}
# A duplicate of a node's action and a duplicate of a sibling's proposal
# in the same step are re-asked naming the action; bad JSON and an
# unknown tool are re-asked with the error.
cases["step_duplicates.json"] = {"phase": "step", "settings": settings(),
    "vars": {"seed": state("sample", [{"kind": "propose", "parent": "0.0", "child": 0}, {"kind": "propose", "parent": "0.0", "child": 1},
                                       {"kind": "propose", "parent": "0.1", "child": 0}, {"kind": "propose", "parent": "0.1", "child": 1}],
                           stats={"nodes": 2})},
    "entries": [entry("node", root), entry("node", n00), entry("node", n01)],
    "results": [gen(None, [{"content": "again", "tool_calls": [{"id": "c1", "name": "rag-search", "arguments": "{\"query\":\"singers\"}"}]}]),
                gen(None, [{"content": "new", "tool_calls": [{"id": "c2", "name": "rag-search", "arguments": "{\"query\":\"Ana Duarte\"}"}]}]),
                gen(None, [{"content": "same as my cousin", "tool_calls": [{"id": "c3", "name": "rag-search", "arguments": "{\"query\":\"Ana Duarte\"}"}]}]),
                gen(None, [{"content": "<tool_name>rag:search</tool_name><parameters>{query: Kari}</parameters>"}])]}
cases["step_unknown_tool.json"] = {"phase": "step", "settings": settings(),
    "vars": {"seed": state("sample", [{"kind": "propose", "parent": "0", "child": 1, "attempt": 1, "feedback": "x"}], queue=[{"kind": "propose", "parent": "0", "child": 0}])},
    "entries": [entry("node", root)],
    "results": [gen(None, [{"content": "", "tool_calls": [{"id": "c1", "name": "web-search", "arguments": "{}"}]}])]}
# The last re-ask repeats the action again: the branch ends ("duplicate"),
# no tool runs; the tree is done, so the paths are selected and QA asked.
cases["step_duplicate_ends_branch.json"] = {"phase": "step", "settings": settings(max_depth=1, min_depth=1),
    "vars": {"seed": state("sample", [{"kind": "propose", "parent": "0", "child": 1, "attempt": 2, "feedback": "dup"}], stats={"nodes": 1})},
    "entries": [entry("node", root), entry("node", n00)],
    "results": [gen(None, [{"content": "", "tool_calls": [{"id": "c1", "name": "rag-search", "arguments": "{\"query\":\"singers\"}"}]}])]}
# A model error is re-asked too.
cases["step_model_error.json"] = {"phase": "step", "settings": settings(),
    "vars": {"seed": state("sample", [{"kind": "propose", "parent": "0", "child": 0}])},
    "entries": [entry("node", root)],
    "results": [{"type": "generate", "error": "generate: endpoint answered 500"}]}
# Executions: a node at depth 1 gets two proposals (depth < threshold);
# at depth 3, one; a failed call is a node with an error observation;
# seed kwargs fill in params; sessions fork from the nearest ancestor.
cases["step_executed.json"] = {"phase": "step", "settings": settings(),
    "vars": {"seed": state("sample", [{"kind": "execute", "parent": "0", "child": 0, "proposal": {"intent": "Find the singers.", "tool": "rag:search", "params": {"query": "singers"}}},
                                       {"kind": "execute", "parent": "0", "child": 1, "proposal": {"intent": "Bad SQL.", "tool": "text2sql:execute", "params": {"db_id": "concert", "query": "SELEC"}}}])},
    "entries": [entry("node", root)],
    "results": [sandbox({"query": "singers", "context": "[Singers]\nAna Duarte is a fado singer from Lisbon."}),
                sandbox(None, code=4000, msg="query failed: syntax error")]}
n2 = node("0.0.0", "0.0", 2, "rag:search", {"query": "Ana Duarte"}, "Ana Duarte sang at Harbour Arena.", "Follow Ana.")
cases["step_executed_threshold.json"] = {"phase": "step", "settings": settings(),
    "vars": {"seed": state("sample", [{"kind": "execute", "parent": "0.0.0", "child": 0, "proposal": {"intent": "Find the arena.", "tool": "rag:search", "params": {"query": "Harbour Arena"}}}])},
    "entries": [entry("node", root), entry("node", n00), entry("node", n2)],
    "results": [sandbox({"context": "Harbour Arena in Lisbon holds 42000 people."})]}
# A cap of 2 calls in flight: 2 of 3 queued proposals go.
cases["step_cap.json"] = {"phase": "step", "settings": settings(max_concurrency=2),
    "vars": {"seed": state("sample", [], queue=[{"kind": "propose", "parent": "0", "child": 0}, {"kind": "propose", "parent": "0", "child": 1}, {"kind": "propose", "parent": "0", "child": 2}])},
    "entries": [entry("node", root)], "results": []}
# QA: a path 0.0 → 0.0.0 → 0.0.0.0 is selected; an attempt with two hops
# is retried with the reason; a grounded one is kept.
n3 = node("0.0.0.0", "0.0.0", 3, "rag:search", {"query": "Harbour Arena"}, "Harbour Arena in Lisbon holds 42000 people.", "Find the arena.")
path = {"trajectory_id": "src_0000_abcd1234_traj_0", "source_id": "src_0000_abcd1234", "nodes": [n00, n2, n3]}
sel = {"paths": [{"path": path, "score": 70, "depth": 24, "richness": 30, "diversity": 16}]}
qa_ok = {"question": "Which city's arena, where the fado singer from the singers search sang, holds how many people?", "answer": "42000",
         "reasoning_steps": [{"hop": 1, "fact": "Ana is a fado singer", "evidence": "Ana Duarte is a fado singer", "output": "Ana Duarte"},
                             {"hop": 2, "fact": "she sang at Harbour Arena", "evidence": "Ana Duarte sang at Harbour Arena", "output": "Harbour Arena"},
                             {"hop": 3, "fact": "it holds 42000", "evidence": "Harbour Arena in Lisbon holds 42000 people", "output": "42000"}]}
qa_two = dict(qa_ok); qa_two["reasoning_steps"] = qa_ok["reasoning_steps"][:2]
qa_state_entries = [entry("node", root), entry("node", n00), entry("node", n2), entry("node", n3), entry("selection", sel)]
cases["step_qa_retry.json"] = {"phase": "step", "settings": settings(),
    "vars": {"seed": state("qa", [{"kind": "qa", "path": 0, "attempt": 1}], stats={"nodes": 3})},
    "entries": qa_state_entries,
    "results": [gen(None, [{"content": "Here it is: " + json.dumps(qa_two)}])]}
cases["step_qa_kept.json"] = {"phase": "step", "settings": settings(),
    "vars": {"seed": state("qa", [{"kind": "qa", "path": 0, "attempt": 2, "feedback": "hops: ..."}], stats={"nodes": 3, "check_failures": {"hops": 1}})},
    "entries": qa_state_entries,
    "results": [gen(None, [{"content": json.dumps(qa_ok)}])]}
cases["step_qa_closed_book.json"] = {"phase": "step", "settings": settings(closed_book=True),
    "vars": {"seed": state("qa", [{"kind": "qa", "path": 0, "attempt": 1}], stats={"nodes": 3})},
    "entries": qa_state_entries,
    "results": [gen(None, [{"content": json.dumps(qa_ok)}])]}
cases["step_qa_closed_book_answered.json"] = {"phase": "step", "settings": settings(closed_book=True, max_retries=1),
    "vars": {"seed": state("qa", [{"kind": "closed_book", "path": 0, "attempt": 1, "qa_pair": qa_ok, "passed": ["non_empty", "no_leakage", "verbosity", "hops", "grounded"]}], stats={"nodes": 3})},
    "entries": qa_state_entries,
    "results": [gen(None, [{"content": "42000"}])]}
cases["written.json"] = {"phase": "written", "settings": settings(),
    "vars": {"seed": state("write", [], stats={"nodes": 30, "model_calls": 35, "tool_calls": 30, "qa_kept": 2})},
    "results": [{"type": "write_file", "data": {"path": "/out/trees.jsonl", "bytes": 10}}]}
cases["written_error.json"] = {"phase": "written", "settings": settings(),
    "vars": {"seed": state("write", [])},
    "results": [{"type": "write_file", "error": "write /out/trees.jsonl: no space left on device"}]}

for name, c in cases.items():
    c.setdefault("want", {})
    path = os.path.join("golden_seed", name)
    old = {}
    if os.path.exists(path):
        old = json.load(open(path))
    c["want"] = old.get("want", {})
    with open(path, "w") as f:
        json.dump(c, f, indent=2)
        f.write("\n")
