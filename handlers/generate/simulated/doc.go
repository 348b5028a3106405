// Package simulated is the simulated model provider: a deterministic
// policy with no network that answers generate requests well enough to
// drive flock's agents end to end (the README's quick start, the e2e
// tests). A reply depends only on the run's task, the request's role
// metadata and the request's structure, never on time, randomness or the
// wording of its prompts; the generate handler adds usage estimates and
// reports Model.
//
// # What steers it
//
// What the request asks the model to play is the role its phase set in
// Meta (operations.MetaRole: actor, advisor, rater, judge, explorer,
// synthesizer, closed_book or grader; every built-in phase set sets one).
// The rest of what a prompt says in words comes as labels too: the answer
// format of a request without tools (operations.MetaFormat, fenced or
// xml), the attempt of a re-ask (MetaAttempt), the branch an explorer
// grows (MetaBranch), the failed steps of a synthesizer's trajectory
// (MetaFailedSteps). Without a role, a tool-mode request is told by the
// tools offered (the forced tool_choice first); a text-mode request gets a
// plain text reply. The task is the run's (Input.Task, handlers.Env.Task),
// not a part of the prompt.
//
// The data a role works on is read as a model reads it, by its place and
// form, never by the words around it: the history of an agent from its
// own tool calls (or fenced and XML blocks) and the tool outputs after
// them; the commands a transcript holds from their JSON arguments
// ({"command": ...}); options from their numbering (<option_2>,
// <choice-2>, "Option 2:" or "[2]" lines, whatever they are called); a
// synthesis prompt's tools, taken actions and trajectory steps from their
// layout (see synthesis.go). Rewording every prompt of the phases leaves
// every reply the same (TestRewordedPromptsSameRuns).
//
// # Roles
//
//   - rate_options (raters): finds the numbered options in the last message
//     and rates each in [-2, 2] by how much the commands and tool names it
//     holds (whole words) look like progress: submit 1.8, creating a file
//     1.5, reading or counting (cat, wc, head, grep) 1, ls -la 0.75, ls/pwd
//     0.5, rm -rf/sudo -2. Text mode: a ```json {"ratings": [...]} block.
//   - advise (advisors): one sentence naming the actor's next planned
//     command not yet in the transcript (or "submit"). Text mode: an
//     ```advise block.
//   - bash or run_bash, python, submit or conclude (actors): a plan derived
//     from the run's task: "ls -la"; then, when the task says "create NAME
//     containing TEXT", printf TEXT into NAME; then "wc -w|-l|-c < FILE" when
//     it asks for a word/line/character count of a file, "ls -1 | wc -l"
//     for a file count, or "cat -- FILE" for a file it mentions; with no
//     such instruction "pwd" and "head -n 40" of the first file the listing
//     showed. Commands already run (found in the history) are skipped; once
//     the plan is done (or after 6 commands) it calls submit (or conclude)
//     with the first line of the last tool output, reduced to its leading
//     number when it has one (so "wc -w < hello.txt" yields "1").
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
//   - explorer, synthesizer, closed_book: the synthesis roles (synthesis.go);
//     grader: a {"correct", "reasoning"} verdict, correct when the last
//     quoted text of the prompt (the candidate) states one of those before
//     it (grader.go).
//   - no tools and no role: a short text reply quoting the last message.
//
// For "create hello.txt containing hi and submit its word count" a triframe
// agent runs ls -la, printf 'hi' > hello.txt, wc -w < hello.txt, then
// submits "1".
package simulated
