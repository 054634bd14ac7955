package snapshot

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// btrfsDir returns a directory on a file system that shares extents:
// $NARROWD_REFLINK_DIR when set, else a loop-mounted btrfs image made
// here (root with mkfs.btrfs and a loop device, as in CI). It skips only
// when neither is possible, and says why.
func btrfsDir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("NARROWD_REFLINK_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "snap-")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	if os.Geteuid() != 0 {
		tb.Skip("reflink needs btrfs or xfs: set NARROWD_REFLINK_DIR, or run as root to loop-mount one")
	}
	mkfs, err := exec.LookPath("mkfs.btrfs")
	if err != nil {
		tb.Skip("reflink needs btrfs or xfs: mkfs.btrfs is not installed (apt-get install btrfs-progs)")
	}
	img := filepath.Join(tb.TempDir(), "btrfs.img")
	mnt := filepath.Join(tb.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		tb.Fatal(err)
	}
	steps := [][]string{{"truncate", "-s", "2G", img}, {mkfs, "-q", img}, {"mount", "-o", "loop", img, mnt}}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			tb.Skipf("cannot make a btrfs to test reflink on (%s: %v: %s)", s[0], err, out)
		}
	}
	tb.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			tb.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// TestReflinkOnBtrfs: with the store on the workspace's btrfs, the copy
// is a reflink, an in-place overwrite of the original leaves it intact,
// and undo restores the bytes; with the store elsewhere it is a copy.
func TestReflinkOnBtrfs(t *testing.T) {
	base := btrfsDir(t)
	for _, tc := range []struct {
		name    string
		store   string
		reflink bool
	}{
		{"store on the same btrfs", filepath.Join(base, "state"), true},
		{"store on another file system", filepath.Join(t.TempDir(), "state"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, err := os.MkdirTemp(base, "ws-")
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(tc.store, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			orig := randomBytes(t, 1<<20)
			p := filepath.Join(ws, "data.bin")
			if err := os.WriteFile(p, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			id := NewID()
			snap, err := s.Take(id, []Target{{Root: ws, Path: p}})
			if err != nil {
				t.Fatal(err)
			}
			if snap.Files[0].Reflink != tc.reflink {
				t.Errorf("Reflink = %v, want %v", snap.Files[0].Reflink, tc.reflink)
			}
			// Overwrite in place, as dd conv=notrunc does: the extents
			// the clone shares must not change under it.
			fh, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fh.WriteAt(bytes.Repeat([]byte{'x'}, 4096), 0)
			fh.Close()
			if _, err := s.Restore(id, false); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(p)
			if !bytes.Equal(got, orig) {
				t.Error("restored bytes differ from the original")
			}
		})
	}
}

// writeSynced writes a file and flushes it, as a workspace file long on
// disk is: a reflink of dirty pages would first write them back.
func writeSynced(p string, data []byte) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// BenchmarkTake measures the cost of preserving one file, per MB, with a
// copy (the temp directory's file system, ext4 here) and with a reflink
// (a btrfs, see btrfsDir), of a file already on disk. Hashing the copy
// and the fsyncs are included: it is what a snapshot costs the call. Not
// run by CI:
//
//	go test -run '^$' -bench Take -benchtime 20x ./sandbox/snapshot
func BenchmarkTake(b *testing.B) {
	for _, fs := range []string{"tmp", "btrfs"} {
		for _, mb := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/%dMiB", fs, mb), func(b *testing.B) {
				base := b.TempDir()
				if fs == "btrfs" {
					base = btrfsDir(b)
				}
				ws, err := os.MkdirTemp(base, "ws-")
				if err != nil {
					b.Fatal(err)
				}
				s, err := Open(filepath.Join(base, "state-"+filepath.Base(ws)), Budget{MaxFileBytes: 1 << 30, MaxCallBytes: 1 << 30})
				if err != nil {
					b.Fatal(err)
				}
				p := filepath.Join(ws, "data.bin")
				data := randomBytes(b, mb<<20)
				reflinks := 0
				b.SetBytes(int64(len(data)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					// New bytes each time, so dedup never skips the
					// work.
					data[0], data[1], data[2] = byte(i), byte(i>>8), byte(i>>16)
					if err := writeSynced(p, data); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					snap, err := s.Take(NewID(), []Target{{Root: ws, Path: p}})
					if err != nil {
						b.Fatal(err)
					}
					if snap.Files[0].Reflink {
						reflinks++
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(mb), "ns/MiB")
				b.ReportMetric(float64(reflinks)/float64(b.N), "reflink/op")
				s.Prune(0, 1)
			})
		}
	}
}
