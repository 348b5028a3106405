// Package modular is the built-in "modular" workflow: Flock's single-model
// agent loop, rebuilt on flock's durable engine with the shared agent
// toolkit (phases/agent).
//
// # Phases
//
//	init -> prompter -> generator -> discriminator -> actor -> tool_output -> prompter
//	                        ^------------' (retry)        '--> prompter (set_timeout, no valid call)
//
// What each phase does:
//
//   - init records a "task" entry (task, model, tools, mode, tokenizer).
//     No operations: the task comes with the run; usage and limits are
//     read from the state (the engine keeps them).
//   - prompter (no ops) rebuilds the conversation from the log, writes a
//     usage message and decides by tokens what the next prompt keeps. It
//     stores only that decision (the small "context" var), never the
//     messages, so each step persists O(change).
//   - generator (one generate) sends the system prompt, the task, the
//     kept history, a trimmed-history notice when something was cut and
//     the usage message, with the tools in tool mode, n from the entry.
//   - discriminator (no ops) picks the first output with content, a valid
//     call or an attempted call and appends a "choice" entry. When the
//     generate failed or every output was empty it appends a warning and
//     goes back to the generator.
//   - actor: no valid call -> a warning that answers the call (so every
//     call in the history keeps its result) -> prompter; set_timeout ->
//     a tool_output entry and the "timeout" var -> prompter; submit -> a
//     submit operation and the end of the run (end_reason "submitted");
//     bash, python, score, score_log -> the operation -> tool_output.
//   - tool_output formats the result with agent.FormatResult (stdout,
//     stderr, exit code, timeout note; each part trimmed to output_limit)
//     and appends a tool_output entry -> prompter.
//
// Retries are bounded: max_retries consecutive generations without a
// usable action (failed generate, all outputs empty, no valid call) each
// append a warning; one more ends the run as failed with end_reason
// no_usable_output or no_valid_call. Usage limits ("limits" in the
// settings) are enforced by the engine, which ends the run with
// limit_tokens, limit_actions, limit_time or limit_cost.
//
// # Settings
//
//	{"generator": {"model": "gpt-4o", "n": 1},   required: a model entry (agent.Model)
//	 "limit_type": "token",                      token|action|time|cost: reported first in the usage message
//	 "intermediate_scoring": false,              score/score_log instead of submit (also scoring.intermediate)
//	 "enable_tool_use": true, "enable_xml": false, native tools, else ```tool fenced blocks or <tool> XML
//	 "require_function_call": false,             tool_choice "required" (tool mode)
//	 "context_trimming_threshold": 80000,        prompt budget in TOKENS (see below)
//	 "keep_first_messages": 4,                   messages always kept, counting system prompt and task
//	 "output_limit": 10000,                      bytes per tool output / replayed message, head+tail kept (at most 4 per threshold token)
//	 "timeout": 60,                              initial bash/python timeout, seconds (bash.timeout_s and
//	                                             python.timeout_s are refused beside it: it times every command)
//	 "max_retries": 3,                           consecutive failures before the run ends
//	 "usage_warnings": [0.75, 0.9],              hint thresholds of the usage message
//	 "tokenizer": "auto"}                        auto|o200k_base|cl100k_base|approx
//
// # Tokens
//
// context_trimming_threshold is in tokens here, not characters as in
// triframe: the whole prompt (system prompt, task, history, notice, usage
// message and tool definitions) is kept under it. The prompter keeps the
// first keep_first_messages (extended so a call at the boundary keeps its
// result), then walks the history newest-first and keeps every call with
// its answer that still fits (agent.Budget with a token Measure); when
// anything was cut a notice says how many messages are hidden. The newest
// turn (the last choice and its result) is always kept: when it does not
// fit whole, all older history beyond the first messages goes and its
// contents are clipped head and tail (a marker counts the characters cut;
// the plan records the clips in the context var), so the model always
// sees the result of its last action. An output_limit above 4 bytes per
// token of context_trimming_threshold is refused before the run starts
// (an error naming both keys); left unset, output_limit defaults to 10000
// or that bound, whichever is smaller.
//
// Tokens are counted with the model's real BPE for OpenAI models
// (o200k_base for gpt-4o, gpt-4.1, gpt-5, o1/o3/o4 ...; cl100k_base for
// gpt-4 and gpt-3.5), found through settings.models[name].name when the
// model is declared there; other models (Claude, Llama, simulated ...) are
// estimated at bytes/4. The count of each choice and tool output is
// recorded in its entry when it is appended, so a step tokenizes only what
// is new. This package is the one phase package that imports a library
// besides phases, operations and the standard library:
// github.com/tiktoken-go/tokenizer, whose BPE tables are compiled in (no
// download, no I/O) and whose counts are a pure function of the text.
//
// # Usage message
//
// Every prompt ends with a user message reporting the usage of the
// chosen limit type, then of every other limited dimension. When the
// largest fraction used passes 75% (90%), a hint to wrap up (to submit
// now) follows. Flock looked at tokens and time only; actions and cost
// count here too because the engine enforces those limits as well.
//
// # Text modes
//
// With enable_tool_use false, no tools are sent; the system prompt lists
// them and the convention (fenced blocks, or XML with enable_xml), the
// discriminator parses outputs with agent.ParseOutput, and the history
// replays each executed call as a block (agent.RenderText) and each
// result as a user message wrapped in <tool-output> tags.
//
// # Sandbox tools
//
// tools names sandbox tools offered besides modular's own, by full name
// ("text2sql:execute"); any other name is refused. The model sees
// "text2sql-execute" with the description and parameters of
// sandbox_tools, which the sandbox operation's handler fills in from the
// sandbox's registry when the run starts. The actor runs a call as a
// sandbox operation {action: the full name, params: the call's arguments,
// timeout_s: the current timeout}; tool_output shows its envelope's data
// as JSON, or "Error (code N): message". Native tool calls only: tools
// with enable_tool_use false is refused at start.
//
// # Caveats
//
// The generator applies the prompter's plan to the log as it is then: a
// retry warning appended by the discriminator joins the end of the prompt
// without a new trimming decision (a few dozen tokens over the budget at
// most). The prompter and the generator decode the whole log each step:
// persistence is O(change), but phase CPU grows with history (about 16 ms
// per prompter step at 500 actions with recorded counts, 43 ms when every
// message is tokenized again; BenchmarkPrompter). Entry types are
// persisted: add fields, never rename them.
package modular
