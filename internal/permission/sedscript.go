package permission

import "strings"

// sedScript is what a sed script does besides editing its input: the files its r, R, w, W
// commands and s///w flags name, and whether an e command or s///e runs a shell command.
type sedScript struct {
	reads, writes []string
	exec          bool
}

// parseSed reads a GNU sed script far enough to find its file and command uses. ok is false
// for anything it does not recognise, which the caller treats as unknown (and asks).
func parseSed(s string) (sc sedScript, ok bool) {
	i := 0
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	toEOL := func() string {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			j = len(s) - i
		}
		v := s[i : i+j]
		i += j
		return v
	}
	toSep := func() {
		for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
			i++
		}
	}
	// delimited skips past the next unescaped delim; false if there is none.
	delimited := func(delim byte) bool {
		for ; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case delim:
				i++
				return true
			case '\n':
				if delim != '\n' {
					return false
				}
			}
		}
		return false
	}
	address := func() bool {
		switch {
		case i < len(s) && s[i] >= '0' && s[i] <= '9':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < len(s) && s[i] == '$':
			i++
		case i < len(s) && s[i] == '/':
			i++
			if !delimited('/') {
				return false
			}
		case i+1 < len(s) && s[i] == '\\':
			d := s[i+1]
			i += 2
			if !delimited(d) {
				return false
			}
		default:
			return true
		}
		for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
			i++
		}
		return true
	}
	for i < len(s) {
		skipSpace()
		if i >= len(s) {
			break
		}
		if s[i] == ';' || s[i] == '\n' || s[i] == '}' {
			i++
			continue
		}
		if !address() {
			return sc, false
		}
		if i < len(s) && s[i] == ',' {
			i++
			if i < len(s) && (s[i] == '+' || s[i] == '~') {
				i++
			}
			if !address() {
				return sc, false
			}
		}
		skipSpace()
		for i < len(s) && s[i] == '!' {
			i++
			skipSpace()
		}
		if i >= len(s) {
			return sc, false
		}
		cmd := s[i]
		i++
		switch cmd {
		case '{', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case '#':
			toEOL()
		case ':', 'b', 't', 'T', 'v', 'l', 'q', 'Q', 'L':
			toSep()
		case 'a', 'i', 'c':
			for {
				line := toEOL()
				if !strings.HasSuffix(line, `\`) || i >= len(s) {
					break
				}
				i++
			}
		case 'r', 'R', 'w', 'W':
			skipSpace()
			name := toEOL()
			if name == "" {
				return sc, false
			}
			switch {
			case cmd == 'r' || cmd == 'R':
				sc.reads = append(sc.reads, name)
			case name != "/dev/stdout" && name != "/dev/stderr":
				sc.writes = append(sc.writes, name)
			}
		case 'e':
			sc.exec = true
			toEOL()
		case 's', 'y':
			if i >= len(s) || s[i] == '\n' || s[i] == '\\' {
				return sc, false
			}
			d := s[i]
			i++
			for range 2 { // the pattern, then the replacement
				if !delimited(d) {
					return sc, false
				}
			}
			if cmd == 'y' {
				continue
			}
			for i < len(s) {
				f := s[i]
				switch {
				case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9':
					i++
					continue
				case f == 'e':
					sc.exec = true
					i++
					continue
				case f == 'w':
					i++
					skipSpace()
					name := toEOL()
					if name == "" {
						return sc, false
					}
					if name != "/dev/stdout" && name != "/dev/stderr" {
						sc.writes = append(sc.writes, name)
					}
				}
				break
			}
		default:
			return sc, false
		}
	}
	return sc, true
}
