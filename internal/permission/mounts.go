package permission

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/toolpath"
)

// mount is one line of /proc/self/mountinfo: which part (root) of which filesystem (dev) is
// mounted where (point).
type mount struct{ dev, root, point string }

// readMounts reads this process's mount table; nil where there is none to read (other
// systems).
func readMounts() []mount {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return parseMountinfo(string(data))
}

func parseMountinfo(s string) []mount {
	var out []mount
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		out = append(out, mount{dev: f[2], root: unescapeMount(f[3]), point: unescapeMount(f[4])})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 is a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			var v byte
			ok := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					ok = false
				}
				v = v*8 + c - '0'
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// aliasesIn returns the other paths under which p is mounted: where the same part of the
// same filesystem is mounted again (a bind mount).
func aliasesIn(mounts []mount, p string) []string {
	var m *mount
	for i := range mounts {
		if toolpath.Within(p, mounts[i].point) && (m == nil || len(mounts[i].point) >= len(m.point)) {
			m = &mounts[i]
		}
	}
	if m == nil {
		return nil
	}
	rel, err := filepath.Rel(m.point, p)
	if err != nil {
		return nil
	}
	src := filepath.Join(m.root, rel)
	var out []string
	for _, n := range mounts {
		if n.dev != m.dev || n.point == m.point || !toolpath.Within(src, n.root) {
			continue
		}
		r, err := filepath.Rel(n.root, src)
		if err != nil {
			continue
		}
		if a := filepath.Join(n.point, r); a != p {
			out = append(out, a)
		}
	}
	return out
}
