package all_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/flockrun/flock/sandbox"
	_ "github.com/flockrun/flock/sandbox/all"
)

// sqliteFile creates a small SQLite database for text2sql's section.
func sqliteFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.sqlite")
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t (a INTEGER)"); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigNumbersValidatedAtLoad is the attack of issue 23.7: a number
// that passes a "positive" check but rounds to a zero duration
// ("cleanup_interval": 1e-10 made the sweeper's NewTicker panic), one that
// overflows a duration (1e300 s becomes negative), a negative one, a
// fraction where a count is wanted and a string. Every duration and
// number setting of the server section and of each backend is refused at
// load with an error naming its JSON path; nothing panics.
func TestConfigNumbersValidatedAtLoad(t *testing.T) {
	dbPath := sqliteFile(t)
	docs := t.TempDir()
	// sections place each backend's base config; %s is the setting.
	sections := map[string]string{
		"server":   `{"server":{%s}}`,
		"bash":     `{"resources":{"bash":{"config":{%s}}}}`,
		"code":     `{"resources":{"code":{"config":{%s}}}}`,
		"mcp":      `{"resources":{"mcp":{"config":{"servers":{"x":{"command":"true"}},%s}}}}`,
		"vm":       `{"resources":{"vm":{"config":{%s}}}}`,
		"browser":  `{"resources":{"browser":{"config":{%s}}}}`,
		"text2sql": fmt.Sprintf(`{"apis":{"text2sql":{"databases":{"d":%q},%%s}}}`, dbPath),
		"web":      `{"apis":{"web":{"serper_api_key":"k",%s}}}`,
		"rag":      fmt.Sprintf(`{"apis":{"rag":{"documents_dir":%q,%%s}}}`, docs),
		"doc":      fmt.Sprintf(`{"apis":{"doc":{"documents_dir":%q,%%s}}}`, docs),
	}
	durations := map[string][]string{
		"server":   {"session_ttl", "cleanup_interval", "default_timeout", "header_timeout_s", "body_timeout_s"},
		"bash":     {"timeout"},
		"code":     {"timeout"},
		"mcp":      {"startup_timeout_s"},
		"vm":       {"start_timeout_s"},
		"browser":  {"action_timeout_s", "start_timeout_s"},
		"text2sql": {"query_timeout_s"},
		"web":      {"timeout_s"},
	}
	counts := map[string][]string{
		"server": {"max_workspace_bytes"},
		"bash":   {"output_limit"},
		"code":   {"output_limit", "max_file_size"},
		"web":    {"max_results", "content_limit", "parallel", "cache_ttl_s"},
		"rag":    {"default_top_k", "max_top_k", "passage_chars"},
		"doc":    {"max_search_results", "max_text_token"},
	}
	path := func(backend, key string) string {
		switch {
		case backend == "server":
			return "server." + key
		case strings.HasPrefix(sections[backend], `{"apis"`):
			return "apis." + backend + "." + key
		}
		return "resources." + backend + ".config." + key
	}
	load := func(doc string) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		cfg, err := sandbox.ParseConfig([]byte(doc), func(string) (string, bool) { return "", false })
		if err != nil {
			return err
		}
		svc, err := sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: t.TempDir()})
		if err != nil {
			return err
		}
		return svc.Close(context.Background())
	}
	check := func(backend, key, value string) {
		t.Helper()
		doc := fmt.Sprintf(sections[backend], fmt.Sprintf("%q:%s", key, value))
		err := load(doc)
		want := path(backend, key)
		if err == nil || !errors.Is(err, sandbox.ErrConfig) || !strings.Contains(err.Error(), want+":") {
			t.Errorf("%s = %s: %v, want a config error naming %s", want, value, err, want)
		}
	}
	for backend, keys := range durations {
		for _, key := range keys {
			for _, v := range []string{"1e-10", "0", "-1", "1e12", "1e300", `"soon"`} {
				check(backend, key, v)
			}
		}
	}
	for backend, keys := range counts {
		for _, key := range keys {
			for _, v := range []string{"1.5", "-1", "1e300", `"many"`} {
				check(backend, key, v)
			}
		}
	}
}
