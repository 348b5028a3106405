// Package testserver is a tiny MCP stdio server for the mcp backend's tests: the test
// binary re-executes itself in server mode (see Main) so that tests drive real
// processes speaking MCP over real pipes.
//
// Tools: add {a, b} (structured {sum}), write_note {text} (writes note.txt in the
// server's cwd), read_note {}, fail {message} (an isError result), crash {} (the
// process exits mid-call), spawn_child {} (starts a long sleep in the server's process
// group and answers its pid), hang {} (blocks until cancelled), env {name} (one variable of the server's environment).
package testserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ModeVar selects the server mode of a re-executed test binary: "serve" runs the
// server on stdin/stdout, "exit" writes every configured variable to stderr and exits 3
// before the handshake (a server that fails to start), "discovery-only" serves when its cwd
// is the backend's discovery dir and exits like "exit" elsewhere.
const ModeVar = "FLOCK_MCP_TESTSERVER"

// Main runs the server mode named by ModeVar and exits; it returns when the variable is
// unset, so TestMain calls it first.
func Main() {
	switch os.Getenv(ModeVar) {
	case "":
		return
	case "serve":
		if err := Run(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "testserver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "discovery-only":
		if wd, _ := os.Getwd(); strings.Contains(wd, string(filepath.Separator)+"discovery"+string(filepath.Separator)) {
			if err := Run(context.Background()); err != nil {
				os.Exit(1)
			}
			os.Exit(0)
		}
		fallthrough
	case "exit":
		fmt.Fprintln(os.Stderr, "testserver: refusing to start; env:", strings.Join(os.Environ(), " "))
		os.Exit(3)
	default:
		fmt.Fprintln(os.Stderr, "testserver: unknown mode")
		os.Exit(2)
	}
}

type addIn struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type noteIn struct {
	Text string `json:"text" jsonschema:"the note's text"`
}

type failIn struct {
	Message string `json:"message"`
}

type envIn struct {
	Name string `json:"name"`
}

type empty struct{}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// Run serves the test tools over stdin/stdout until stdin closes.
func Run(ctx context.Context) error {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write_note", Description: "Write note.txt in the working directory."},
		func(_ context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
			if err := os.WriteFile("note.txt", []byte(in.Text), 0o644); err != nil {
				return nil, nil, err
			}
			wd, _ := os.Getwd()
			return text("wrote " + filepath.Join(wd, "note.txt")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "read_note", Description: "Read note.txt from the working directory."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile("note.txt")
			if err != nil {
				return nil, nil, errors.New("no note here")
			}
			return text(string(b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Report a tool error."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New(in.Message)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server mid-call."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "testserver: crashing on purpose")
			os.Exit(7)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "spawn_child", Description: "Start a long-running child process."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			// Not in a goroutine-owned Wait: the child outlives the call on purpose, to
			// show that the backend kills the whole process group.
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprint(cmd.Process.Pid)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Block until the call is cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "One variable of the server's environment."},
		func(_ context.Context, _ *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, any, error) {
			return text(os.Getenv(in.Name)), nil, nil
		})
	return s.Run(ctx, &mcp.StdioTransport{})
}
