// Package external holds two workflows: "external", which runs an agent
// program of the user's against a journaled model gateway session (rLLM's
// AgentFlow protocol), and "external.session", the session run whose
// generate ops are that program's model calls.
//
// # external
//
//	start -> finish
//
// start asks for one external op (package handlers/external runs it);
// finish ends the run with {"answer", "termination_reason", "calls",
// "replayed", "exit_code"} as its result — the shape the rollout reads —
// and an "external" entry, or fails it ("agent_failed: ...") when the op
// reported an error.
//
// Settings (besides the common models and limits):
//
//	{"command": "python3 agent.py" | ["python3", "agent.py"],
//	 "model": "",            default: the only model of "models", else "simulated"
//	 "timeout_s": 0, "env": {}, "answer_file": "", "task_file": "task.txt",
//	 "trajectory_file": "", "episode_file": "episode.json",
//	 "name": "external",     the trajectory's name when the agent gives none
//	 "task_kwargs": {}}      a rollout task's kwargs, as FLOCK_TASK_KWARGS
//
// A rollout runs it as its agent with agent: {workflow: external,
// settings: {command: ...}}; with episodes on, trajectory_file defaults
// to trajectory.json, from which the lane builds each sample's episode.
//
// # external.session
//
//	wait -> call -> wait ...
//
// wait asks for one gateway_wait op (with the previous step, whose
// generate results it delivers); call turns the calls it returned into one
// generate op each (Meta gateway_call = the call's id), or ends the run
// with {"calls": N} once the session closed. The phases see the calls
// only as results: they stay pure.
package external
