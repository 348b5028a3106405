// Package testkit holds flock's test support: polling with a deadline in
// place of bare sleeps, a log buffer safe for concurrent writers, the
// marker files of crash tests (MarkerCommand, CheckRanOnce, CountLines),
// Alive for the tests of what kills processes, and a throwaway
// certificate authority for TLS tests. It imports only the standard
// library and small internal packages (procgroup, sparse) so that the
// tests of every other package, state's own included, can use it; opening
// a real store for a test is in the subpackage teststore, opening a whole
// App in testapp, a sandbox service (and serving it) in testsandbox,
// starting an executor and a run and waiting for its end in testrun.
//
// # Polling
//
// WaitFor polls a condition until it holds, failing the test (naming what
// it waited for) when DefaultTimeout passes; WaitWithin takes its own
// deadline; CheckFor polls a function returning an error and fails with the
// last one, so a timeout says why the condition still did not hold. Polls
// start at 1 ms and back off to 20 ms, so a condition that holds at once
// costs nothing and a slow one does not spin.
//
// # Buffers
//
// Buffer is the sink a test hands to what writes on other goroutines (a
// server's or an executor's logger, a command's stdout, a child process)
// and reads while they still run.
//
// # Servers
//
// Serve starts flock's API server or the sandbox's on its configured
// address and shuts it down when the test ends.
//
// # Certificates
//
// NewCA makes a certificate authority for one test and Issue signs
// certificates for hosts with it (TLS tests of the cluster's NATS ports);
// the keys live in the test's temporary directory, never in the tree.
//
// # Slow clients
//
// Trickle is an HTTP client that sends a request's head and then one byte
// every 50 ms, for the tests of the listeners' header and body timeouts.
//
// # Caveats
//
// The helpers call tb.Fatalf, so they must run on the test's goroutine.
package testkit
