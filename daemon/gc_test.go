package daemon

import (
	"os"
	"runtime/debug"
	"testing"
)

// A serving daemon sets its GC target and soft memory limit, unless the
// environment names its own.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	tests := []struct {
		name             string
		env              map[string]string
		percent, limit   int
		wantPct, wantLim int64
	}{
		{"defaults", nil, 100, 1 << 40, serveGCPercent, serveMemoryLimit},
		{"GOGC set", map[string]string{"GOGC": "150"}, 150, 1 << 40, 150, serveMemoryLimit},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, 100, 1 << 30, serveGCPercent, 1 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
				v, ok := tt.env[k]
				t.Setenv(k, v) // restored after the test
				if !ok {
					os.Unsetenv(k)
				}
			}
			debug.SetGCPercent(tt.percent)
			debug.SetMemoryLimit(int64(tt.limit))
			tuneGC()
			if got := debug.SetGCPercent(-1); int64(got) != tt.wantPct {
				t.Errorf("GC percent %d, want %d", got, tt.wantPct)
			}
			if got := debug.SetMemoryLimit(-1); got != tt.wantLim {
				t.Errorf("memory limit %d, want %d", got, tt.wantLim)
			}
		})
	}
}
