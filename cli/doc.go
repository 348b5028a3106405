// Package cli is flock's command line: a small dispatcher over the standard
// flag package.
//
//	flock serve [--addr] [--data DIR] [--mode live|simulated] [--plugins DIR] [--workflows DIR]
//	flock run --workflow NAME --settings FILE [--task TEXT]
//	flock rollout --config FILE
//	flock --workflow NAME --settings FILE [--task TEXT]   (serve and start that workflow)
//	flock version
package cli
