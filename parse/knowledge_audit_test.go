package parse

import "testing"

// TestClassifyAuditedOptions covers options that were on harmless lists
// although their value names a file or program the tool reads, runs or
// writes (issue 15 item 5), and the ordinary forms beside them.
func TestClassifyAuditedOptions(t *testing.T) {
	t.Parallel()
	runCases(t, []classifyCase{
		{name: "grep-recursive-plain", cmd: "grep -rn x src", known: true, mut: "read", paths: "read src r"},
		{name: "grep-directories-recurse", cmd: "grep -d recurse x src", known: true, paths: "read src r"},
		{name: "grep-directories-abbrev", cmd: "grep --direc=recurse x src", known: true, paths: "read src r"},
		{name: "tree-R", cmd: "tree -R -L 2 -H . .", known: false, why: "tree -R"},
		{name: "tree-infofile", cmd: "tree --infofile /etc/shadow .", known: true, paths: "read /etc/shadow; read . r"},
		{name: "fd-base-directory", cmd: "fd --base-directory /root x", known: false, why: "base-directory"},
		{name: "journalctl-unit", cmd: "journalctl -u nginx -n 50", known: true, mut: "read"},
		{name: "journalctl-cursor-file", cmd: "journalctl --cursor-file=c.txt", known: true, paths: "update c.txt"},
		{name: "journalctl-file-glob", cmd: "journalctl --file='/home/*/x.journal'", known: false, why: "--file"},
		{name: "journalctl-root", cmd: "journalctl --root=/mnt", known: false, why: "--root"},
		{name: "journalctl-directory", cmd: "journalctl -D /var/log/journal", known: true, paths: "read /var/log/journal"},
		{name: "ss-diag", cmd: "ss -D out.bin -t", known: true, paths: "overwrite out.bin"},
		{name: "ss-filter-file", cmd: "ss -F f.txt", known: true, paths: "read f.txt"},
		{name: "pgrep-pidfile", cmd: "pgrep -F /run/x.pid", known: true, paths: "read /run/x.pid"},
		{name: "systemctl-host", cmd: "systemctl status -H user@host nginx", known: true, net: "internet"},
		{name: "pip-list", cmd: "pip list", known: true, mut: "read"},
		{name: "pip-list-python", cmd: "pip list --python ./venv/bin/python", known: false, why: "pip --python"},
		{name: "pip-list-log", cmd: "pip list --log /tmp/x", known: true, paths: "update /tmp/x"},
		{name: "goimports-runs-go", cmd: "goimports -l .", known: true, code: "y", net: "internet"},
		{name: "file-files-from", cmd: "file -f list.txt", known: false, why: "file -f"},
		{name: "file-plain", cmd: "file README.md", known: true, mut: "read", paths: "read README.md"},
		{name: "date-format", cmd: "date +%Y-%m-%d", known: true, mut: "read", paths: "-"},
		{name: "date-plain", cmd: "date -u", known: true, mut: "read"},
		{name: "date-sets-clock", cmd: "date 010100002030", known: false, why: "sets the clock"},
		{name: "lastlog-read", cmd: "lastlog -u root", known: true, mut: "read"},
		{name: "lastlog-clear", cmd: "lastlog -C -u root", known: false, why: "lastlog -C"},
		{name: "who-plain", cmd: "who", known: true, mut: "read", paths: "-"},
		{name: "who-am-i", cmd: "who am i", known: true, mut: "read"},
		{name: "who-file", cmd: "who /root/.aws/credentials", known: true, paths: "read /root/.aws/credentials"},
		{name: "last-file", cmd: "last -f /etc/shadow", known: true, paths: "read /etc/shadow"},
		{name: "last-count", cmd: "last -5", known: true, paths: "-"},
		{name: "findmnt-tab-file", cmd: "findmnt -F /etc/shadow", known: true, paths: "read /etc/shadow"},
		{name: "findmnt-plain", cmd: "findmnt -no SOURCE /", known: true, mut: "read"},
		{name: "lscpu-sysroot", cmd: "lscpu -s /x", known: false, why: "sysroot"},
		{name: "lsblk-plain", cmd: "lsblk -f", known: true, mut: "read"},
		{name: "lspci-verbose", cmd: "lspci -vvnn", known: true, mut: "read", paths: "-"},
		{name: "lspci-dump-file", cmd: "lspci -F /etc/shadow", known: true, paths: "read /etc/shadow"},
		{name: "lspci-direct", cmd: "lspci -H1", known: false, why: "lspci -H"},
		{name: "lsusb-device", cmd: "lsusb -D /dev/bus/usb/001/001", known: true, paths: "read /dev/bus/usb/001/001"},
		{name: "lslogins-wtmp", cmd: "lslogins --wtmp-file /etc/shadow", known: true, paths: "read /etc/shadow"},
	})
}
