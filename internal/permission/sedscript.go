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
	p := &sedParser{s: s}
	for p.i < len(s) {
		p.skipSpace()
		if p.i >= len(s) {
			break
		}
		if s[p.i] == ';' || s[p.i] == '\n' || s[p.i] == '}' {
			p.i++
			continue
		}
		if !p.addresses() {
			return p.sc, false
		}
		cmd := s[p.i]
		p.i++
		if !p.command(cmd) {
			return p.sc, false
		}
	}
	return p.sc, true
}

// sedParser is parseSed's position in the script s and what it has found.
type sedParser struct {
	s  string
	i  int
	sc sedScript
}

func (p *sedParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sedParser) toEOL() string {
	j := strings.IndexByte(p.s[p.i:], '\n')
	if j < 0 {
		j = len(p.s) - p.i
	}
	v := p.s[p.i : p.i+j]
	p.i += j
	return v
}

func (p *sedParser) toSep() {
	for p.i < len(p.s) && p.s[p.i] != ';' && p.s[p.i] != '\n' && p.s[p.i] != '}' {
		p.i++
	}
}

// delimited skips past the next unescaped delim; false if there is none.
func (p *sedParser) delimited(delim byte) bool {
	s := p.s
	for ; p.i < len(s); p.i++ {
		switch s[p.i] {
		case '\\':
			p.i++
		case delim:
			p.i++
			return true
		case '\n':
			if delim != '\n' {
				return false
			}
		}
	}
	return false
}

func (p *sedParser) address() bool {
	s := p.s
	switch {
	case p.i < len(s) && s[p.i] >= '0' && s[p.i] <= '9':
		for p.i < len(s) && (s[p.i] >= '0' && s[p.i] <= '9' || s[p.i] == '~') {
			p.i++
		}
	case p.i < len(s) && s[p.i] == '$':
		p.i++
	case p.i < len(s) && s[p.i] == '/':
		p.i++
		if !p.delimited('/') {
			return false
		}
	case p.i+1 < len(s) && s[p.i] == '\\':
		d := s[p.i+1]
		p.i += 2
		if !p.delimited(d) {
			return false
		}
	default:
		return true
	}
	for p.i < len(s) && (s[p.i] == 'I' || s[p.i] == 'M') {
		p.i++
	}
	return true
}

// addresses reads a command's address or range and its negations, up to the command letter;
// false when the script ends there or an address does not parse.
func (p *sedParser) addresses() bool {
	s := p.s
	if !p.address() {
		return false
	}
	if p.i < len(s) && s[p.i] == ',' {
		p.i++
		if p.i < len(s) && (s[p.i] == '+' || s[p.i] == '~') {
			p.i++
		}
		if !p.address() {
			return false
		}
	}
	p.skipSpace()
	for p.i < len(s) && s[p.i] == '!' {
		p.i++
		p.skipSpace()
	}
	return p.i < len(s)
}

// command reads what follows command letter cmd; false for a command it does not recognise.
func (p *sedParser) command(cmd byte) bool {
	switch cmd {
	case '{', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
	case '#':
		p.toEOL()
	case ':', 'b', 't', 'T', 'v', 'l', 'q', 'Q', 'L':
		p.toSep()
	case 'a', 'i', 'c':
		for {
			line := p.toEOL()
			if !strings.HasSuffix(line, `\`) || p.i >= len(p.s) {
				break
			}
			p.i++
		}
	case 'r', 'R', 'w', 'W':
		p.skipSpace()
		name := p.toEOL()
		if name == "" {
			return false
		}
		switch {
		case cmd == 'r' || cmd == 'R':
			p.sc.reads = append(p.sc.reads, name)
		case name != "/dev/stdout" && name != "/dev/stderr":
			p.sc.writes = append(p.sc.writes, name)
		}
	case 'e':
		p.sc.exec = true
		p.toEOL()
	case 's', 'y':
		return p.substitute(cmd)
	default:
		return false
	}
	return true
}

// substitute reads an s or y command after its letter: the delimited pattern and
// replacement, and for s its flags (e runs the pattern space, w writes a file).
func (p *sedParser) substitute(cmd byte) bool {
	s := p.s
	if p.i >= len(s) || s[p.i] == '\n' || s[p.i] == '\\' {
		return false
	}
	d := s[p.i]
	p.i++
	for range 2 { // the pattern, then the replacement
		if !p.delimited(d) {
			return false
		}
	}
	if cmd == 'y' {
		return true
	}
	for p.i < len(s) {
		f := s[p.i]
		switch {
		case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9':
			p.i++
			continue
		case f == 'e':
			p.sc.exec = true
			p.i++
			continue
		case f == 'w':
			p.i++
			p.skipSpace()
			name := p.toEOL()
			if name == "" {
				return false
			}
			if name != "/dev/stdout" && name != "/dev/stderr" {
				p.sc.writes = append(p.sc.writes, name)
			}
		}
		break
	}
	return true
}
