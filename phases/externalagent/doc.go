// Package externalagent holds two workflows: "external", which runs an agent
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
// reported an error; with the failure's code as end reason (model_error,
// rate_limited) when the op's error carries one (the agent's model call
// could not be served).
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
//	wait -> wait ...
//
// wait asks for one gateway_wait op, which waits for the agent's next
// calls, answers them (each as a generate, Meta gateway_call = the call's
// id) and returns prompts and answers as its result, so that a call costs
// one commit: this phase's next output, which carries that result. The
// op it asks for names the step just finished (deliver_step), whose
// answers it hands to their callers first, once they are on disk. It ends
// the run with {"calls": N} once the session closed. The phase sees the
// calls only as results: it stays pure.
//
// A session run journaled before gateway_wait answered its calls (its
// steps alternated "wait" and "call", with one generate op per call)
// ends if resumed at "call", a phase this workflow no longer has; the
// external op then starts a new session run that replays the old one's
// answers.
package externalagent
