// Package config reads what an AgentFlow-style synthesis starts from:
// its config, its seeds and its tools. The workflow itself is package
// phases/synthesis; the shared data is synthesis/trajectory, the path
// selector synthesis/selector and the QA prompt and checks synthesis/qa.
//
// # Config
//
// Parse takes AgentFlow's SynthesisConfig keys as they are (seeds_file,
// output_dir, available_tools, model_name, max_depth, branching_factor,
// depth_threshold, min_depth, max_selected_traj, path_similarity_threshold,
// number_of_seed, seed_description, sampling_tips, synthesis_tips,
// qa_examples, sandbox_server_url; resource_types, resource_init_configs
// and sandbox_auto_start are accepted and have nothing to do) plus flock's
// own (max_concurrency, seed_limits, max_retries, max_reasks, proposal_format,
// closed_book, selection_weights...; see Config). Defaults are AgentFlow's
// dataclass defaults (max_depth 5, branching_factor 2, depth_threshold 3,
// min_depth 2, max_selected_traj 3, path_similarity_threshold 0.7).
//
// Unknown keys are refused, at any depth ("limits.tokns" as well as
// "max_dept"), naming each and the closest known key: AgentFlow dropped
// them silently, so a typo ("max_dept") ran with the default. The same
// rule holds for a config given to flock synthesize and for settings
// sent to POST /start_workflow.
//
// "${VAR}" references are expanded by Expand, which flock synthesize runs
// on the file before Parse (AgentFlow expanded none). api_key is never
// expanded: it must be "${VAR}" and names the variable the model handler
// reads the key from, so no key is stored with a run. Settings sent over
// HTTP must be expanded by the client: Parse refuses a "${" left in a value.
//
// flock's common "limits" is the budget of the whole synthesis, and the
// synthesis keeps within it itself (the workflow declares SharesLimits, so
// the engine does not end it mid-way without its summary): each lane gets
// an equal share, each seed run its lane's remaining share as its own
// limits, and a lane whose share is spent starts no more seeds. As with
// any run's limits, a seed run's are checked between its steps, so the
// step that crosses one finishes (at most max_concurrency calls over). Their
// seeds are listed in the summary with reason budget_spent, and a re-run
// with more budget does them. seed_limits caps each seed's run.
//
// # Seeds
//
// ParseSeeds reads JSONL {content, kwargs?}, a JSON list (strings or
// objects) or plain text lines, with AgentFlow's source ids
// ("src_0007_1a2b3c4d"). kwargs fill in the params of every tool call the
// model did not set (AgentFlow let them overwrite the model's).
//
// # Tools
//
// ExpandTools resolves available_tools, "resource:*" wildcards included,
// against the sandbox's tool names; an unknown name refuses the run. The
// sandbox operation's handler runs it when a synthesis starts and writes
// the schemas of the concrete tools into the run's sandbox_tools, which
// the sampler offers the model and the selector counts diversity against.
package config
