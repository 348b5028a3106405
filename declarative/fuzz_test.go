package declarative_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/declarative"
)

// FuzzLoadWorkflow checks that the loader never panics (ParseWorkflow turns
// panics into "internal error") and that every error names the file and a
// line.
func FuzzLoadWorkflow(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(examplesDir, "*"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, tt := range brokenFiles {
		f.Add([]byte(tt.src))
	}
	f.Add([]byte(`{"name": "j", "phases": [{"name": "a", "set": {"x": "1"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		wf, err := declarative.ParseWorkflow("fuzz.yaml", data)
		if err == nil {
			if err := wf.Validate(); err != nil {
				t.Fatalf("loaded an invalid workflow: %v", err)
			}
			_ = wf.Graph()
			return
		}
		var fe *declarative.WorkflowFileError
		if !errors.As(err, &fe) {
			t.Fatalf("error %T is not a *WorkflowFileError: %v", err, err)
		}
		if fe.File != "fuzz.yaml" || fe.Line < 1 || !strings.HasPrefix(err.Error(), "fuzz.yaml:") {
			t.Fatalf("error does not name file and line: %v", err)
		}
		if strings.Contains(fe.Msg, "internal error") {
			t.Fatalf("loader panicked: %v", err)
		}
	})
}
