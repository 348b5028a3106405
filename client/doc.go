// Package client is a small Go client of flock's HTTP API (package
// server; the routes are in server's package doc and in the OpenAPI
// document at GET /openapi.json). It speaks the view types of package api
// and pulls in nothing of the engine.
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithToken(token))
//	started, err := c.Start(ctx, api.StartRequest{Workflow: "script", Settings: settings})
//	run, err := c.Wait(ctx, started.RunID) // follows the event stream to the end
//
// Every request sends the bearer token when one is set, and every request
// with a body sends it as application/json (the server refuses anything
// else). An answer other than 2xx is an *Error carrying the status, the
// server's message and the request id; errors.Is matches it against
// ErrNotFound, ErrConflict, ErrBadRequest and ErrUnauthorized. A request
// that got no answer at all (refused, unresolvable host, dropped
// connection) is a *TransportError.
//
// Events follows GET /runs/{id}/events: it parses the Server-Sent Events
// and, when the connection drops before the run's terminal event (the
// server restarted, a proxy timed out), reconnects with Last-Event-ID so
// that no stored event is lost or repeated.
package client
