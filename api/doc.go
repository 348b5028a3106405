// Package api holds the wire types of flock's HTTP API (docs/design.md): the
// JSON bodies that package server answers and package client decodes.
//
// They are views, not the storage records: the server converts the
// journal's structs (state.Run, state.Op, state.Event, record.Entry) into
// them, so the journal schema can change without breaking clients. Every
// field is part of the public contract; add fields, never rename or
// retype one. The server publishes the same types as JSON Schema in its
// OpenAPI document (GET /openapi.json), and a golden test in package
// server pins their encoding byte for byte.
//
// api imports only the standard library and record (the leaf package of
// statuses), so a client does not pull in the engine.
package api
