// Package react is the built-in "react" workflow: a tool-calling agent loop
// (AgentFlow's AgentRunner, done right). The system prompt and the task (the
// run's task text) open the conversation; each turn the model replies, and
// every tool call of the reply is executed — all of them, in parallel, each
// answered by its own tool message carrying its tool_call_id. The run ends
// when the model calls submit, replies without a tool call, or reaches
// max_turns. A failed model call ends it as failed (there is no turn to
// go on from), with the failure's code as end reason: model_error or
// rate_limited for what cannot get better, timeout or unavailable for a
// transient failure that lasted through the retries, generate_failed when
// the call gave no code; the run's error is the call's.
//
// # Settings
//
//	{"model": "gpt-4o-mini" | {"model": ..., "temp": ..., "max_tokens": ..., "logprobs": true},
//	 "system_prompt": "..." | ["...", "..."], "system_prompt_file": "prompt.txt",
//	 "tools": ["bash", "python", "submit"],          // also "summarize" and sandbox tools; [] offers none
//	 "max_turns": 30, "tool_choice": "", "tool_timeout_s": 0,
//	 "output_limit": 4000, "context_chars": 0,
//	 "fold": {"summarize": false, "trigger_turns": 0, "nudge": "base|detail|progress|TEXT", "force": false},
//	 "trajectory_file": "", "trajectory_name": "react",
//	 "models": {...}, "limits": {...}}                // the engine's keys
//
// # Phases
//
//	start   -> prompt (read system_prompt_file) | act (generate)
//	prompt  -> act (generate)
//	act     -> observe (the turn's tool ops, in parallel) | end
//	observe -> act (generate) | end
//
// Calls are validated with the agent toolkit. An invalid call (unknown
// tool, arguments that are not a JSON object or miss a field) runs nothing
// and is answered with an error tool message, so the model can fix it; the
// original ran only the first call, parsed bad JSON as {} and let task
// kwargs override the model's arguments. Calls to the same stateful tool
// (the bash session, the python interpreter) are dispatched together but
// run one at a time in their handler, in no guaranteed order: calls that
// depend on each other belong in separate turns. When a turn both submits
// and runs other tools, the other tools still run and are answered before
// the run ends.
//
// # Final answer
//
// submit's answer is the final answer. A reply without tool calls is the
// final answer under ExtractAnswer's rules: <answer> tag, \boxed{}, a whole
// word "final answer"/"answer" label, else the last non-empty line. At
// max_turns the answer is extracted from the newest assistant message with
// content. The run's result (End.Result) is a Result object
// {answer, termination_reason, answer_source, turns, segments, error}.
//
// # Context folding
//
// With fold.summarize (or fold.trigger_turns) the model is offered
// summarize(summary). After a turn that called it (its other calls run and
// are answered first), a "fold" entry is appended and a new segment starts
// whose context is the system prompt and the task followed by
// "[Previous Summary]: <summary>" (earlier summaries are not repeated),
// then, when the folding turn also called other tools, a copy of that turn
// (marked carried: not a model call, no trajectory step) with only those
// calls and their results, so the model sees what they returned. With
// fold.trigger_turns N, once the segment holds N assistant turns a user
// nudge asks for a summary, once per segment; fold.force makes that turn's
// tool_choice summarize. The log keeps every message of every segment, so
// the pre-fold history stays as a finished segment.
//
// # Trajectory
//
// With trajectory_file set, the last phase writes the run's trajectory
// (BuildTrajectory: a grading.Trajectory, one step per model call with its
// context, reply, tool calls as action, segment index, and completion
// token ids and logprobs when the endpoint returned them). The rollout
// workflow reads it to build episodes. The file holds each step's whole
// context, so it grows with the square of the turns.
//
// # Caveats
//
//   - Phases import metrics (pure Go: no I/O, clock or randomness) for the
//     trajectory types; this is the one exception to "phases, operations and
//     the standard library only".
//   - context_chars trims what is sent, not what is logged; trajectories
//     record the untrimmed context. The newest turn (the last assistant
//     message, its calls' results, a nudge) always stays, its contents
//     clipped head and tail when they do not fit whole; output_limit
//     above a set context_chars is refused, and unset it defaults to at
//     most context_chars.
//   - Entry types "message" and "fold" and the Result object are persisted
//     and read by the rollout: add fields, never rename them.
//
// # Sandbox tools
//
// Any tool of the sandbox service is offered by its full name in tools
// ("text2sql:execute", "rag:search"). The model sees it as
// "text2sql-execute" (":" mapped to "-", other characters an OpenAI
// function name cannot hold to "_"), with the description and JSON-Schema
// parameters of the settings key sandbox_tools, which the sandbox
// operation's handler fills in from the sandbox's registry when the run
// starts (phases stay pure). A call becomes a sandbox operation
// {action: "text2sql:execute", params: the call's arguments, timeout_s:
// tool_timeout_s}; its tool message is the envelope's data as JSON, or
// "Error (code N): message" for a failed one.
package react
