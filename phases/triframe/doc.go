// Package triframe is the built-in "triframe" workflow: Flock's triframe
// agent as a phase graph. Before each action advisors advise, actors
// propose candidate actions, raters rate them and the best is executed.
//
// # Graph
//
//	init -> advisor -> actor -> advisor_ratings -> aggregate_ratings -> process -> tool_output -> advisor
//	advisor_ratings -> actor (no usable option) | process (one option) | end (retries used up)
//	aggregate_ratings -> actor (best mean below rating_threshold) | process
//	process -> advisor (set_timeout, an unusable call) | subagents (launch_subagents) | end (submit, conclude)
//	subagents -> tournament -> tournament ... -> advisor
//
// # Steps
//
// advisor sends one generate per advisor (tool advise), unless advising is
// off or no advisor is configured. actor records the advice ("advice"
// entries) and sends, per actor, a generate with the advice in its history
// and one without (only one when advising is off). advisor_ratings turns
// every output into an option: outputs without a valid call are dropped
// (their errors are shown to the actors on a retry), duplicates (same text,
// same call) merged. No option: back to actor with a warning, at most
// max_actor_retries times in a row, then the run ends failed with
// end_reason no_valid_action. One option (or no raters): it is chosen.
// Else every rater rates all options (tool rate_options, -2..2);
// aggregate_ratings takes the mean per option over all raters and samples
// and picks the best (ties: lowest index; nothing parsable: option 0). A
// best mean below rating_threshold (-0.25) goes back to actor, bounded the
// same way; when the retries are used up the best option is taken anyway,
// with a warning entry. process runs the choice: bash and python with the
// current timeout, score, score_log, sandbox tools (see below); set_timeout changes the timeout;
// submit submits and ends the run (end_reason submitted); tool_output
// formats the result with a usage notice.
//
// # Prompts and history
//
// The actor sees a system prompt, the task, then its own history: advice
// (with-advice variant only), its chosen calls as assistant tool calls,
// their results as role "tool" messages answering the call id, and
// warnings. In text modes (enable_tool_use false) calls are replayed as
// fenced blocks or XML elements and results as user messages. Histories
// are built newest-first, each message trimmed head+tail to output_limit,
// so that the whole prompt (the note included) stays under
// context_trimming_threshold characters, with a note when older history
// was cut. The newest action (its call), its output and what followed
// them (advice, warnings) are always kept: when they do not fit whole,
// all older history goes and the output is clipped head and tail, with a
// marker counting the characters cut, so the model always sees the result
// of what it just did. output_limit larger than
// context_trimming_threshold is refused before the run starts (an error
// naming both); left unset, output_limit is 10000 or the threshold,
// whichever is smaller. The advisor and the raters see a transcript of
// actions and outputs, trimmed the same way. Tool outputs carry "Usage: U of M <unit> used" with
// warnings at 80% and 95% (usage_warnings) of the limit_type limit; the
// limits themselves ("limits": tokens, actions, seconds, cost) are
// enforced by the engine, which ends the run with limit_*.
//
// # Subagents
//
// With enable_subagents the agent has launch_subagents. process spawns one
// child triframe run per agent (work directory children/agent_<step>_<k>,
// each child gets budget_share/n of every remaining limit, settings with
// subagent=true: conclude replaces submit and ends the child with its
// conclusion and a report of its last actions as result). The parent waits
// on the spawn operations. subagents records how they ended; agents given
// the same task then play a knockout tournament: per round, one judging
// generate (tool select_winner) per pair whose agents both concluded, byes
// and walkovers advance without one. The winners' conclusions and reports
// go back to the agent as the launch_subagents tool output.
//
// # Settings
//
// See Settings; Flock's keys (workflow_type, advisors, actors, raters,
// limit_type, intermediate_scoring, require_function_call,
// enable_advising, enable_tool_use, enable_xml, generator,
// context_trimming_threshold, output_limit, timeout) are accepted as they
// are; tools and sandbox_tools are flock's. CheckSettings rejects an empty actors list before the run starts,
// and keys that another would silently override, naming both:
// bash.timeout_s or python.timeout_s (timeout times every command), and a
// model entry with both temp and temperature. Flock's model-entry keys
// flock ignores (priority, cache_key ...) and unknown keys are warned
// about at start, never refused (Workflow.Settings declares the keys).
//
// # Sandbox tools
//
// tools names sandbox tools offered to the actors besides triframe's own,
// by full name ("text2sql:execute", "rag:search"); any other name is
// refused. The actors see "text2sql-execute" with the description and
// parameters of sandbox_tools, which the sandbox operation's handler fills
// in from the sandbox's registry when the run starts. A chosen call
// becomes a sandbox operation {action: the full name, params: the call's
// arguments, timeout_s: the current timeout}; tool_output shows its
// envelope's data as JSON, or "Error (code N): message". Native tool calls
// only: tools with enable_tool_use false is refused at start.
//
// # People in the loop
//
// With ask_human, each chosen action (one with a call) waits for a human
// operation asking "Approve the agent's next action? ..." with choices
// approve and reject; with intervention (or the run var intervention set
// to true, e.g. by a fork), for an intervention operation showing the
// action {name, arguments}, which an operator approves or replaces
// (POST /runs/{id}/intervene). Until a person decides, the choice is kept
// in the vars (pending), not in the log. process then records it as the
// choice and runs it, or records the operator's replacement as the choice
// (source "operator", note "replaced by the operator", the agent's pick in
// its summary, call id call_operator_STEP) and runs that; a rejection is a
// warning to the actors ("The operator rejected the action ...") and the
// step goes back to the advisor, nothing run. A replacement naming a tool
// the run does not offer gets the usual "not available" tool output.
//
// # Entries
//
// task, advice, options, ratings, choice, tool_output, warning, subagents,
// tournament and conclusion; each has a one-line "summary". An
// operator_message entry (injected by a fork) reaches the actor as a user
// message "Message from the operator: ..." and the advisor and raters in
// their transcript.
package triframe
