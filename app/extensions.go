package app

import (
	"fmt"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/phases"
)

// LoadExtensions registers the workflows of cfg's plugin and workflow
// directories into reg.
func LoadExtensions(reg *phases.Registry, cfg configs.Server) error {
	if len(cfg.PluginDirs) > 0 || len(cfg.WorkflowDirs) > 0 {
		return fmt.Errorf("--plugins and --workflows are not available in this build yet")
	}
	return nil
}
