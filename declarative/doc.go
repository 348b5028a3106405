// Package declarative compiles workflow files — YAML or JSON documents
// whose operations are templates and whose conditions are expr expressions
// — into phases.Workflow values that the executor (package workflows) runs
// like any compiled-in workflow. It needs nothing of the executor: a
// compiled workflow is a set of pure phases.
//
// # Loading
//
// LoadWorkflowDir registers every *.yaml, *.yml and *.json file of a
// directory, in sorted order; LoadWorkflowFile and ParseWorkflow compile
// one. Every expression and template is compiled at load time, so a file
// that loads never fails a run with a syntax or type error. Load errors
// wrap ErrWorkflowFile and, as a *WorkflowFileError, name the file, line
// and column.
//
// # Expressions
//
// Expressions see an Env: the run's vars, settings, the previous phase's
// results (ResultView), the task, step and phase, the entries, usage and
// limits, and the function history(type). A workflow's Settings lists
// every settings key its file reads, so that configs.SettingsWarnings can
// flag keys no one reads.
//
// # Caveats
//
// Expressions are bounded in size and length, not in evaluation time;
// they run on the run's goroutine like any phase. A file cannot reach the
// network or the disk except through the operations it emits.
package declarative
