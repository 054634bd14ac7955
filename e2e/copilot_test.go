package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// copilotCacheDir is the shared $COPILOT_CACHE_HOME: the npm loader
// unpacks the client there on first start, once for every test.
func copilotCacheDir(bin string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(bin))), "copilot-cache")
}

// warmCopilot starts Copilot once so that it unpacks into the shared cache.
func warmCopilot(bin string) error {
	cmd := exec.Command(bin, "--version")
	cmd.Env = []string{"PATH=" + nodePath(), "HOME=" + filepath.Dir(copilotCacheDir(bin)), "COPILOT_CACHE_HOME=" + copilotCacheDir(bin),
		"COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false", "TERM=dumb"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, lastLines(string(out), 5))
	}
	return nil
}
