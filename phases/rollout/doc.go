// Package rollout is the built-in "rollout" workflow: a benchmark rollout
// (AgentFlow's Rollout module, rLLM's eval runner, AgentFly's multi-chain
// rollout) as phase graphs. Every sample — one task × one chain — is a
// child run of any registered agent workflow (react by default; triframe,
// modular, YAML or plugin workflows work too), graded with package grading,
// and written to the output files as it finishes.
//
// # Concurrency: lanes
//
// The executor calls a phase only when all operations of the previous step
// have finished, so a parent that spawns its samples directly keeps a
// batch barrier: a round of max_concurrency samples lasts as long as its
// slowest one. The rollout therefore spawns lanes, a second workflow
// ("rollout.lane"): up to max_concurrency lanes, each running its share of
// the samples one after another with exactly one agent in flight, so the
// concurrency stays at max_concurrency until the lanes run dry. Samples are
// dealt round-robin in task order, so the chains of a task run side by
// side and tasks finish roughly in order. A lane's step that grades sample
// i also spawns sample i+1, and the appends of sample i's row and episode
// run beside the next agent.
//
// items_per_lane N > 0 bounds the lanes instead: rounds of max_concurrency
// lanes with N samples each, the rollout refilling after each round (with
// N = 1 this is plain batching). Measured (bench: 100 tasks × 4 chains,
// max_concurrency 32, one agent in ten taking 1 s, the rest 50 ms): lanes
// 5.8 s, items_per_lane 4 8.8 s, batches 15.1 s. Rounds buy two things:
// the evaluation and summary files are rewritten after every round, and
// each finished lane (with items_per_lane 1, each sample) is an op event
// on the rollout's own event stream.
//
// Do not cap "spawn" in the executor's per-kind concurrency: lanes hold a
// spawn slot while their agents need one.
//
// # Phases
//
//	rollout: init   -> load     read the benchmark and the manifest
//	         load   -> resume   read the earlier results (manifest found)
//	                 | run | report | done   plan and spawn the first round
//	         resume -> run | report | done
//	         run    -> run | report | done   collect rows; next round or final reports
//	         report -> done         rewrite the episodes file, write the groups
//	         done   -> end          check the final writes; result = summary
//	lane:    start -> agent_done -> (evaluated ->) agent_done ... -> finish
//
// # Settings
//
//	{"data_path": "bench.jsonl", "benchmark_name": "", "output_dir": "results",
//	 "agent": {"workflow": "react", "settings": {...}},
//	 "num_chains": 1, "max_concurrency": 16, "items_per_lane": 0,
//	 "max_tasks": 0, "task_ids": [],
//	 "evaluation_metric": "exact_match", "correct_threshold": 1,
//	 "judge": {"model": ..., "instructions": ""},
//	 "verifier": {"command": "", "timeout_s": 300},
//	 "episodes": true, "advantages": ["grpo", "rloo"], "grpo_no_std_norm": false,
//	 "groups_drop_failed": false, "regrade": false,
//	 "segment_reward": "last_only", "gamma": 0.9,
//	 "resume": true, "retry_failed": true,
//	 "models": {...}, "limits": {...}}
//
// Relative data_path and output_dir are resolved against the run's work
// directory (flock rollout resolves them against the config file first).
// data_path must lie beneath the work directory or a read root of the
// server, and output_dir beneath the work directory: a rollout started
// over HTTP writes its results there (package files). flock rollout adds
// the config's directory, the files it names and its output directory.
// The agent's settings inherit "models" unless they declare their own; for
// react and external with episodes on, trajectory_file defaults to
// "trajectory.json". An external agent (agent: {"workflow": "external",
// "settings": {"command": ...}}, package phases/externalagent) is any program
// calling flock's model gateway; its trajectory file holds the steps
// built from its model calls, or its whole episode when it named several
// trajectories, which then all enter the sample's episode.
// A task's kwargs reach the agent as settings key task_kwargs; react hands
// them to its tools (bash variables and FLOCK_TASK_KWARGS, python's dict
// task_kwargs), as AgentFlow passes them to every tool call.
//
// AgentFlow's rollout config keys are accepted as they are (AgentFlowKeys):
// max_workers is max_concurrency, number_of_tasks max_tasks, model_name
// with base_url and api_key ("${VAR}" only) a model entry and the agent's
// model, max_turns, available_tools, system_prompt(_file) the react
// agent's, evaluate_results false and trajectory_only none as metric,
// save_trajectories episodes, evaluator_* the judge; parallel,
// save_results, save_summary and the sandbox keys are accepted and have
// nothing to do. A flock key beside its AgentFlow alias must agree.
// question (flock rollout --question) replaces data_path with one task.
//
// # Benchmark
//
// See ParseBenchmarkAs: JSONL, a JSON list or {"data": [...]}, CSV or TSV
// (a header row; a cell holding a JSON array or object is taken as one),
// or Parquet (read_file "as": "jsonl" converts it in the files handler,
// outside the phase) — data_format, or by data_path's extension. fields
// maps flock's row fields to the file's columns; without it: id/task_id,
// question/query/input/instruction/prompt (a string, or a list of chat
// messages whose last user message is the question and which reach react
// as input_messages), answer/ground_truth/expected (a list means several
// acceptable answers), choices (multiple choice: the question lists them
// lettered A, B, ...; the target is a letter, a 0-based index or the
// choice's text; the references are [letter, text], graded by the choice
// metric), kwargs, verifier (a per-task command); other keys are metadata.
// Selection: task_ids, then shuffle with seed, offset, limit, max_tasks.
//
// # Grading
//
// A failed agent run scores 0 and counts as failed. Otherwise, with a
// verifier (the task's or the settings'), the verifier runs in the agent's
// work directory (the one its spawn result names, <lane work dir>/children/
// t<index>-c<chain>; the trajectory file is read from there too) with
// FLOCK_TASK_ID, FLOCK_CHAIN, FLOCK_ANSWER and FLOCK_GROUND_TRUTH set, and
// its stdout (whole, or last line) is grading.ParseVerifierOutput's
// {"reward", "is_correct", "signals"}. Else the metric scores the answer
// against the references (best over them) and correct = score >=
// correct_threshold; llm_judgement asks the judge model (a generate op of
// the lane) and a reply without a clear verdict is an eval error scoring 0,
// never a guess; an empty answer is wrong without asking. Samples without
// references or verifier are "not evaluated" and left out of the means.
//
// metrics, verifiers and primary add scores beside the base grade (each
// row's scores, the summary's score_means) and choose the one that is the
// row's score; reducers (mean, max, mode, at_least_K) reduce each task's
// primary scores over its chains into the summary's reduced.
//
// # Files (in output_dir; ts = the rollout's start, UTC, 20060102_150405)
//
//   - results_<bench>_<ts>.jsonl: one Row per sample. Lanes append each
//     row as its sample finishes (so while a rollout runs, a later line for
//     the same task_id and chain supersedes an earlier one); the report
//     phase rewrites the file whole, one line per (task_id, chain) with
//     its current row, at the end of every rollout, re-run or re-grade:
//     written aside, synced and renamed over the old file, then the
//     directory synced, so a crash leaves the old file or the new one,
//     never a torn one. Rows of samples this rollout has no row of (other
//     tasks, or samples it was to run again but did not) are kept as they
//     were.
//   - evaluation_<bench>_<ts>.json: Evaluation.
//   - summary_<bench>_<ts>.json: Summary (also the run's result): the
//     scorer mean_score is of (metric and primary: the primary scorer, the
//     default verifier, or evaluation_metric), mean
//     score with failures as 0, success rate, pass@k for k = 1 ..
//     num_chains (unbiased estimator), signal means, error counts, tokens,
//     cost, timings, file names.
//   - episodes_<bench>_<ts>.jsonl: one grading.Episode per sample (id
//     "task_id:chain"), its trajectory read from the agent's trajectory
//     file, reward = score, segment rewards per segment_reward, rLLM's ids
//     (trajectory uid, step id, done, info), output and metadata. Lanes
//     append it as samples finish; the report phase rewrites it whole,
//     one line per sample of the results, with the final grades (so a
//     re-run or a re-grade leaves no duplicate ids).
//   - groups_<bench>_<ts>.jsonl (with advantages; needs episodes):
//     GroupLine, rLLM's TrajectoryGroup — group_id "task_id:name", the
//     trajectories themselves, metadata aligned with them (task_id,
//     rollout_idx, episode_id, termination_reason, is_correct) — plus the
//     requested GRPO/RLOO advantages in trajectory order. A group holds
//     every graded sample of its task and trajectory name: a failed agent
//     is a member with reward 0 and its termination reason (unless
//     groups_drop_failed), a sample nothing graded is in no group.
//   - rollout_<bench>.json: Manifest naming ts; a re-run with resume true
//     continues these files.
//
// # Resume
//
// A crash (or a stop) resumes through the engine: the rollout, its lanes
// and their agents are durable runs; a finished agent is never run again
// (spawn ids derive from op ids), and appends dispatched again skip a line
// already at the end of the file. Re-running the same settings with the
// same output_dir reads the manifest, keeps the rows already in the
// results file (failed ones are run again unless retry_failed is false)
// and runs only the rest; the summary covers all of them. Grades never go
// stale: the manifest records the grading (benchmark hash, metric,
// threshold, judge, verifier) and each row the hashes of its task's
// input and grading; a row whose grading changed is re-graded from its
// stored answer (a lane item without an agent), a row whose task's
// question or kwargs changed is run again, and the plan, a warning entry
// and the summary's notice say so. regrade true re-grades every stored
// row and runs no agent.
//
// # Streaming
//
// Every run streams its own events (GET /runs/:id/events), and each stream
// ends with its run: the rollout's stream shows lanes starting (phase
// events listing spawn ops) and ending (spawn op events); a lane's stream
// shows each sample's agent starting and ending, its verifier or judge,
// and a "row" entry per sample; an agent's stream shows each generation
// and tool call start (phase events listing generate, bash ... ops) and end
// (op events, with errors). flock rollout follows the lanes' rows.
//
// # Caveats
//
//   - Phases here import metrics (pure Go: no I/O, clock or randomness);
//     this is the one exception to "phases, operations and the standard
//     library only".
//   - Samples are assigned to lanes up front: with items_per_lane 0 a lane
//     that draws slow samples finishes last (no work stealing between runs).
//   - In lanes mode the evaluation and summary files are written once, at
//     the end (and rewritten by a re-run); the results file is the live
//     record.
//   - Two rollouts writing the same output_dir at the same time interleave
//     their lines; do not.
//   - Re-grading a verifier-graded sample runs the verifier in the earlier
//     agent's work directory (the row's work_dir); if it is gone, or hidden
//     by the lane's isolation, the sample is an eval error scoring 0.
//   - A chat-message input opens react's conversation; a context fold then
//     keeps its system message, its first user message and the summary.
//   - The report phase reads the whole results and episodes files (up to
//     the read_file cap, 64 MiB each) and writes them and the groups back:
//     all pass through the journal. A failed read leaves that file as
//     appended (and, for the episodes, writes no groups) and fails the run
//     with a write error.
package rollout
