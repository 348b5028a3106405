// Package task holds the handlers that talk about the task and the run
// rather than the machine: submit, score, score_log, get_usage, get_task,
// log, action and observation.
//
// Submissions, scores and log/action/observation records become entries of
// the run's log; the executor appends them when it absorbs the results, so
// these handlers stay free of storage.
package task
