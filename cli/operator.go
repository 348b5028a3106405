package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"

	"github.com/flockrun/flock/configs"
)

// isolationFlag registers --isolation, the operator's isolation of the
// programs flock starts (configs.Server.Isolation).
func isolationFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "isolation", "", "isolation of the programs flock starts (bash, python, external agents, sandbox sessions): auto (default: bwrap where it can run), bwrap (refuse to start without it) or none (opt out)")
}

// tokenFlags are --auth-token and --auth-token-file.
type tokenFlags struct {
	value, file string
}

// files lists the token files the flags and the environment name.
func (t *tokenFlags) files() []string {
	return []string{t.file, os.Getenv("FLOCK_AUTH_TOKEN_FILE")}
}

func (t *tokenFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.value, "auth-token", "", "bearer token, at least 16 bytes, required on every route but /health (env FLOCK_AUTH_TOKEN); on the command line every process of the machine can read it, so prefer --auth-token-file")
	fs.StringVar(&t.file, "auth-token-file", "", "file holding the bearer token, readable by its owner only (mode 0600) (env FLOCK_AUTH_TOKEN_FILE)")
}

// registerClient registers --token and --token-file, the token a client
// command sends to a flock server.
func (t *tokenFlags) registerClient(fs *flag.FlagSet) {
	fs.StringVar(&t.value, "token", "", "bearer token (env FLOCK_AUTH_TOKEN)")
	fs.StringVar(&t.file, "token-file", "", "file holding the bearer token, readable by its owner only (mode 0600) (env FLOCK_AUTH_TOKEN_FILE)")
}

// resolve returns the auth token: from --auth-token or --auth-token-file
// (not both), else fromFile (the --config file's auth_token_env or
// auth_token_file), else the environment (FLOCK_AUTH_TOKEN_FILE or
// FLOCK_AUTH_TOKEN, not both). A token on the command line is warned about
// on warn.
func (t *tokenFlags) resolve(fromFile string, warn notices) (string, error) {
	switch {
	case t.value != "" && t.file != "":
		return "", fmt.Errorf("%w: both a token and a token file are given (--auth-token and --auth-token-file, or --token and --token-file); keep one", errUsage)
	case t.value != "":
		warn.warn("flock", []string{"--auth-token puts the token on the command line, where every process of this machine can read it (ps); use --auth-token-file or FLOCK_AUTH_TOKEN_FILE"})
		return t.value, nil
	case t.file != "":
		return configs.ReadTokenFile(t.file)
	case fromFile != "":
		return fromFile, nil
	}
	env, file := os.Getenv("FLOCK_AUTH_TOKEN"), os.Getenv("FLOCK_AUTH_TOKEN_FILE")
	switch {
	case env != "" && file != "":
		return "", fmt.Errorf("%w: FLOCK_AUTH_TOKEN and FLOCK_AUTH_TOKEN_FILE are both set; keep one", errUsage)
	case file != "":
		tok, err := configs.ReadTokenFile(file)
		if err != nil {
			return "", fmt.Errorf("FLOCK_AUTH_TOKEN_FILE: %w", err)
		}
		return tok, nil
	}
	return env, nil
}

// operatorGrants adds to cfg what a settings document the person at the
// terminal handed over names (at any depth, so a rollout's agent settings
// count): the hosts of its sandbox_url and sandbox_server_url
// (sandbox_url_allow_hosts), its sandbox_token_env (sandbox_token_envs) and
// its pass_env variables (pass_env). With inProcess (flock run, rollout,
// synthesize: every run is the file's), an isolation.kind "none" in it is
// the operator's opt-out (isolation: none) unless --isolation was given.
func operatorGrants(cfg *configs.Server, doc any, inProcess bool) {
	add := func(list *[]string, v string) {
		if v != "" && !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				switch s, _ := x.(string); k {
				case "sandbox_url", "sandbox_server_url":
					if u, err := url.Parse(s); err == nil && u.Hostname() != "" {
						add(&cfg.SandboxURLAllowHosts, u.Hostname())
					}
				case "sandbox_token_env":
					add(&cfg.SandboxTokenEnvs, s)
				case "pass_env":
					if l, ok := x.([]any); ok {
						for _, n := range l {
							if n, ok := n.(string); ok {
								add(&cfg.PassEnv, n)
							}
						}
					}
				case "isolation":
					if m, ok := x.(map[string]any); ok && inProcess && m["kind"] == "none" && cfg.Isolation == "" {
						cfg.Isolation = "none"
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(doc)
}

// grantSettings is operatorGrants for a settings document as JSON.
func grantSettings(cfg *configs.Server, doc json.RawMessage, inProcess bool) {
	var v any
	if json.Unmarshal(doc, &v) == nil {
		operatorGrants(cfg, v, inProcess)
	}
}
