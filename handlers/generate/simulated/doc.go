// Package simulated is the simulated model provider: a deterministic
// policy with no network that answers generate requests well enough to
// drive flock's agents end to end (the README's quick start, the e2e
// tests). Reply depends only on the request (an FNV hash of messages, tool
// names and tool_choice) and its role, never on time or randomness; the
// generate handler adds usage estimates and reports Model.
//
// # Roles
//
// What the request asks the model to play is the role its phase set in
// Meta (operations.MetaRole: actor, advisor, rater or judge; triframe sets
// all four, modular sets actor). Without a role, a tool-mode request is
// told by the tools offered (the forced tool_choice first); a text-mode
// request (no tools, or tool_choice "none") gets a plain text reply. The
// prompt's wording never selects the role; in text mode the system prompt
// only tells the answer format (fenced blocks such as ```bash, or <bash>
// tags), and the task is read from the prompt as a model would:
//
//   - rate_options (raters): finds the numbered options in the last message
//     (<option_N> tags, "Option N:" lines or "[N]" lines) and rates each in
//     [-2, 2] by how much it looks like progress: submit 1.8, creating a
//     file 1.5, reading or counting (cat, wc, head, grep) 1, ls -la 0.75,
//     ls/pwd 0.5, rm -rf/sudo -2. Text mode: a ```json {"ratings": [...]}
//     block.
//   - advise (advisors): one sentence naming the actor's next planned
//     command (or "submit"). Text mode: an ```advise block.
//   - bash or run_bash, python, submit or conclude (actors): a plan derived
//     from the task (a <task> block, the text after "task:", or the first
//     user message): "ls -la"; then, when the task says "create NAME
//     containing TEXT", printf TEXT into NAME; then "wc -w|-l|-c < FILE" when
//     it asks for a word/line/character count of a file, "ls -1 | wc -l"
//     for a file count, or "cat -- FILE" for a file it mentions; with no
//     such instruction "pwd" and "head -n 40" of the first file the listing
//     showed. Commands already run (found in the history) are skipped; once
//     the plan is done (or after 6 commands) it calls submit (or conclude)
//     with the first meaningful line of the last tool output, reduced to its
//     leading number when it has one (so "wc -w < hello.txt" yields "1").
//     Without submit/conclude it calls score once. Output 0 and even
//     outputs follow the plan; odd outputs propose a lighter exploratory
//     command, and the thought text varies with the request, so n > 1 and
//     the triframe with/without-advice actors give raters differing options.
//     Text mode: a thought then a ```bash block, or a ```submit block.
//   - sandbox tools (actors, tool mode): with text2sql-execute offered and
//     a question mentioning a database (or sql, tables), text2sql-list_databases
//     (when offered), then text2sql-execute listing the tables of the
//     database the question names ("the concert database", else the first
//     listed), then, for "how many X", SELECT count(*) of the table named
//     X, then submit with the first cell of the last result; otherwise,
//     with rag-search offered, rag-search with the question, then submit
//     with the first passage's first line.
//   - a judge tool (select_winner, or a name with winner/judge/select/
//     choose/pick/rank/compare/vote): arguments filled from the schema,
//     choice fields picking by hash among agent ids or option indices found
//     in the prompt.
//   - any other tool: the forced or first tool, arguments filled from its
//     JSON Schema.
//   - no tools: a short text reply quoting the last message.
//
// For "create hello.txt containing hi and submit its word count" a triframe
// agent runs ls -la, printf 'hi' > hello.txt, wc -w < hello.txt, then
// submits "1".
package simulated
