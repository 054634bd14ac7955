package changes

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestOverlayMounted(t *testing.T) {
	const good = `22 1 8:1 / / rw,relatime - ext4 /dev/vda rw
68 46 0:40 / /tmp/ov\040t/l rw,relatime - overlay overlay rw,lowerdir=/tmp/ov\040t/l,upperdir=/s/u,workdir=/s/w,redirect_dir=nofollow,uuid=on,userxattr`
	root, upper, work := "/tmp/ov t/l", "/s/u", "/s/w"
	for _, tc := range []struct {
		name, info string
		ok         bool
	}{
		{"narrowd's overlay", good, true},
		{"nothing mounted", "22 1 8:1 / / rw,relatime - ext4 /dev/vda rw", false},
		{"a bind mount over it afterwards", good + "\n69 68 8:1 /x /tmp/ov\\040t/l rw - ext4 /dev/vda rw", false},
		{"another upper", strings.Replace(good, "upperdir=/s/u", "upperdir=/elsewhere", 1), false},
		{"another lower", strings.Replace(good, "lowerdir=/tmp/ov\\040t/l", "lowerdir=/tmp/other", 1), false},
		{"no userxattr", strings.Replace(good, ",userxattr", "", 1), false},
		{"metacopy", good + ",metacopy=on", false},
		{"redirect_dir on", strings.Replace(good, "redirect_dir=nofollow", "redirect_dir=on", 1), false},
		{"tmpfs", strings.Replace(good, "- overlay overlay", "- tmpfs tmpfs", 1), false},
	} {
		err := OverlayMounted(tc.info, root, upper, work)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrNotMounted)) {
			t.Errorf("%s: got %v", tc.name, err)
		}
	}
}

// TestOverlayMountedReal reads the mountinfo of a real unprivileged
// overlay with a space in its paths.
func TestOverlayMountedReal(t *testing.T) {
	base := filepath.Join(t.TempDir(), "a b")
	s := setup{ws: base + "/ws", upper: base + "/u", work: base + "/w"}
	for _, d := range []string{s.ws, s.upper, s.work} {
		if err := exec.Command("mkdir", "-p", d).Run(); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("unshare", "-rm", "sh", "-c",
		`mount -t overlay overlay -o userxattr,lowerdir="$1",upperdir="$2",workdir="$3" "$1" && cat /proc/self/mountinfo`, "sh", s.ws, s.upper, s.work).CombinedOutput()
	if err != nil {
		t.Skipf("no unprivileged overlay here: %v: %s", err, out)
	}
	if err := OverlayMounted(string(out), s.ws, s.upper, s.work); err != nil {
		t.Fatal(err)
	}
	if err := OverlayMounted(string(out), s.ws, s.upper+"x", s.work); err == nil {
		t.Fatal("another upper passed")
	}
}
