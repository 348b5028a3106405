// Package agent is the toolkit the agent workflows (triframe, modular,
// react) share: model entries, tool definitions and argument validation,
// text tool modes, output formatting, usage notices and history fitting.
// It is pure like every phase package: no clock, randomness or I/O, and it
// imports only phases' siblings (operations) and the standard library.
//
// # Model entries
//
// Model mirrors Flock's MiddlemanSettings (model, temp, n, max_tokens,
// reasoning_effort, stop, logprobs, ...) so Flock settings files load as
// they are. Model.Request turns an entry plus messages and tools into an
// operations.GenerateRequest. An unset temp is not sent (the endpoint's
// default applies; Flock sent 0, which reasoning models reject).
//
// # Tools and calls
//
// Spec describes one tool: its OpenAI function schema, how a text-mode block
// maps onto its arguments, and its validation. Lookup finds the built-in
// specs (bash, python, set_timeout, submit, score, score_log, advise,
// rate_options, launch_subagents, conclude, select_winner); Tools turns a
// list of names into operations.Tool values. Validate checks a call's JSON
// arguments and returns them in canonical form (a Call); Call.Decode reads
// them into the typed argument structs (BashArgs, ...).
//
// # Text tool modes
//
// With tool use disabled the model writes calls as text. ModeFenced reads
// the first fenced block whose info string names an offered tool
// ("```bash\nls\n```"); ModeXML reads the first <tool>...</tool> element.
// Rules (Flock's, improved):
//
//   - the first block naming an offered tool is the call; blocks in other
//     languages are skipped whole, so an example ```json block before the
//     call does not hide it;
//   - the block's body is the tool's single text argument (command, code,
//     answer, advice ...); set_timeout's body must be an integer; tools with
//     several arguments (rate_options, launch_subagents, select_winner) take
//     a JSON object; argument-less tools (score, score_log) accept an empty
//     block;
//   - an empty body is no call, except for argument-less tools;
//   - advise is greedy: its body runs to the last closing fence (or tag), so
//     advice may itself contain code blocks;
//   - a closing fence must be at least as long as the opening one, so a
//     body containing ``` can be fenced with ````; a block left open at the
//     end of the text (a stop sequence cut it) runs to the end;
//   - aliases: sh and shell mean bash, py and python3 mean python;
//   - ParseOutput falls back to the other text convention when the text has
//     no call in the configured one (models mix them up).
//
// RenderText writes a call back as a block, so text-mode history replays
// the calls that were executed (not whatever else the model wrote);
// ParseText(RenderText(c)) gives c back for valid calls.
//
// # Outputs, usage and history
//
// FormatResult renders a tool result for the model (stdout, "Error: " +
// stderr, "Exit code: N", python output and error, score, score log), each
// part trimmed head+tail to an output limit by Trim; a sandbox result
// carrying a base64 PNG in data.image (vm:screenshot) shows
// "[PNG image WxH, N KB]" there instead, and ResultImages returns the
// image, which react, triframe and modular attach to the tool's message
// (operations.Message.Images, ToolOutput.Images) for the generate handler
// to send to models with vision (see package handlers/generate). Images
// are kept in the run's history like the text. UsageNotice renders
// "N of M tokens used" with warnings at configurable fractions of the
// chosen limit. Budget.Fit keeps the newest messages that fit a character
// (or, with a custom Measure, token) budget, never separating a tool call
// from its results, and adds a note when older history was cut.
//
// # Caveats
//
// Entry types here (Option, ToolOutput, Warning) are persisted in run logs:
// add fields, never rename them.
package agent
